package store

import (
	"cmp"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// Tallies remembers, in memory only, what the reads compute over all
// of a session's steps (the step counts, the report and the Changes
// section) as partial results per block of steps, so that after a write
// only the blocks it touched are read again: a live refresh of a long
// session costs the work of the steps just pushed, not of every step.
//
// A block is the session's steps whose row number (pk) shares pk >>
// BlockShift. A step keeps its row when it is written again and steps go
// only with their session, so a block changes only when one of its steps
// is written, and that step's change stamp then is later than the
// remembered stamp: steps_by_change finds exactly the blocks to read again.
// The session's stamp changes with every write by any process, and the id
// is checked beside the row, so a remembered value is never stale.
//
// Every backend keeps one (the SQLite Store, the PostgreSQL store) and
// reads through it with a BlockReader of its own.
type Tallies struct {
	mu    sync.Mutex
	byPK  map[int64]*wholeEntry
	bytes int
}

// Bounds of the memory Tallies holds: a few long sessions open in
// tabs. A session whose partial results alone pass rememberedBytes is
// computed on every read instead.
const (
	BlockShift         = 10 // 1,024 rows a block: pk >> BlockShift
	rememberedSessions = 64
	rememberedBytes    = 64 << 20
)

// wholeEntry is one session at one change stamp. It is never changed once
// remembered (readers share it); a later read makes a new one.
type wholeEntry struct {
	id      string
	stamp   int64
	blocks  map[int64]*stepBlock
	changes []FileChange // FileChanges' answer at this stamp, once asked for
	// texts are the strings of the edits FileChanges read (those within
	// MaxChangeBytes) by pk, kept for the next stamp's answer but for the
	// blocks written since; they share their strings with changes.
	texts map[int64][2]*string
	// usage is the session's token usage at this stamp, once asked for
	// (usageRead), summed from records, the session's usage records at
	// this stamp. A usage record is written only with a change of the
	// session's stamp (applyRecords), and carries that stamp (migration
	// 018), so the next stamp's reads only the records written since
	// (Tallies.usage). prior is the records of the entry this one follows.
	usage     *Usage
	usageRead bool
	records   *usageRecords
	prior     *usageRecords
	bytes     int
}

// usageRecords are a session's usage records as of a stamp, in time
// order then by id (as SessionUsage sums them), with the time of each in
// unix nanoseconds (ns[i] is records[i]'s).
type usageRecords struct {
	stamp   int64
	records []UsageRecord
	ns      []int64
}

// stepBlock is what one block's steps add to the whole-session results.
type stepBlock struct {
	counts   Summary // the step counts only
	files    map[string]fileTally
	commands map[string]commandTally
	tools    map[string]ToolUse   // by tool name; Tool is left empty
	turns    map[string]turnTally // the turns of its failed or flagged steps, by id; nil when none
	changes  []changeRow          // the rows FileChanges reads, in seq order
	bytes    int
}

// fileTally is what a block's steps on one path add up to: its edits and
// reads, and the commands whose lines name it (CommandFiles), as edits
// when they write it and reads when they read it.
type fileTally struct {
	first                int64 // seq of the first step on the path
	firstAt              int   // the path's place among that step's files (a command may name several)
	firstFull            bool  // that step writes the whole file
	edits, reads, failed int
	commands             int // of the edits and reads, the commands
}

// commandTally is what a block's runs of one command line add up to.
type commandTally struct {
	first        int64 // seq of the first run
	firstFailed  int64 // seq of the first failed run, when failed > 0
	runs, failed int
	exitCodes    []int64 // distinct
	notInline    bool
}

// turnTally is what a block's failed and flagged steps of one turn add up
// to.
type turnTally struct {
	failed, flags             int
	firstFailed, firstFlagged int64 // seqs of the first failed and flagged step, when their count is not 0
}

// earliest is the first seq of two sets of steps, a of them from seq
// aSeq and b from bSeq: an empty set's seq is none (a seq may be 0).
func earliest(a int, aSeq int64, b int, bSeq int64) int64 {
	switch {
	case b == 0:
		return aSeq
	case a == 0:
		return bSeq
	}
	return min(aSeq, bSeq)
}

// seqOf is seq as the report gives it: nil when its count is 0.
func seqOf(n int, seq int64) *int64 {
	if n == 0 {
		return nil
	}
	return &seq
}

// changeRow is a step FileChanges reads: an edit, a read, or a command
// whose line names files it reads, writes or removes (CommandFiles). The
// edit's strings are read when needed, by pk.
type changeRow struct {
	pk, seq int64
	typ     string
	failed  bool // failed or rejected: the file was not changed
	path    string
	full    bool
	textLen int // characters of old_string and new_string
	files   []CommandFile
}

// blockColumns are what sqliteBlocks.ReadSteps reads of each step: the counted
// columns, and the small payload fields the report and the Changes section
// need, for the step types that have them.
const blockColumns = `pk, seq, type, outcome = 'failed', content_status = 'reference_only', flag_count,
	decision = 'rejected',
	iif(type IN ('edit', 'read'), json_extract(payload, '$.path')),
	iif(type = 'edit', coalesce(json_extract(payload, '$.is_full_write'), 0)),
	iif(type = 'command', coalesce(json_extract(payload, '$.command'), '')),
	iif(type = 'command', json_extract(payload, '$.exit_code')),
	iif(type = 'command', json_extract(payload, '$.output_ref') IS NOT NULL),
	iif(type = 'command', json_extract(payload, '$.cwd')),
	iif(type = 'edit', coalesce(length(old_string), 0) + coalesce(length(new_string), 0)),
	tool_name,
	iif(outcome = 'failed' OR flag_count > 0, turn_id)`

// BlockReader is what Tallies reads of a backend's store, all within one
// read transaction.
type BlockReader interface {
	// SessionStamp returns session pk's id and change stamp; ok is false
	// when it is not stored.
	SessionStamp(pk int64) (id string, stamp int64, ok bool, err error)
	// ChangedBlocks returns the blocks (pk >> BlockShift) holding steps of
	// session pk written after stamp.
	ChangedBlocks(pk, stamp int64) ([]int64, error)
	// ReadSteps calls add with each step of session pk whose row is in
	// [from, to), or with every step of it when to is 0.
	ReadSteps(pk, from, to int64, add func(BlockRow)) error
	// LiveSessions returns, by row, the ids of the sessions stored among
	// pks.
	LiveSessions(pks []int64) (map[int64]string, error)
}

// Tally returns session pk's whole-session results as of this read (r's),
// reading again only the blocks written since the remembered ones; ok is
// false when the session does not exist.
func (w *Tallies) Tally(r BlockReader, pk int64) (t *Tally, ok bool, err error) {
	e, ok, err := w.entry(r, pk)
	if e == nil {
		return nil, ok, err
	}
	return &Tally{w: w, pk: pk, e: e}, ok, err
}

// entry returns session pk's partial results as of this read, reading
// again only the blocks written since the remembered ones; ok is false
// when the session does not exist.
func (w *Tallies) entry(r BlockReader, pk int64) (e *wholeEntry, ok bool, err error) {
	e = &wholeEntry{blocks: map[int64]*stepBlock{}}
	e.id, e.stamp, ok, err = r.SessionStamp(pk)
	if err != nil || !ok {
		return nil, ok, err
	}
	w.mu.Lock()
	old := w.byPK[pk]
	w.mu.Unlock()
	add := func(row BlockRow) { addBlockRow(e.blocks, row) }
	switch {
	case old != nil && old.id == e.id && old.stamp == e.stamp:
		return old, true, nil
	case old != nil && old.id == e.id && old.stamp < e.stamp:
		maps.Copy(e.blocks, old.blocks)
		if e.prior = old.records; e.prior == nil { // its usage was not read
			e.prior = old.prior
		}
		var dirty []int64
		dirty, err = r.ChangedBlocks(pk, old.stamp)
		for _, b := range dirty {
			if err != nil {
				break
			}
			delete(e.blocks, b)
			err = r.ReadSteps(pk, b<<BlockShift, (b+1)<<BlockShift, add)
		}
		e.texts = make(map[int64][2]*string, len(old.texts))
		for k, t := range old.texts {
			if !slices.Contains(dirty, k>>BlockShift) {
				e.texts[k] = t
			}
		}
	default:
		err = r.ReadSteps(pk, 0, 0, add)
	}
	if err != nil {
		return nil, true, err
	}
	for _, b := range e.blocks {
		e.bytes += b.bytes
	}
	e.bytes += e.prior.bytes() // held until the usage is read
	for _, b := range e.blocks {
		if !slices.IsSortedFunc(b.changes, bySeq) {
			slices.SortFunc(b.changes, bySeq)
		}
	}
	w.remember(r, pk, e)
	return e, true, nil
}

// sqliteBlocks is the SQLite store's BlockReader, on one connection.
type sqliteBlocks struct{ conn *sqlite.Conn }

func (r sqliteBlocks) SessionStamp(pk int64) (id string, stamp int64, ok bool, err error) {
	err = sqlitex.Execute(r.conn, `SELECT id, updated_at FROM sessions WHERE pk = ?`, &sqlitex.ExecOptions{
		Args:       []any{pk},
		ResultFunc: func(st *sqlite.Stmt) error { id, stamp, ok = st.ColumnText(0), st.ColumnInt64(1), true; return nil },
	})
	return id, stamp, ok, err
}

func (r sqliteBlocks) ChangedBlocks(pk, stamp int64) ([]int64, error) {
	var dirty []int64
	err := sqlitex.Execute(r.conn, `SELECT DISTINCT pk >> ? FROM steps WHERE session_pk = ? AND updated_at > ?`, &sqlitex.ExecOptions{
		Args:       []any{BlockShift, pk, stamp},
		ResultFunc: func(st *sqlite.Stmt) error { dirty = append(dirty, st.ColumnInt64(0)); return nil },
	})
	return dirty, err
}

func (r sqliteBlocks) ReadSteps(pk, from, to int64, add func(BlockRow)) error {
	where, args := `session_pk = ?`, []any{pk}
	if to != 0 {
		// +session_pk: the row range, not the session's index, finds them.
		where, args = `+session_pk = ? AND pk >= ? AND pk < ?`, []any{pk, from, to}
	}
	return sqlitex.Execute(r.conn, `SELECT `+blockColumns+` FROM steps WHERE `+where, &sqlitex.ExecOptions{
		Args: args,
		ResultFunc: func(st *sqlite.Stmt) error {
			add(BlockRow{
				PK: st.ColumnInt64(0), Seq: st.ColumnInt64(1), Type: st.ColumnText(2),
				Failed: st.ColumnBool(3), ReferenceOnly: st.ColumnBool(4), Flags: st.ColumnInt(5), Rejected: st.ColumnBool(6),
				Path: st.ColumnText(7), FullWrite: st.ColumnBool(8),
				Command: st.ColumnText(9), HasExitCode: !st.ColumnIsNull(10), ExitCode: st.ColumnInt64(10),
				OutputRef: st.ColumnBool(11), Cwd: st.ColumnText(12), TextLen: st.ColumnInt(13), Tool: st.ColumnText(14),
				TurnID: st.ColumnText(15),
			})
			return nil
		},
	})
}

func (r sqliteBlocks) LiveSessions(pks []int64) (map[int64]string, error) {
	ids, _ := json.Marshal(pks)
	live := map[int64]string{}
	err := sqlitex.Execute(r.conn, `SELECT pk, id FROM sessions WHERE pk IN (SELECT value FROM json_each(?))`, &sqlitex.ExecOptions{
		Args:       []any{string(ids)},
		ResultFunc: func(st *sqlite.Stmt) error { live[st.ColumnInt64(0)] = st.ColumnText(1); return nil },
	})
	return live, err
}

// BlockRow is one step as the whole-session results count it (the columns
// of blockColumns): what every backend reads of each step for the summary's
// step counts, the report and the Changes section.
type BlockRow struct {
	PK, Seq       int64 // the step's row number and seq
	Type          string
	Failed        bool // outcome failed
	ReferenceOnly bool // content_status reference_only
	Flags         int  // flag count
	Rejected      bool // decision rejected
	// Path of an edit or read; FullWrite: an edit's is_full_write.
	Path      string
	FullWrite bool
	// Command, exit code (when HasExitCode), whether the output is kept
	// elsewhere (output_ref set) and cwd of a command; Command is "" when
	// not recorded.
	Command     string
	HasExitCode bool
	ExitCode    int64
	OutputRef   bool
	Cwd         string
	TextLen     int    // an edit's characters of old_string and new_string
	Tool        string // the tool_name of a step of type other
	TurnID      string // the turn of a failed or flagged step; "" for the others
}

// addBlockRow adds r to the partial results of its block.
func addBlockRow(blocks map[int64]*stepBlock, r BlockRow) {
	b := blocks[r.PK>>BlockShift]
	if b == nil {
		b = &stepBlock{counts: Summary{StepsByType: map[string]int{}}, files: map[string]fileTally{}, commands: map[string]commandTally{},
			tools: map[string]ToolUse{}}
		blocks[r.PK>>BlockShift] = b
	}
	b.add(r)
}

// add counts one step into the block.
func (b *stepBlock) add(r BlockRow) {
	c := &b.counts
	c.Steps++
	c.StepsByType[r.Type]++
	if r.Failed {
		c.Failed++
	}
	if r.ReferenceOnly {
		c.ReferenceOnly++
	}
	c.Flags += r.Flags
	if r.Failed || r.Flags > 0 {
		b.addProblem(r)
	}
	switch r.Type {
	case TypeOther:
		t, seen := b.tools[r.Tool]
		if !seen {
			b.bytes += len(r.Tool) + 48
		}
		t.Calls++
		if r.Failed {
			t.Failed++
		}
		b.tools[r.Tool] = t
	case TypeEdit, TypeRead:
		p := r.Path
		full := r.Type == TypeEdit && r.FullWrite
		t, seen := b.files[p]
		if !seen || r.Seq < t.first {
			t.first, t.firstAt, t.firstFull = r.Seq, 0, full
		}
		if !seen {
			b.bytes += len(p) + 64
		}
		if r.Type == TypeEdit {
			t.edits++
		} else {
			t.reads++
		}
		if r.Failed {
			t.failed++
		}
		b.files[p] = t
		b.changes = append(b.changes, changeRow{pk: r.PK, seq: r.Seq, typ: r.Type, failed: r.Failed || r.Rejected,
			path: p, full: full, textLen: r.TextLen})
		b.bytes += len(p) + 96
	case TypeCommand:
		cmd := r.Command
		t, seen := b.commands[cmd]
		if !seen || r.Seq < t.first {
			t.first = r.Seq
		}
		if !seen {
			b.bytes += len(cmd) + 64
		}
		t.runs++
		if r.Failed {
			t.firstFailed = earliest(t.failed, t.firstFailed, 1, r.Seq)
			t.failed++
		}
		if r.HasExitCode && !slices.Contains(t.exitCodes, r.ExitCode) {
			t.exitCodes = append(t.exitCodes, r.ExitCode)
			b.bytes += 8
		}
		t.notInline = t.notInline || r.ReferenceOnly || r.OutputRef
		b.commands[cmd] = t
		files := CommandFiles(cmd, r.Cwd)
		for at, f := range files {
			if f.Removed {
				continue // Changes' to show, not a step on the file
			}
			t, seen := b.files[f.Path]
			if !seen || r.Seq < t.first {
				t.first, t.firstAt, t.firstFull = r.Seq, at, f.Whole
			}
			if !seen {
				b.bytes += len(f.Path) + 64
			}
			if f.Write {
				t.edits++
			} else {
				t.reads++
			}
			t.commands++
			if r.Failed {
				t.failed++
			}
			b.files[f.Path] = t
		}
		// Only lines that name files, and that did not fail: the changes
		// put together place a relative path removed in the session's
		// workspace root.
		if !r.Failed && len(files) > 0 {
			b.changes = append(b.changes, changeRow{pk: r.PK, seq: r.Seq, typ: r.Type, files: files})
			b.bytes += 96
			for _, f := range files {
				b.bytes += len(f.Path) + 48
				if f.Content != nil {
					b.bytes += len(*f.Content)
				}
			}
		}
	}
}

// addProblem counts a failed or flagged step into its turn's problems.
func (b *stepBlock) addProblem(r BlockRow) {
	if b.turns == nil {
		b.turns = map[string]turnTally{}
	}
	t, seen := b.turns[r.TurnID]
	if !seen {
		b.bytes += len(r.TurnID) + 64
	}
	if r.Failed {
		t.firstFailed = earliest(t.failed, t.firstFailed, 1, r.Seq)
		t.failed++
	}
	if r.Flags > 0 {
		t.firstFlagged = earliest(t.flags, t.firstFlagged, r.Flags, r.Seq)
		t.flags += r.Flags
	}
	b.turns[r.TurnID] = t
}

// Tally is a whole session's results (step counts, report, Changes
// section) as one read of Tallies found them: the same counting for every
// backend.
type Tally struct {
	w  *Tallies
	pk int64
	e  *wholeEntry
}

// Usage is the session's token usage as of the read (SessionUsage of its
// records), remembered with the tally's stamp. read returns the session's
// usage records written after a stamp (all of them after 0), in any order:
// after a write, only those are read.
func (t *Tally) Usage(read func(after int64) ([]UsageRecord, error)) (*Usage, error) {
	return t.w.usage(t.pk, t.e, read)
}

// Summary sets the step counts of sum (steps, by type, failed,
// reference-only, flags), leaving its other fields.
func (t *Tally) Summary(sum *Summary) { t.e.summary(sum) }

// Report is the session's report: files and commands in order of their
// first step, tools by calls, and the problems of turns (of the read: its
// Turns are empty until TurnProblems).
func (t *Tally) Report() Report { return t.e.report() }

// TurnProblems are the failed steps and flags of each of turns that has
// any, in their order (Report.Turns).
func (t *Tally) TurnProblems(turns []Turn) []TurnProblems { return t.e.turnProblems(turns) }

// remember keeps e unless a newer stamp of the session is kept already,
// and forgets sessions deleted since they were remembered (by any
// process), so nothing of a deleted session stays in memory for long.
func (w *Tallies) remember(r BlockReader, pk int64, e *wholeEntry) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if old := w.byPK[pk]; old != nil {
		if old.id == e.id && old.stamp > e.stamp {
			return
		}
		w.bytes -= old.bytes
		delete(w.byPK, pk)
	}
	if e.bytes > rememberedBytes {
		return
	}
	if w.byPK == nil || w.bytes+e.bytes > rememberedBytes || len(w.byPK) >= rememberedSessions {
		w.byPK, w.bytes = map[int64]*wholeEntry{}, 0 // simplest eviction: start over
	}
	w.byPK[pk] = e
	w.bytes += e.bytes
	// A session another process deleted: its rows are gone.
	live, err := r.LiveSessions(slices.Collect(maps.Keys(w.byPK)))
	if err != nil {
		return
	}
	for k, v := range w.byPK {
		if live[k] != v.id {
			w.bytes -= v.bytes
			delete(w.byPK, k)
		}
	}
}

