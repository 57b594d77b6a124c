package store

import (
	"context"
	"time"
)

// Backend is the store contract: what every backend of the service does,
// with the same answers and the same errors. Store (SQLite) is the
// backend of every local service; store/postgres is the team server's.
// The behavioural suite in store/storetest runs against both.
type Backend interface {
	// Apply checks a batch in full (envelope, schema, references against
	// the batch plus what is stored) and writes it in one transaction.
	Apply(ctx context.Context, b *Batch) (ApplyResult, error)
	List(ctx context.Context, q ListQuery) (SessionList, error)
	Detail(ctx context.Context, id string, q DetailQuery) (SessionDetail, error)
	TurnSteps(ctx context.Context, id, turnID string, after int64, budget int) ([]Step, error)
	FileChanges(ctx context.Context, id string) ([]FileChange, error)
	// NextProblem is the seq of the first failed or flagged step after seq
	// (back: the last before it), ok false for none.
	NextProblem(ctx context.Context, id string, seq int64, back bool) (next int64, ok bool, err error)
	Image(ctx context.Context, id string, seq int64, n int) (Image, error)
	Search(ctx context.Context, q SearchQuery) (SearchResult, error)
	// UsageReports is the usage report of q.Group and of each of more, from
	// one read.
	UsageReports(ctx context.Context, q UsageQuery, more ...string) ([][]UsageRow, error)
	// Delete removes a session for good and leaves a tombstone, so it is
	// never recorded again.
	Delete(ctx context.Context, id string) error
	EndSession(ctx context.Context, id string, at time.Time) (changed bool, err error)
	SetVerdict(ctx context.Context, id string, v Verdict) error
	ClearVerdict(ctx context.Context, id string) error
	AddNote(ctx context.Context, id string, in NoteInput) (Note, error)
	EditNote(ctx context.Context, id string, noteID int64, in NoteInput) (Note, error)
	DeleteNote(ctx context.Context, id string, noteID int64) error
	// ChangesSince and LatestStamp feed the live stream: every write and
	// delete moves the store's change stamp on.
	ChangesSince(ctx context.Context, stamp int64) ([]Change, int64, error)
	LatestStamp(ctx context.Context) (int64, error)
	Close() error
}

var _ Backend = (*Store)(nil)
