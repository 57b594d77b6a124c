package store_test

import (
	"fmt"
	"path"
	"reflect"
	"strings"
	"testing"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/storetest"
)

// A command line names the files its redirections, tee and sed -i write,
// cat, head, tail, nl and sed read and rm removes, relative ones in its
// working folder as a cd moves it; what cat or tee is given as a
// here-document is what it wrote.
func TestCommandFiles(t *testing.T) {
	text := func(s string) *string { return &s }
	read := func(p string) store.CommandFile { return store.CommandFile{Path: p} }
	whole := func(p string, content *string) store.CommandFile {
		return store.CommandFile{Path: p, Write: true, Whole: true, Content: content}
	}
	edit := func(p string) store.CommandFile { return store.CommandFile{Path: p, Write: true} }
	removed := func(p string) store.CommandFile { return store.CommandFile{Path: p, Removed: true} }
	const ws = "/ws"
	for _, c := range []struct {
		line, cwd string
		want      []store.CommandFile
	}{
		// The Codex sample's file, written whole from a quoted here-document.
		{"cat <<'EOF' > /Users/philipp/dev/agentlogs/fixtures/JOKE.md\n# The Late Comedian\n\nFooter note.\nEOF", ws,
			[]store.CommandFile{whole("/Users/philipp/dev/agentlogs/fixtures/JOKE.md", text("# The Late Comedian\n\nFooter note.\n"))}},
		{"cat > notes.txt <<EOF\nplain text\nEOF", ws, []store.CommandFile{whole("/ws/notes.txt", text("plain text\n"))}},
		{"cat <<EOF > a.sh\necho $HOME\nEOF", ws, []store.CommandFile{whole("/ws/a.sh", nil)}}, // expanded: content not known
		{"tee out/b.txt <<'X'\nb\nX", ws, []store.CommandFile{whole("/ws/out/b.txt", text("b\n"))}},
		{"tee -a log.txt <<'X'\nb\nX", ws, []store.CommandFile{edit("/ws/log.txt")}},
		{"echo hi | tee c.txt", ws, []store.CommandFile{whole("/ws/c.txt", nil)}},
		{"go test ./... > test.log 2>&1", ws, []store.CommandFile{whole("/ws/test.log", nil)}},
		{"make >> build.log 2>/dev/null", ws, []store.CommandFile{edit("/ws/build.log")}},
		{"cat main.go", ws, []store.CommandFile{read("/ws/main.go")}},
		{"sed -n '1,80p' src/a.go && nl -ba src/b.go | head -n 20", ws, []store.CommandFile{read("/ws/src/a.go"), read("/ws/src/b.go")}},
		{"head -n 5 x.txt; tail -20 y.txt", "/w2", []store.CommandFile{read("/w2/x.txt"), read("/w2/y.txt")}},
		{"sed -i 's/a/b/' z.go", ws, []store.CommandFile{edit("/ws/z.go")}},
		{"sed -i.bak -e 's/a/b/' -e 's/c/d/' z.go q.go", ws, []store.CommandFile{edit("/ws/z.go"), edit("/ws/q.go")}},
		{"cat a.txt > a.txt", ws, []store.CommandFile{whole("/ws/a.txt", nil)}}, // read and written: written
		{"wc -l < in.txt", ws, []store.CommandFile{read("/ws/in.txt")}},
		{"cat ../up.txt", "", []store.CommandFile{read("../up.txt")}}, // no folder to join: the caller's to place
		// A cd moves the folder; to one the line does not name, relative
		// paths after it name nothing.
		{"cd sub && sed -n 1,5p a.go", ws, []store.CommandFile{read("/ws/sub/a.go")}},
		{"cd /abs; cat x > y", ws, []store.CommandFile{whole("/abs/y", nil), read("/abs/x")}},
		{"cd \"$D\" && cat x /etc/hosts", ws, []store.CommandFile{read("/etc/hosts")}},
		{"cd && cat x", ws, nil},
		// Removed by rm or git rm, on a line read for certain.
		{"cat a.txt && rm a.txt; git rm -q b.txt", ws, []store.CommandFile{read("/ws/a.txt"), removed("/ws/a.txt"), removed("/ws/b.txt")}},
		{"rm a.txt > /dev/null", ws, nil},
		// Nothing for certain.
		{"cat $F > \"$OUT\"", ws, nil},
		{"cat *.go", ws, nil},
		{"cat - < /dev/stdin > /dev/null", ws, nil},
		{"go test ./...", ws, nil},
		{"concatenate x; sedate y", ws, nil},
		{"if (( n > 10 )); then echo many; fi; if [[ a < b ]]; then echo less; fi", ws, nil}, // < and > that compare
		{"[[ -f a ]] && cat b > c", ws, []store.CommandFile{whole("/ws/c", nil), read("/ws/b")}},
	} {
		if got := store.CommandFiles(c.line, c.cwd); !reflect.DeepEqual(got, c.want) {
			t.Errorf("CommandFiles(%q, %q) =\n%s\nwant\n%s", c.line, c.cwd, showCommandFiles(got), showCommandFiles(c.want))
		}
	}
}