// rememberChanges keeps FileChanges' answer, and the edit strings it
// read, beside the entry it was put together from, while that entry is the
// one remembered.
func (w *Tallies) rememberChanges(pk int64, e *wholeEntry, files []FileChange, texts map[int64][2]*string) {
	n := 0
	for _, f := range files {
		n += len(f.Path) + len(f.Before) + len(f.After) + 64
		for _, ed := range f.Edits {
			n += len(deref(ed.Old)) + len(deref(ed.New)) + 64
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byPK[pk] != e || w.bytes+n > rememberedBytes {
		return
	}
	with := *e
	with.changes, with.texts, with.bytes = files, texts, e.bytes+n+48*len(texts)
	w.byPK[pk] = &with
	w.bytes += n + 48*len(texts)
}

// usage returns the session's usage at e's stamp: remembered with e, or
// summed from its records, of which only those written since the entry
// before are read (Tally.Usage). A session page read and priced every
// record on every view: 107 of the 179 ms of a page of a real session of
// 25,788 records, and ~100 ms of each live refresh (docs/performance.md,
// "A sweep of the routes on a real store").
func (w *Tallies) usage(pk int64, e *wholeEntry, read func(after int64) ([]UsageRecord, error)) (*Usage, error) {
	if e.usageRead {
		return e.usage, nil
	}
	var after int64
	if e.prior != nil {
		after = e.prior.stamp
	}
	written, err := read(after)
	if err != nil {
		return nil, err
	}
	recs := e.prior.with(written, e.stamp)
	u := SessionUsage(recs.records)
	// What remembering adds: the records and the sum, less the prior
	// records they replace.
	n := 256 + recs.bytes() - e.prior.bytes()
	if u != nil {
		n += 160*len(u.Turns) + 96*len(u.Models) + 32*len(u.Unpriced) // a turn with its two costs
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byPK[pk] == e && w.bytes+n <= rememberedBytes {
		with := *e
		with.usage, with.usageRead, with.records, with.prior, with.bytes = u, true, recs, nil, e.bytes+n
		w.byPK[pk] = &with
		w.bytes += n
	}
	return u, nil
}

// bytes is about the memory rs holds (0 for nil): a record's fields and
// its id and time.
func (rs *usageRecords) bytes() int {
	if rs == nil {
		return 0
	}
	return 200 * len(rs.records)
}

// with returns the records of rs (none when rs is nil) with those written
// since (written, which replace any of the same id), as of stamp.
func (rs *usageRecords) with(written []UsageRecord, stamp int64) *usageRecords {
	type key struct {
		ns int64
		r  *UsageRecord
	}
	keys := make([]key, len(written))
	ids := make(map[string]bool, len(written))
	for i := range written {
		ns, _ := written[i].Normalized()
		keys[i] = key{ns, &written[i]}
		ids[written[i].ID] = true
	}
	slices.SortFunc(keys, func(a, b key) int { return cmp.Or(cmp.Compare(a.ns, b.ns), strings.Compare(a.r.ID, b.r.ID)) })
	var old []UsageRecord
	var oldNS []int64
	if rs != nil {
		old, oldNS = rs.records, rs.ns
	}
	out := &usageRecords{stamp: stamp, records: make([]UsageRecord, 0, len(old)+len(keys)), ns: make([]int64, 0, len(old)+len(keys))}
	// A merge of the two lists in order, leaving out the records replaced.
	i := 0
	for _, k := range keys {
		for ; i < len(old) && cmp.Or(cmp.Compare(oldNS[i], k.ns), strings.Compare(old[i].ID, k.r.ID)) < 0; i++ {
			if !ids[old[i].ID] {
				out.records, out.ns = append(out.records, old[i]), append(out.ns, oldNS[i])
			}
		}
		out.records, out.ns = append(out.records, *k.r), append(out.ns, k.ns)
	}
	for ; i < len(old); i++ {
		if !ids[old[i].ID] {
			out.records, out.ns = append(out.records, old[i]), append(out.ns, oldNS[i])
		}
	}
	return out
}

// Drop forgets a session: Delete calls it.
func (w *Tallies) Drop(pk int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e := w.byPK[pk]; e != nil {
		w.bytes -= e.bytes
		delete(w.byPK, pk)
	}
}

// held reports whether anything of session id is remembered, for tests.
func (w *Tallies) held(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.byPK {
		if e.id == id {
			return true
		}
	}
	return false
}

// summary fills the step counts of sum from e.
func (e *wholeEntry) summary(sum *Summary) {
	sum.Steps, sum.Failed, sum.ReferenceOnly, sum.Flags = 0, 0, 0, 0
	sum.StepsByType = map[string]int{}
	for _, t := range StepTypes {
		sum.StepsByType[t] = 0
	}
	for _, b := range e.blocks {
		c := b.counts
		sum.Steps += c.Steps
		sum.Failed += c.Failed
		sum.ReferenceOnly += c.ReferenceOnly
		sum.Flags += c.Flags
		for t, n := range c.StepsByType {
			sum.StepsByType[t] += n
		}
	}
}

// report puts the report together from e's blocks: files and commands in
// order of their first step, tools by calls, most first, then by name.
func (e *wholeEntry) report() Report {
	files := map[string]fileTally{}
	commands := map[string]commandTally{}
	tools := map[string]ToolUse{}
	for _, b := range e.blocks {
		for name, t := range b.tools {
			m := tools[name]
			tools[name] = ToolUse{Calls: m.Calls + t.Calls, Failed: m.Failed + t.Failed}
		}
		for p, t := range b.files {
			if m, ok := files[p]; ok {
				if m.first < t.first {
					t.first, t.firstAt, t.firstFull = m.first, m.firstAt, m.firstFull
				}
				t.edits, t.reads, t.failed, t.commands = t.edits+m.edits, t.reads+m.reads, t.failed+m.failed, t.commands+m.commands
			}
			files[p] = t
		}
		for c, t := range b.commands {
			if m, ok := commands[c]; ok {
				t.first, t.firstFailed = min(t.first, m.first), earliest(t.failed, t.firstFailed, m.failed, m.firstFailed)
				t.runs, t.failed, t.notInline = t.runs+m.runs, t.failed+m.failed, t.notInline || m.notInline
				codes := slices.Clone(m.exitCodes)
				for _, code := range t.exitCodes {
					if !slices.Contains(codes, code) {
						codes = append(codes, code)
					}
				}
				t.exitCodes = codes
			}
			commands[c] = t
		}
	}
	// Sorted as (key, tally) pairs: a comparison that looked up both
	// tallies by key was most of a report of 50,000 distinct commands.
	type file struct {
		path string
		fileTally
	}
	type command struct {
		line string
		commandTally
	}
	byFile := make([]file, 0, len(files))
	for p, t := range files {
		byFile = append(byFile, file{p, t})
	}
	slices.SortFunc(byFile, func(a, b file) int {
		return cmp.Or(cmp.Compare(a.first, b.first), cmp.Compare(a.firstAt, b.firstAt))
	})
	byLine := make([]command, 0, len(commands))
	for c, t := range commands {
		byLine = append(byLine, command{c, t})
	}
	slices.SortFunc(byLine, func(a, b command) int { return cmp.Compare(a.first, b.first) })
	r := Report{Files: make([]FileTouched, 0, len(files)), Commands: make([]CommandRun, 0, len(commands)), Tools: make([]ToolUse, 0, len(tools)),
		Turns: []TurnProblems{}}
	for _, f := range byFile {
		p, t := f.path, f.fileTally
		created := 0
		if t.firstFull {
			created = 1
		}
		r.Files = append(r.Files, FileTouched{Path: p, Created: created, Edited: t.edits - created, Read: t.reads, Failed: t.failed, ByCommand: t.commands})
	}
	for _, l := range byLine {
		c, t := l.line, l.commandTally
		codes := slices.Clone(t.exitCodes)
		if codes == nil {
			codes = []int64{}
		}
		slices.Sort(codes)
		r.Commands = append(r.Commands, CommandRun{Command: c, FirstSeq: t.first, FirstFailedSeq: seqOf(t.failed, t.firstFailed), Runs: t.runs, Failed: t.failed, ExitCodes: codes, OutputNotInline: t.notInline})
	}
	for name, t := range tools {
		t.Tool = name
		r.Tools = append(r.Tools, t)
	}
	slices.SortFunc(r.Tools, func(a, b ToolUse) int { return cmp.Or(cmp.Compare(b.Calls, a.Calls), strings.Compare(a.Tool, b.Tool)) })
	return r
}

// turnProblems are the failed steps and flags of each of turns that has
// any, in their order, from all their steps: a page of 30 turns of a
// session of thousands with failures merges the blocks' counts of its 30.
func (e *wholeEntry) turnProblems(turns []Turn) []TurnProblems {
	at := make(map[string]int, len(turns))
	for i, t := range turns {
		at[t.ID] = i
	}
	merged := make([]turnTally, len(turns))
	for _, b := range e.blocks {
		for id, t := range b.turns {
			if i, ok := at[id]; ok {
				m := merged[i]
				merged[i] = turnTally{failed: m.failed + t.failed, firstFailed: earliest(m.failed, m.firstFailed, t.failed, t.firstFailed),
					flags: m.flags + t.flags, firstFlagged: earliest(m.flags, m.firstFlagged, t.flags, t.firstFlagged)}
			}
		}
	}
	out := []TurnProblems{}
	for i, m := range merged {
		if m.failed > 0 || m.flags > 0 {
			out = append(out, TurnProblems{TurnID: turns[i].ID, Failed: m.failed, FirstFailedSeq: seqOf(m.failed, m.firstFailed),
				Flags: m.flags, FirstFlaggedSeq: seqOf(m.flags, m.firstFlagged)})
		}
	}
	return out
}

// changeRows are e's FileChanges rows in seq order.
func (e *wholeEntry) changeRows() []changeRow {
	n := 0
	for _, b := range e.blocks {
		n += len(b.changes)
	}
	rows := make([]changeRow, 0, n)
	for _, k := range slices.Sorted(maps.Keys(e.blocks)) {
		rows = append(rows, e.blocks[k].changes...)
	}
	// Seqs mostly grow with pk: nearly sorted already.
	slices.SortFunc(rows, bySeq)
	return rows
}

func bySeq(a, b changeRow) int { return cmp.Compare(a.seq, b.seq) }
