package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/postgres/pgtest"
)

// listening starts s.Listen and returns its signals and a wait for it to
// end; it waits until the LISTEN connection is up and has said so (the
// call for what came before it).
func listening(t *testing.T, ctx context.Context, s *Store) (<-chan struct{}, <-chan error) {
	t.Helper()
	pokes := make(chan struct{}, 100)
	done := make(chan error, 1)
	go func() { done <- s.Listen(ctx, func() { pokes <- struct{}{} }) }()
	waitListener(t, s, 1)
	wantPoke(t, pokes, "LISTEN in place")
	return pokes, done
}

// A write that commits before Listen is in place is not lost: Listen calls
// once when it starts listening, so the caller reads what changed (a
// server process starting while others push).
func TestListenStartsWithACall(t *testing.T) {
	dsn := pgtest.DSN(t)
	writer, reader := mustOpenDSN(t, dsn), mustOpenDSN(t, dsn)
	mustApply(t, writer, gen("before", 0, 10))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pokes := make(chan struct{}, 100)
	go reader.Listen(ctx, func() { pokes <- struct{}{} })
	wantPoke(t, pokes, "Listen starting after a push")
	wantQuiet(t, pokes, "the start")
}

// waitListener waits until n connections listen (pg_stat_activity).
func waitListener(t *testing.T, s *Store, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var got int
		err := s.pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = $1 AND query LIKE 'LISTEN%'`, listenName).Scan(&got)
		if err != nil {
			t.Fatal(err)
		}
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d listening connections after 10 s; want %d", got, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func wantPoke(t *testing.T, pokes <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-pokes:
	case <-time.After(5 * time.Second):
		t.Fatalf("no notification within 5 s of %s", what)
	}
}

func wantQuiet(t *testing.T, pokes <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-pokes:
		t.Fatalf("a notification after %s, which wrote nothing", what)
	case <-time.After(300 * time.Millisecond):
	}
}

// A write through one server process reaches the Listen of another; a
// write that changes nothing, or fails, sends nothing.
func TestListenAcrossProcesses(t *testing.T) {
	dsn := pgtest.DSN(t)
	writer, reader := mustOpenDSN(t, dsn), mustOpenDSN(t, dsn)
	ctx, cancel := context.WithCancel(context.Background())
	pokes, done := listening(t, ctx, reader)
	bg := context.Background()

	mustApply(t, writer, gen("a", 0, 10))
	wantPoke(t, pokes, "a push")
	mustApply(t, writer, gen("a", 0, 10))
	wantQuiet(t, pokes, "the same push again")
	if _, err := writer.Apply(bg, gen("a", 30, 2)); err != nil {
		t.Fatal(err)
	}
	wantPoke(t, pokes, "a second push")
	if _, err := writer.Apply(bg, func() *store.Batch { b := gen("a", 31, 2); b.Steps[0].TurnID = "nope"; return b }()); err == nil {
		t.Fatal("Apply(bad reference) = nil; want an error")
	}
	wantQuiet(t, pokes, "a refused push")
	if err := writer.SetVerdict(bg, "a", store.Verdict{State: "approved"}); err != nil {
		t.Fatal(err)
	}
	wantPoke(t, pokes, "a verdict")
	if _, err := writer.AddNote(bg, "a", store.NoteInput{Seq: 2, Author: "Ann", Text: "hm"}); err != nil {
		t.Fatal(err)
	}
	wantPoke(t, pokes, "a note")
	if err := writer.Delete(bg, "a"); err != nil {
		t.Fatal(err)
	}
	wantPoke(t, pokes, "a delete")

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Listen after its context ended = %v; want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Listen still runs 5 s after its context ended")
	}
}

// Listen comes back after its connection is dropped, says so once (what
// was sent meanwhile is lost), and hears later writes again.
func TestListenReconnects(t *testing.T) {
	dsn := pgtest.DSN(t)
	writer, reader := mustOpenDSN(t, dsn), mustOpenDSN(t, dsn)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pokes, _ := listening(t, ctx, reader)

	var killed int
	err := writer.pool.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
		FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`, listenName).Scan(&killed)
	if err != nil || killed != 1 {
		t.Fatalf("terminated %d listening connections, %v; want 1", killed, err)
	}
	wantPoke(t, pokes, "the reconnect")
	waitListener(t, writer, 1)
	mustApply(t, writer, gen("a", 0, 10))
	wantPoke(t, pokes, "a push after the reconnect")
	wantQuiet(t, pokes, "the one push")
}
