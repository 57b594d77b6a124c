package store

import (
	"fmt"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// refs answers whether a record a batch points at exists, in the batch or
// already stored for the session (pk 0: a new session, nothing stored).
type refs struct {
	conn     *sqlite.Conn
	pk       int64
	segments map[int64]bool
	actors   map[string]bool
	turns    map[string]bool
	err      error // the first failed lookup
}

func (r *refs) stored(query string, key any) bool {
	if r.pk == 0 || r.err != nil {
		return false
	}
	found := false
	err := sqlitex.Execute(r.conn, query, &sqlitex.ExecOptions{
		Args:       []any{r.pk, key},
		ResultFunc: func(*sqlite.Stmt) error { found = true; return nil },
	})
	if err != nil {
		r.err = err
	}
	return found
}

func (r *refs) segment(i int64) bool {
	if _, ok := r.segments[i]; !ok {
		r.segments[i] = r.stored(`SELECT 1 FROM segments WHERE session_pk = ? AND idx = ?`, i)
	}
	return r.segments[i]
}

func (r *refs) actor(id string) bool {
	if _, ok := r.actors[id]; !ok {
		r.actors[id] = r.stored(`SELECT 1 FROM actors WHERE session_pk = ? AND id = ?`, id)
	}
	return r.actors[id]
}

func (r *refs) turn(id string) bool {
	if _, ok := r.turns[id]; !ok {
		r.turns[id] = r.stored(`SELECT 1 FROM turns WHERE session_pk = ? AND id = ?`, id)
	}
	return r.turns[id]
}

// checkReferences runs the third check of a batch: records belong to the
// session, what they point at exists, and nothing repeats within the batch.
func checkReferences(conn *sqlite.Conn, pk int64, b *Batch) (ps []Problem, err error) {
	r := &refs{conn: conn, pk: pk, segments: map[int64]bool{}, actors: map[string]bool{}, turns: map[string]bool{}}
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
	return ps, r.err
}

// checkSeqs refuses a step whose seq is held by a stored step of another id.
func checkSeqs(conn *sqlite.Conn, pk int64, steps []Step) error {
	if pk == 0 {
		return nil
	}
	for i, st := range steps {
		var holder string
		err := sqlitex.Execute(conn, `SELECT id FROM steps WHERE session_pk = ? AND seq = ?`, &sqlitex.ExecOptions{
			Args:       []any{pk, st.Seq},
			ResultFunc: func(s *sqlite.Stmt) error { holder = s.ColumnText(0); return nil },
		})
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
