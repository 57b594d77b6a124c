package store

import (
	"maps"
	"slices"
	"sync"

	"zombiezen.com/go/sqlite"
)

// wholeSession remembers, per session and change stamp, what Detail
// computes over all of a session's steps: the step counts and the report.
// The stamp changes with every write by any process, so a remembered value
// is never stale; a page view or live refresh of a long session that did
// not change since costs no scan of its steps. Nothing is stored on disk.
type wholeSession struct {
	mu   sync.Mutex
	byPK map[int64]wholeEntry
}

type wholeEntry struct {
	stamp   string
	summary Summary // the step counts only
	report  Report
}

// rememberedSessions bounds the memory: a few long sessions open in tabs.
const rememberedSessions = 64

// get fills the step counts of sum and the report, from memory when the
// session has not changed since they were computed.
func (w *wholeSession) get(conn *sqlite.Conn, pk int64, stamp string, sum *Summary, report *Report) error {
	w.mu.Lock()
	e, ok := w.byPK[pk]
	w.mu.Unlock()
	if !ok || e.stamp != stamp {
		e = wholeEntry{stamp: stamp, summary: Summary{StepsByType: map[string]int{}}}
		for _, t := range StepTypes {
			e.summary.StepsByType[t] = 0
		}
		if err := countSteps(conn, "session_pk = ?", []any{pk}, map[int64]*Summary{pk: &e.summary}); err != nil {
			return err
		}
		var err error
		if e.report, err = readReport(conn, pk); err != nil {
			return err
		}
		w.mu.Lock()
		if w.byPK == nil || len(w.byPK) >= rememberedSessions {
			w.byPK = map[int64]wholeEntry{} // simplest eviction: start over
		}
		w.byPK[pk] = e
		w.mu.Unlock()
	}
	// Callers may change what they get (the export masks it): copies.
	sum.Steps, sum.Failed, sum.ReferenceOnly, sum.Flags = e.summary.Steps, e.summary.Failed, e.summary.ReferenceOnly, e.summary.Flags
	sum.StepsByType = maps.Clone(e.summary.StepsByType)
	report.Files = slices.Clone(e.report.Files)
	report.Commands = slices.Clone(e.report.Commands)
	for i := range report.Commands {
		report.Commands[i].ExitCodes = slices.Clone(report.Commands[i].ExitCodes)
	}
	return nil
}
