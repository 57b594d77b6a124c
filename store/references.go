package store

import (
	"fmt"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// RefLookup answers what is already stored for a batch's session, so the
// reference and seq checks (CheckReferences, CheckSeqs) are written once
// for every backend. Each backend answers from its own tables.
type RefLookup interface {
	// Segment, Actor and Turn report whether the session has the record.
	Segment(index int64) (bool, error)
	Actor(id string) (bool, error)
	Turn(id string) (bool, error)
	// SeqHolder returns the id of the stored step holding seq, or "".
	SeqHolder(seq int64) (string, error)
}

// refs answers whether a record a batch points at exists, in the batch or
// already stored (stored is nil for a new session: nothing is stored).
type refs struct {
	stored   RefLookup
	segments map[int64]bool
	actors   map[string]bool
	turns    map[string]bool
	err      error // the first failed lookup
}

// has records the first error of a lookup and reports found.
func (r *refs) has(found bool, err error) bool {
	if err != nil && r.err == nil {
		r.err = err
	}
	return found && err == nil
}

func (r *refs) segment(i int64) bool {
	if _, ok := r.segments[i]; !ok {
		r.segments[i] = r.stored != nil && r.err == nil && r.has(r.stored.Segment(i))
	}
	return r.segments[i]
}

func (r *refs) actor(id string) bool {
	if _, ok := r.actors[id]; !ok {
		r.actors[id] = r.stored != nil && r.err == nil && r.has(r.stored.Actor(id))
	}
	return r.actors[id]
}

func (r *refs) turn(id string) bool {
	if _, ok := r.turns[id]; !ok {
		r.turns[id] = r.stored != nil && r.err == nil && r.has(r.stored.Turn(id))
	}
	return r.turns[id]
}

// CheckReferences runs the third check of a batch: records belong to the
// session, what they point at exists in the batch or in stored (nil for a
// new session), and nothing repeats within the batch. It returns a
// *ReferenceError listing the problems, or the error of a failed lookup.
func CheckReferences(stored RefLookup, b *Batch) error {
	r := &refs{stored: stored, segments: map[int64]bool{}, actors: map[string]bool{}, turns: map[string]bool{}}
	var ps []Problem
	add := func(path, format string, args ...any) {
		ps = append(ps, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	sid := b.Session.ID
	for i, g := range b.Segments {
		if r.segments[g.Index] {
			add(fmt.Sprintf("segments[%d].index", i), "segment index %d repeats in this batch", g.Index)
		}
		r.segments[g.Index] = true
	}
	for i, a := range b.Actors {
		if r.actors[a.ID] {
			add(fmt.Sprintf("actors[%d].id", i), "actor id %s repeats in this batch", a.ID)
		}
		r.actors[a.ID] = true
	}
	for i, t := range b.Turns {
		if r.turns[t.ID] {
			add(fmt.Sprintf("turns[%d].id", i), "turn id %s repeats in this batch", t.ID)
		}
		r.turns[t.ID] = true
	}
	for i, a := range b.Actors {
		if a.ParentID != "" && !r.actor(a.ParentID) {
			add(fmt.Sprintf("actors[%d].parent_id", i), "no actor %s in this session", a.ParentID)
		}
	}
	for i, t := range b.Turns {
		at := func(f string) string { return fmt.Sprintf("turns[%d].%s", i, f) }
		if t.SessionID != sid {
			add(at("session_id"), "must equal session.id %s, got %s", sid, t.SessionID)
		}
		if !r.segment(t.SegmentIndex) {
			add(at("segment_index"), "no segment %d in this session", t.SegmentIndex)
		}
		if !r.actor(t.ActorID) {
			add(at("actor_id"), "no actor %s in this session", t.ActorID)
		}
	}
	ids, seqs := map[string]bool{}, map[int64]bool{}
	for i, st := range b.Steps {
		at := func(f string) string { return fmt.Sprintf("steps[%d].%s", i, f) }
		if ids[st.ID] {
			add(at("id"), "step id %s repeats in this batch", st.ID)
		}
		if seqs[st.Seq] {
			add(at("seq"), "seq %d repeats in this batch", st.Seq)
		}
		ids[st.ID], seqs[st.Seq] = true, true
		if st.SessionID != sid {
			add(at("session_id"), "must equal session.id %s, got %s", sid, st.SessionID)
		}
		if !r.segment(st.SegmentIndex) {
			add(at("segment_index"), "no segment %d in this session", st.SegmentIndex)
		}
		if !r.turn(st.TurnID) {
			add(at("turn_id"), "no turn %s in this session", st.TurnID)
		}
		if !r.actor(st.ActorID) {
			add(at("actor_id"), "no actor %s in this session", st.ActorID)
		}
	}
	if r.err != nil {
		return r.err
	}
	if len(ps) > 0 {
		return newReferenceError(ps)
	}
	return nil
}

// CheckSeqs refuses a step whose seq is held by a stored step of another
// id with a *ConflictError (stored is nil for a new session).
func CheckSeqs(stored RefLookup, steps []Step) error {
	if stored == nil {
		return nil
	}
	for i, st := range steps {
		holder, err := stored.SeqHolder(st.Seq)
		if err != nil {
			return err
		}
		if holder != "" && holder != st.ID {
			return &ConflictError{Problem: Problem{
				Path:    fmt.Sprintf("steps[%d].seq", i),
				Message: fmt.Sprintf("seq %d is held by step %s", st.Seq, holder),
			}}
		}
	}
	return nil
}

// sqliteRefs answers RefLookup from a stored session's rows (pk).
type sqliteRefs struct {
	conn *sqlite.Conn
	pk   int64
}

// storedRefs is the lookup of a session's stored records; nil for a new
// session (pk 0).
func storedRefs(conn *sqlite.Conn, pk int64) RefLookup {
	if pk == 0 {
		return nil
	}
	return sqliteRefs{conn: conn, pk: pk}
}

func (r sqliteRefs) exists(query string, key any) (bool, error) {
	found := false
	err := sqlitex.Execute(r.conn, query, &sqlitex.ExecOptions{
		Args:       []any{r.pk, key},
		ResultFunc: func(*sqlite.Stmt) error { found = true; return nil },
	})
	return found, err
}

func (r sqliteRefs) Segment(i int64) (bool, error) {
	return r.exists(`SELECT 1 FROM segments WHERE session_pk = ? AND idx = ?`, i)
}

func (r sqliteRefs) Actor(id string) (bool, error) {
	return r.exists(`SELECT 1 FROM actors WHERE session_pk = ? AND id = ?`, id)
}

func (r sqliteRefs) Turn(id string) (bool, error) {
	return r.exists(`SELECT 1 FROM turns WHERE session_pk = ? AND id = ?`, id)
}

func (r sqliteRefs) SeqHolder(seq int64) (string, error) {
	var holder string
	err := sqlitex.Execute(r.conn, `SELECT id FROM steps WHERE session_pk = ? AND seq = ?`, &sqlitex.ExecOptions{
		Args:       []any{r.pk, seq},
		ResultFunc: func(s *sqlite.Stmt) error { holder = s.ColumnText(0); return nil },
	})
	return holder, err
}
