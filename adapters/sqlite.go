package adapters

import (
	"bytes"
	"fmt"
	"time"

	"zombiezen.com/go/sqlite"
)

// sqliteBusyWait is how long a read of an agent's database waits while the
// agent holds it locked (a checkpoint, or a write to a database not in WAL
// mode).
const sqliteBusyWait = 2 * time.Second

// OpenSQLite opens an agent's SQLite database read-only (opencode's,
// Crush's). The agents keep them in WAL mode, where a reader never blocks
// their writes; an adapter reads each session in one short transaction,
// so a checkpoint is held back no longer. Only a regular file is opened
// (Open).
func OpenSQLite(path string) (*sqlite.Conn, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	f.Close()
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadOnly)
	if err != nil {
		return nil, fmt.Errorf("open read-only: %w", err)
	}
	conn.SetBusyTimeout(sqliteBusyWait)
	return conn, nil
}

// IsSQLite reports whether a file starts with SQLite's header, for a
// database named on the command line under another name.
func IsSQLite(path string) bool {
	f, err := Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 16)
	n, _ := f.Read(head)
	return bytes.Equal(head[:n], []byte("SQLite format 3\x00"))
}
