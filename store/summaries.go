package store

import (
	"encoding/json"
	"fmt"
	"maps"
	"sync"
)

// ListSummaries remembers, in memory only, each session as List read it
// (header and summary: step counts, turns, segments, title, last step),
// and its JSON encoding as a list item (SessionList.WriteJSON), by the
// session's change stamp, so a list reads again only the sessions
// written since it last listed them: the whole list of a large store costs
// an index of the sessions table, not every step. The stamp changes with every write by
// any process and the id is checked beside the row, so a remembered
// summary is never stale. Every backend keeps one and reads through it
// with a SummaryReader of its own.
type ListSummaries struct {
	mu    sync.Mutex
	byPK  map[int64]listSummary
	bytes int
}

type listSummary struct {
	stamp int64
	o     SessionOverview
	json  []byte // json.Marshal(o); never changed once made
	bytes int
}

// Bounds of the memory listSummaries holds: about 1.7 KB a session, its
// encoding included, so the bytes bound ends the first (at ~38,000).
const (
	rememberedSummaries    = 200_000
	rememberedSummaryBytes = 64 << 20
)

// SummaryReader is what ListSummaries reads of a backend's store, all
// within one read transaction.
type SummaryReader interface {
	// ReadSessions calls found with each of the sessions with the given
	// rows, with its summary but for the step counts (left at zero).
	ReadSessions(pks []int64, found func(pk int64, o SessionOverview)) error
	// CountSteps calls add with the groups of steps (StepCount) of the
	// sessions with the given rows.
	CountSteps(pks []int64, add func(pk int64, c StepCount)) error
}

// A changedCounter is a SummaryReader that counts a session's steps again
// from partial results it keeps (the SQLite store's Tallies, whole.go),
// reading only the blocks written since: Fill uses it for a long session
// it listed before, so that each live refresh of the list costs the steps
// just written, not every step of the session. (PostgreSQL's CountSteps
// reads counts Apply keeps, already one row a group.)
type changedCounter interface {
	CountChanged(pk int64, sum *Summary) error
}

// recountFrom is the steps a session listed before must have had for Fill
// to count it through a changedCounter: a block's worth. Below it, one
// count over the covering index costs less than a block.
const recountFrom = 1 << BlockShift

// Fill sets l.Sessions[i] to each listed session (row pks[i] at stamps[i],
// whose ID is set), from memory or read by r, beside its JSON encoding as
// a list item (SessionList.WriteJSON). every says the list holds every
// stored session, so any other remembered one was deleted.
func (c *ListSummaries) Fill(r SummaryReader, l *SessionList, pks, stamps []int64, every bool) error {
	sessions := l.Sessions
	encoded := make([][]byte, len(pks))
	l.encoded = encoded
	missing := map[int64]*Summary{}
	index := map[int64]int{}
	var ids, counted, long []int64 // long: listed before with recountFrom steps or more
	cc, _ := r.(changedCounter)
	c.mu.Lock()
	for i, pk := range pks {
		e, ok := c.byPK[pk]
		if ok && e.stamp == stamps[i] && e.o.ID == sessions[i].ID {
			sessions[i] = cloneOverview(e.o) // callers may change it
			encoded[i] = e.json
			continue
		}
		missing[pk], index[pk] = &sessions[i].Summary, i
		ids = append(ids, pk)
		if cc != nil && ok && e.o.ID == sessions[i].ID && e.o.Summary.Steps >= recountFrom {
			long = append(long, pk)
		} else {
			counted = append(counted, pk)
		}
	}
	if every && len(ids) == 0 && len(c.byPK) == len(pks) {
		every = false // it holds the listed sessions, all found: none else
	}
	if every {
		listed := make(map[int64]string, len(pks))
		for i, pk := range pks {
			listed[pk] = sessions[i].ID
		}
		for pk, e := range c.byPK {
			if id, ok := listed[pk]; !ok || id != e.o.ID {
				c.forgetLocked(pk)
			}
		}
	}
	c.mu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	err := r.ReadSessions(ids, func(pk int64, o SessionOverview) { sessions[index[pk]] = o })
	if err != nil {
		return err
	}
	for _, pk := range long {
		if err := cc.CountChanged(pk, missing[pk]); err != nil {
			return err
		}
	}
	if len(counted) > 0 {
		err = r.CountSteps(counted, func(pk int64, c StepCount) {
			if sum := missing[pk]; sum != nil {
				sum.AddCount(c)
			}
		})
		if err != nil {
			return err
		}
	}
	for _, i := range index {
		if encoded[i], err = json.Marshal(sessions[i]); err != nil {
			return fmt.Errorf("session %s: %w", sessions[i].ID, err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for pk, i := range index {
		o := cloneOverview(sessions[i])
		e := listSummary{stamp: stamps[i], o: o, json: encoded[i],
			bytes: len(o.ID) + len(o.Summary.Title) + len(o.Workspace.Root) + len(o.Workspace.Repo) + len(o.Source) + 600 + len(encoded[i])}
		if o.Verdict != nil {
			e.bytes += len(o.Verdict.Note)
		}
		c.forgetLocked(pk)
		if c.byPK == nil || len(c.byPK) >= rememberedSummaries || c.bytes+e.bytes > rememberedSummaryBytes {
			c.byPK, c.bytes = map[int64]listSummary{}, 0 // simplest eviction: start over
		}
		c.byPK[pk] = e
		c.bytes += e.bytes
	}
	return nil
}

func (c *ListSummaries) forgetLocked(pk int64) {
	if e, ok := c.byPK[pk]; ok {
		c.bytes -= e.bytes
		delete(c.byPK, pk)
	}
}

// Drop forgets a session: Delete calls it.
func (c *ListSummaries) Drop(pk int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forgetLocked(pk)
}

// held reports whether session id's summary is remembered, for tests.
func (c *ListSummaries) held(id string) bool {
	return c.encoding(id) != nil
}

// encoding is the JSON remembered for session id, nil if none, for tests.
func (c *ListSummaries) encoding(id string) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.byPK {
		if e.o.ID == id {
			return e.json
		}
	}
	return nil
}

// cloneOverview copies what a caller could change in place.
func cloneOverview(o SessionOverview) SessionOverview {
	if o.Metrics != nil {
		m := *o.Metrics
		o.Metrics = &m
	}
	if o.Verdict != nil {
		v := *o.Verdict
		o.Verdict = &v
	}
	o.Summary.StepsByType = maps.Clone(o.Summary.StepsByType)
	return o
}
