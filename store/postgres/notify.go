package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// listenName is the application_name of Listen's connection, so an
// operator (and a test) can tell it in pg_stat_activity.
const listenName = "service-listen"

// Reconnect waits of Listen: doubling from the first to the last.
const (
	listenRetryFirst = 100 * time.Millisecond
	listenRetryLast  = 5 * time.Second
)

// Listen calls changed for every write that commits in any server process
// on this database (each sends NOTIFY service_changes with its stamp,
// commitStamp), until ctx ends; then it returns nil. It holds one
// connection of its own with LISTEN. If that connection drops it
// reconnects, waiting 100 ms, then twice as long each time up to 5 s. Each
// time LISTEN is in place, the first time too, it calls changed once, since
// notifications sent before (while it connected, or was away) are lost:
// the caller re-reads what changed (ChangesSince).
// changed runs on Listen's goroutine and should return quickly (the live
// stream's poke).
func (s *Store) Listen(ctx context.Context, changed func()) error {
	wait := listenRetryFirst
	for {
		// It returns when the connection drops or cannot be made (or ctx
		// ends): either way, try again after wait.
		_ = s.listen(ctx, changed, func() { wait = listenRetryFirst })
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(2*wait, listenRetryLast)
	}
}

// listen connects, listens and calls changed per notification until the
// connection fails or ctx ends; connected runs once LISTEN is in place, and
// changed once then for what may have been missed before.
func (s *Store) listen(ctx context.Context, changed func(), connected func()) error {
	cfg := s.pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] = listenName
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return err
	}
	connected()
	changed()
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		changed()
	}
}
