// Package cputime measures the CPU time of this process, for benchmarks on
// a machine shared with other work: it moves far less with the load than
// the wall clock does, so cpu-ms/op compares runs made at different loads.
package cputime

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Used is the CPU time this process has used, user and system, from
// /proc/self/stat in ticks of 10 ms (0 where there is no /proc).
func Used() time.Duration {
	stat, err := os.ReadFile("/proc/self/stat")
	i := bytes.LastIndexByte(stat, ')')
	if err != nil || i < 0 || i+2 > len(stat) {
		return 0
	}
	f := strings.Fields(string(stat[i+2:])) // from field 3, the state
	if len(f) < 13 {
		return 0
	}
	user, _ := strconv.ParseInt(f[11], 10, 64)
	system, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(user+system) * 10 * time.Millisecond
}

// Report reports used, the CPU time of b's b.N operations, as cpu-ms/op.
func Report(b *testing.B, used time.Duration) {
	b.ReportMetric(float64(used)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}