func showCommandFiles(files []store.CommandFile) string {
	s := ""
	for _, f := range files {
		content := "<nil>"
		if f.Content != nil {
			content = *f.Content
		}
		s += fmt.Sprintf("%s write=%v whole=%v removed=%v content=%q\n", f.Path, f.Write, f.Whole, f.Removed, content)
	}
	return s
}

// BenchmarkCommandFiles reads the files of every command line of the
// agents' samples, as the report does for each command step it counts
// (docs/performance.md, "Files named by commands").
func BenchmarkCommandFiles(b *testing.B) {
	type line struct{ command, cwd string }
	var lines []line
	for _, batch := range storetest.AgentSamples(b) {
		for _, st := range batch.Steps {
			if st.Type == store.TypeCommand && st.Payload.Command != nil {
				l := line{command: *st.Payload.Command}
				if st.Payload.Cwd != nil {
					l.cwd = *st.Payload.Cwd
				}
				lines = append(lines, l)
			}
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, l := range lines {
			store.CommandFiles(l.command, l.cwd)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(lines)), "ns/line")
	b.ReportMetric(float64(len(lines)), "lines")
}

// A line naming thousands of files names maxCommandFiles of them as read
// or written (each would be a row of Files touched); a removal of
// thousands is read whole, each file once.
func TestCommandFilesOfAHostileLine(t *testing.T) {
	var writes, removes strings.Builder
	writes.WriteString("cat")
	removes.WriteString("rm -f")
	for i := range 20000 {
		fmt.Fprintf(&writes, " r%d >w%d", i, i)
		fmt.Fprintf(&removes, " x%d x%d", i, i)
	}
	if got := store.CommandFiles(writes.String(), "/ws"); len(got) != 16 {
		t.Errorf("CommandFiles(a line naming 40,000 files) names %d; want 16", len(got))
	}
	got := store.CommandFiles(removes.String(), "/ws")
	if len(got) != 20000 || !got[19999].Removed || got[19999].Path != "/ws/x19999" {
		t.Errorf("CommandFiles(rm of 20,000 files, each twice) = %d files, the last %+v; want 20,000, /ws/x19999 removed", len(got), got[len(got)-1])
	}
	// In a long folder, each relative name is joined to it: the paths
	// together hold at most twice the line and its folder, and 1 KiB.
	cwd := "/" + strings.Repeat("d", 64<<10)
	for _, line := range []string{writes.String(), removes.String(), "cat a b c d e f g h i j k l m n o p"} {
		n := 0
		for _, f := range store.CommandFiles(line, cwd) {
			n += len(f.Path)
		}
		if limit := 2*(len(line)+len(cwd)) + 1024; n > limit || n == 0 {
			t.Errorf("CommandFiles(%.20q…, a folder of %d bytes): paths of %d bytes; want some, at most %d", line, len(cwd), n, limit)
		}
	}
}

// Whatever the line, the files it names are clean paths, none of them a
// device, at most maxCommandFiles read or written, their paths at most
// twice the line and its cwd and commandFilesSlack, and only a whole write
// has a content; nothing makes it panic. (cat's - for its input is
// TestCommandFiles'; a file may be named "-" as a redirection's.)
func FuzzCommandFiles(f *testing.F) {
	for _, s := range []string{"cat <<'EOF' > a.md\nx\nEOF", "cd sub && sed -n 1,5p a.go | head -n 3 > out", "tee -a log <<X\n$y\nX",
		"rm -f a b; git rm c", "cat - < /dev/stdin > /dev/null", "sed -i.bak -e s/a/b/ -- f", "cd /x; cat ../y", "cat <//dev/0 >//dev/null"} {
		f.Add(s, "/ws")
	}
	f.Fuzz(func(t *testing.T, line, cwd string) {
		named, size := 0, 0
		for _, c := range store.CommandFiles(line, cwd) {
			size += len(c.Path)
			if c.Path == "" || c.Path != path.Clean(c.Path) || strings.HasPrefix(c.Path, "/dev/") {
				t.Fatalf("CommandFiles(%q, %q) names %q", line, cwd, c.Path)
			}
			if c.Content != nil && (!c.Write || !c.Whole || c.Removed) {
				t.Fatalf("CommandFiles(%q, %q) = %+v: a content for what is not a whole write", line, cwd, c)
			}
			if !c.Removed {
				named++
			}
		}
		if named > 16 {
			t.Fatalf("CommandFiles(%q, %q) names %d files read or written; want at most 16", line, cwd, named)
		}
		if limit := 2*(len(line)+len(cwd)) + 1024; size > limit {
			t.Fatalf("CommandFiles(%q, %q) names paths of %d bytes; want at most %d", line, cwd, size, limit)
		}
	})
}
