package postgres

import (
	"context"
	"testing"

	"github.com/agentreview/service/store/postgres/pgtest"
)

// Two processes opening a new database together migrate it once, and a
// second Open finds it up to date.
func TestOpenMigratesOnce(t *testing.T) {
	dsn := pgtest.DSN(t)
	ctx := context.Background()
	errs := make(chan error, 2)
	stores := make(chan *Store, 2)
	for range 2 {
		go func() {
			s, err := Open(ctx, dsn)
			errs <- err
			stores <- s
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		defer (<-stores).Close()
	}
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	names, _ := migrationNames()
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != len(names) {
		t.Fatalf("schema_migrations has %d rows, want %d (one per file)", n, len(names))
	}
}
