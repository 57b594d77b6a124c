package adapters

import (
	"os"
	"runtime/debug"
	"testing"
)

// TestLimitMemory: an import runs under ImportMemoryLimit and
// ImportGCPercent, each unless its environment variable says otherwise,
// and restore puts back what was there.
func TestLimitMemory(t *testing.T) {
	limit, percent := debug.SetMemoryLimit(-1), debug.SetGCPercent(-1)
	debug.SetGCPercent(percent)
	for _, c := range []struct {
		env                  string
		wantLimit, wantGCPct bool // whether LimitMemory sets each
	}{
		{"", true, true},
		{"GOGC", true, false},
		{"GOMEMLIMIT", false, true},
	} {
		if c.env != "" {
			t.Setenv(c.env, "123")
		}
		restore := LimitMemory()
		gotLimit := debug.SetMemoryLimit(-1)
		gotPct := debug.SetGCPercent(percent)
		debug.SetGCPercent(gotPct)
		if (gotLimit == ImportMemoryLimit) != c.wantLimit || (gotPct == ImportGCPercent) != c.wantGCPct {
			t.Errorf("%s set: limit %d, GC percent %d; want the import's limit %v, its percent %v", c.env, gotLimit, gotPct, c.wantLimit, c.wantGCPct)
		}
		restore()
		if l, p := debug.SetMemoryLimit(-1), debug.SetGCPercent(percent); l != limit || p != percent {
			t.Errorf("%s set: after restore limit %d, GC percent %d; want %d and %d back", c.env, l, p, limit, percent)
		}
		os.Unsetenv(c.env)
	}
}
