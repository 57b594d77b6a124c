package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/storetest"
	"golang.org/x/sys/unix"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// No copy of a session's text goes to a temporary file. SQLite makes its
// temporary files (statement journals, temporary tables) in its temporary
// directory and unlinks them at once, so the test points that directory
// (process-wide) at one of its own and watches it for files made while
// sessions are imported, written, rewritten (the indexed text a write
// replaces is kept in a temporary table), searched and deleted. A delete
// wrote the pages it overwrote, deleted text included, to such a file.
func TestNoTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	setTempDir := func(dir string) {
		conn, err := sqlite.OpenConn(":memory:")
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if err := sqlitex.ExecuteTransient(conn, "PRAGMA temp_store_directory = '"+dir+"'", nil); err != nil {
			t.Fatal(err)
		}
	}
	setTempDir(dir)
	defer setTempDir("")
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE); err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	s := mustOpen(t)
	// An import's small sessions, written in one transaction with a
	// savepoint each (its statement journal held 295 MB of pages for the
	// 96 MB corpus), then a live session.
	var group []store.SessionWrite
	for _, sid := range []string{"g1", "g2", "g3"} {
		group = append(group, store.SessionWrite{Batches: []*store.Batch{storetest.Batch(sid, 0, 300)}})
	}
	if _, err := s.ApplyGroup(ctx, "claude-code", group); err != nil {
		t.Fatal(err)
	}
	for push := range 3 {
		if _, err := s.Apply(ctx, storetest.Batch("tmp", push, 400)); err != nil {
			t.Fatal(err)
		}
	}
	rewritten := storetest.Batch("tmp", 1, 400)
	for i := range rewritten.Steps {
		rewritten.Steps[i].Outcome = "failed"
		if p := &rewritten.Steps[i].Payload; p.Text != nil {
			text := *p.Text + " rewritten"
			p.Text = &text
		}
	}
	if _, err := s.Apply(ctx, rewritten); err != nil {
		t.Fatal(err)
	}
	mustSearch(t, s, "rewritten")
	// The delete gets longer than busyLimit: under the race detector,
	// SQLite runs ~20 times slower (this delete outlasted the 15 s), and
	// this test is about the files a delete makes, not its time.
	long, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := s.Delete(long, "tmp"); err != nil {
		t.Fatalf("Delete(tmp) = %v; want no error", err)
	}

	buf := make([]byte, 64*unix.SizeofInotifyEvent)
	n, err := unix.Read(fd, buf)
	if errors.Is(err, unix.EAGAIN) {
		return // no event: no file was made
	}
	if err != nil {
		t.Fatal(err)
	}
	ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[0]))
	name := strings.TrimRight(string(buf[unix.SizeofInotifyEvent:unix.SizeofInotifyEvent+int(ev.Len)]), "\x00")
	t.Errorf("SQLite made temporary files (%d bytes of events, the first %q) while a session was written and deleted; want none", n, name)
}
