package handlers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	templruntime "github.com/a-h/templ/runtime"

	"github.com/agentreview/service/redact"
	"github.com/agentreview/service/store"
	"github.com/agentreview/service/views"
)

// maxExports is how many exports (downloads and reviews) run at once; each
// holds a few times its session's largest value (docs/performance.md).
const maxExports = 2

// exportGate limits the exports that run at once. A request beyond the
// limit is refused with 503 at once rather than queued, so read routes
// cannot pile up memory.
type exportGate chan struct{}

func newExportGate() exportGate { return make(exportGate, maxExports) }

// enter takes a place, or reports false when every place is taken.
func (g exportGate) enter() bool {
	select {
	case g <- struct{}{}:
		return true
	default:
		return false
	}
}

func (g exportGate) leave() { <-g }

var errExportsBusy = &statusError{http.StatusServiceUnavailable, "too many exports at once; try again when one has finished"}

// exportSession is GET /api/sessions/:id/export: the redacted report as a
// download, written as it is read: a turn and a few steps at a time. Each
// piece is scanned again before it is sent; if a definite secret rule
// still matches the first piece, nothing is sent (500), and if it matches
// a later one the download is cut off, so no partial report looks whole.
func exportSession(st Reader, gate exportGate, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !gate.enter() {
			writeError(w, r, log, errExportsBusy)
			return
		}
		defer gate.leave()
		q := r.URL.Query()
		o := ExportOptions{Format: q.Get("format"), Keep: q["keep"], Images: q.Get("images") != "", Outline: q.Get("outline") != ""}
		if v := q.Get("step"); v != "" {
			seq, err := strconv.ParseInt(v, 10, 64)
			if err != nil || seq < 0 {
				writeError(w, r, log, badRequest("query parameter step=%q is not valid: give a step's seq", v))
				return
			}
			o.Step = &seq
		}
		var started bool
		err := WriteExport(r.Context(), st, sessionID(r), o, w, func(filename, contentType string) {
			started = true
			w.Header().Set("Content-Type", contentType)
			w.Header().Set("Content-Disposition", `attachment; filename="`+filename+`"`)
			w.WriteHeader(http.StatusOK)
		})
		var withheld *withheldError
		switch {
		case err == nil:
		case !started && errors.As(err, &withheld):
			log.Error("export withheld", "session", sessionID(r), "err", err)
			writeJSON(w, http.StatusInternalServerError, errorBody{Error: "export withheld: the report could not be made safe to share"})
		case !started:
			writeError(w, r, log, err)
		default:
			log.Error("export cut off", "session", sessionID(r), "err", err)
			panic(http.ErrAbortHandler) // the client sees the download fail
		}
	})
}

// ExportOptions are what a report of a session holds and how it is
// written.
type ExportOptions struct {
	Format  string   // "html" (also "") or "md"
	Keep    []string // placeholders of candidate values left unmasked (redact.Masker.Keep)
	Images  bool     // the steps' images in the report, which redaction cannot look into
	Outline bool     // a Markdown report's steps their lines alone
	// Step, for a Markdown report, makes it that one step alone (its line
	// and everything recorded of it): a snippet for an issue.
	Step *int64
}

// WriteExport writes session id's redacted report to w, a piece at a
// time, each scanned for definite secrets before it is written; start is
// called once, before the first byte, with the report's file name and
// content type. A bad format or keep list is a 400 statusError, an
// unknown session store.ErrNotFound; a secret found in the first piece
// writes nothing.
func WriteExport(ctx context.Context, st Reader, id string, o ExportOptions, w io.Writer, start func(filename, contentType string)) error {
	if err := checkKept(o.Keep); err != nil {
		return err
	}
	format, ok := exportFormats[o.Format]
	if !ok {
		return badRequest("query parameter format=%q is not valid: give html or md", o.Format)
	}
	if o.Step != nil && !format.markdown {
		return badRequest("query parameter step is for format=md: a step's Markdown")
	}
	walk, err := newExportWalk(ctx, st, id, o.Keep)
	if err != nil {
		return err
	}
	walk.images, walk.outline = o.Images, o.Outline
	name := "session-" + fileSafe(walk.d.ID)
	if o.Step != nil {
		name += "-step-" + strconv.FormatInt(*o.Step, 10)
	}
	out := &checkedWriter{w: w, start: func() { start(name+format.ext, format.contentType) }}
	if o.Step != nil {
		return writeExportStep(ctx, out, walk, *o.Step)
	}
	return writeExport(ctx, out, walk, time.Now(), format.markdown)
}

// writeExportStep writes one step of the walk's session as Markdown, read
// and masked as the whole report's steps are; its placeholders are
// numbered within the snippet, after the session's own values.
func writeExportStep(ctx context.Context, out *checkedWriter, walk *exportWalk, seq int64) error {
	d, err := walk.st.Detail(ctx, walk.d.ID, store.DetailQuery{Seq: &seq})
	if err != nil {
		return err
	}
	if len(d.Steps) == 0 {
		return store.ErrNotFound
	}
	s := d.Steps[0]
	redact.Step(walk.m, &s)
	v := stepView(s, 0, walk.d.Workspace.Root)
	exportImages(v.Images, walk.images)
	setActor(&v, actorsByID(walk.d.Actors)[s.ActorID], s.ActorID)
	v.Notes = walk.notes[v.Seq]
	if err := views.ExportMarkdownStep(out, v, walk.images); err != nil {
		return err
	}
	return out.flush(0)
}

// exportFormat is a kind of file the export writes (?format=).
type exportFormat struct {
	ext, contentType string
	markdown         bool
}

var exportFormats = map[string]exportFormat{
	"":     {".html", "text/html; charset=utf-8", false},
	"html": {".html", "text/html; charset=utf-8", false},
	"md":   {".md", "text/markdown; charset=utf-8", true},
}

// writeExport renders the walk's session into out, a piece at a time: the
// HTML report, or with markdown the same report as Markdown.
func writeExport(ctx context.Context, out *checkedWriter, walk *exportWalk, now time.Time, markdown bool) error {
	session := sessionView(walk.d, 0, nil)
	session.FailedHref, session.FlagsHref, session.UsageHref, session.NotesHref = "", "", "", "" // a file has no search or usage page to link to
	for i := range session.Files {
		session.Files[i].Href, session.Files[i].FailedHref = "", ""
	}
	for i := range session.Tools {
		session.Tools[i].Href, session.Tools[i].FailedHref = "", ""
	}
	for i := range session.Commands {
		session.Commands[i].RunsSearch, session.Commands[i].FailedSearch = "", ""
	}
	p := views.ExportPage{
		Session:   session,
		Turns:     walk.turns(ctx, out.flush),
		Generated: now.UTC().Format("2006-01-02 15:04 UTC"),
		Images:    walk.images,
		Outline:   walk.outline,
		Manifest:  func() []views.ManifestRow { return manifestOf(walk.m) },
	}
	if markdown {
		if err := views.ExportMarkdown(out, p); err != nil {
			return err
		}
	} else {
		// templ writes through a buffer of its own; handing it one lets
		// flush empty it, so each piece scanned holds everything rendered
		// before it.
		out.templ = &templruntime.Buffer{}
		out.templ.Reset(out)
		if err := views.Export(p).Render(views.WithHighlighting(ctx, exportHighlight), out.templ); err != nil {
			return err
		}
	}
	if walk.err != nil {
		return walk.err
	}
	return out.flush(0)
}

func manifestOf(m *redact.Masker) []views.ManifestRow {
	kept := map[string][]string{}
	for _, f := range m.Findings() {
		if f.Kept {
			kept[f.Rule] = append(kept[f.Rule], f.Placeholder)
		}
	}
	var rows []views.ManifestRow
	for rule, n := range m.Counts() {
		rows = append(rows, views.ManifestRow{Rule: rule, Count: n - len(kept[rule]), Kept: kept[rule]})
	}
	slices.SortFunc(rows, func(a, b views.ManifestRow) int { return strings.Compare(a.Rule, b.Rule) })
	return rows
}

// maxKept bounds the keep list of an export request.
const maxKept = 1000

// checkKept checks an export's keep list: the placeholders of candidate
// values the reviewer ticked to leave unmasked, at most maxKept.
func checkKept(keep []string) error {
	if len(keep) > maxKept {
		return &statusError{http.StatusBadRequest, fmt.Sprintf("keep lists at most %d values", maxKept)}
	}
	for _, k := range keep {
		if !redact.IsMaskPlaceholder(k) {
			return &statusError{http.StatusBadRequest, "keep must name placeholders of the export review, like [generic-secret-1]"}
		}
	}
	return nil
}

// checkedWriter holds what the export renders until flush, which scans it
// for definite secrets before sending it. The first flush calls start.
type checkedWriter struct {
	w       io.Writer
	start   func()               // before the first byte: an answer's headers
	templ   *templruntime.Buffer // what an HTML view writes to, into piece; nil for Markdown
	piece   strings.Builder      // a string without a copy, for the scan
	started bool
	out     [32 << 10]byte
}

func (c *checkedWriter) Write(p []byte) (int, error) { return c.piece.Write(p) }

// withheldError is a definite secret found in the rendered report.
type withheldError struct{ rule string }

func (e *withheldError) Error() string {
	return "rule " + e.rule + " still matches the rendered report"
}

// flush scans the piece rendered since the last flush and sends it, and
// makes room for the next piece of about next bytes.
func (c *checkedWriter) flush(next int) error {
	if c.templ != nil {
		if err := c.templ.Flush(); err != nil {
			return err
		}
	}
	piece := c.piece.String()
	c.piece = strings.Builder{}
	if rule, found := redact.FirstDefinite(piece); found {
		return &withheldError{rule}
	}
	if c.templ == nil { // Markdown: also as it reads, its escapes undone
		if rule, found := redact.FirstDefinite(views.MarkdownLiteral(piece)); found {
			return &withheldError{rule}
		}
	}
	if !c.started {
		c.started = true
		if c.start != nil {
			c.start()
		}
	}
	// Through a small buffer: the compressing writer has no WriteString,
	// and io.WriteString would copy a piece of any size whole.
	for len(piece) > 0 {
		n := copy(c.out[:], piece)
		if _, err := c.w.Write(c.out[:n]); err != nil {
			return err
		}
		piece = piece[n:]
	}
	c.piece.Grow(next + next/8 + 4096) // once the last piece is out
	return nil
}

var unsafeFileChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func fileSafe(id string) string { return unsafeFileChars.ReplaceAllString(id, "_") }

// exportReview is GET /api/sessions/:id/export/review: every value the
// download masks, found by the same walk that masks it.
func exportReview(st Reader, gate exportGate, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rv, err := storeSource{st, gate}.Review(r.Context(), sessionID(r))
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		writeJSON(w, http.StatusOK, rv)
	})
}

// Review is the answer of the export review route.
type Review struct {
	SessionID string          `json:"session_id"`
	Findings  []ReviewFinding `json:"findings"`
	Counts    map[string]int  `json:"counts"` // distinct values per rule
}

// ReviewFinding is one distinct value the export masks.
type ReviewFinding struct {
	Rule        string        `json:"rule"`
	Confidence  string        `json:"confidence"` // definite or candidate
	Placeholder string        `json:"placeholder"`
	Preview     string        `json:"preview"` // only the ends of the value
	Where       []ReviewPlace `json:"where"`
}

// ReviewPlace is where a value was seen: a step (by seq) and field, or a
// field of the session.
type ReviewPlace struct {
	Seq   *int64 `json:"seq,omitempty"`
	Field string `json:"field"`
}

func reviewOf(id string, m *redact.Masker) Review {
	rv := Review{SessionID: id, Findings: []ReviewFinding{}, Counts: m.Counts()}
	for _, f := range m.Findings() {
		rf := ReviewFinding{Rule: f.Rule, Confidence: string(f.Confidence), Placeholder: f.Placeholder, Preview: f.Preview}
		for _, w := range f.Where {
			rf.Where = append(rf.Where, parsePlace(w))
		}
		rv.Findings = append(rv.Findings, rf)
	}
	return rv
}

func parsePlace(label string) ReviewPlace {
	if seq, field, ok := redact.StepPlace(label); ok {
		return ReviewPlace{Seq: &seq, Field: field}
	}
	return ReviewPlace{Field: label}
}

// exportBudget is how many bytes of steps the export reads at a time.
const exportBudget = 4 << 20

// exportWalk reads a session for the export a turn and a few steps at a
// time, masking every value as it goes, in the order the report shows
// them. The download and the review both walk it, so they number the
// placeholders alike and cannot disagree.
type exportWalk struct {
	st    Reader
	m     *redact.Masker
	d     store.SessionDetail        // header, summary, report, notes and turns, masked; no steps
	notes map[int64][]views.NoteView // the masked notes, by step
	// turnEnds is the time of each turn's last step, by turn id.
	turnEnds map[string]time.Time
	err      error // the first failure; the walk stops there
	// images includes the steps' images in the download, which redaction
	// cannot look into; without it each is named and left out.
	images bool
	// outline gives the Markdown report's steps their lines alone.
	outline bool
}

// newExportWalk starts the walk of session id; keep lists the placeholders
// of candidate values left unmasked (redact.Masker.Keep).
func newExportWalk(ctx context.Context, st Reader, id string, keep []string) (*exportWalk, error) {
	// Each turn's first and last step, for the time its heading says it
	// took (the walk reads a turn's steps after writing its heading), let
	// go before masking: the masker numbers values in the order the walk
	// meets them.
	d, err := st.Detail(ctx, id, store.DetailQuery{Steps: 1, Head: 1})
	if err != nil {
		return nil, err
	}
	w := &exportWalk{st: st, d: d, turnEnds: map[string]time.Time{}}
	for _, s := range d.Steps {
		if at, ok := store.ParseTimestamp(s.At); ok {
			w.turnEnds[s.TurnID] = at // in order: the last is the turn's last
		}
	}
	w.d.Steps, w.d.Gaps = nil, nil
	w.m = redact.MaskSession(&w.d, keep)
	w.notes = notesBySeq(noteViews(w.d.Notes))
	return w, nil
}

// turns yields each turn and, as they are ranged over, its steps, masked.
// Before each turn and step it calls pause (nil: none), which sends what
// was rendered so far and is told the bytes of text coming next; a failure
// of pause or of a read ends the walk and is kept in w.err.
func (w *exportWalk) turns(ctx context.Context, pause func(next int) error) iter.Seq[views.ExportTurn] {
	step := func(next int) bool {
		if w.err == nil && pause != nil {
			w.err = pause(next)
		}
		return w.err == nil
	}
	actors := actorsByID(w.d.Actors)
	tokens, problems := turnTokens(w.d.Usage), make(map[string]views.TurnProblems, len(w.d.Report.Turns))
	for _, t := range w.d.Report.Turns {
		problems[t.TurnID] = turnProblems(t)
	}
	marks := newSegmentMarks(w.d.Segments)
	return func(yield func(views.ExportTurn) bool) {
		for _, t := range w.d.Turns {
			page := w.page(ctx, t.ID, -1)
			if !step(0) {
				return
			}
			et := views.ExportTurn{Number: t.Index, Mode: shorten(t.Mode, lineChars), At: t.StartedAt, Duration: between(t.StartedAt, w.turnEnds[t.ID]),
				Tokens: tokens[t.ID], Problems: problems[t.ID], Divider: marks.turn(t)}
			// The turn's prompt is its first step when that is a user
			// message: the walk does not look ahead.
			if len(page) > 0 && page[0].Type == store.TypeMessage && page[0].Payload.Role == "user" {
				et.Prompt = shorten(deref(page[0].Payload.Text), promptChars)
			}
			et.Steps = func(yield func(views.StepView) bool) {
				for len(page) > 0 {
					last := page[len(page)-1].Seq
					var next []store.Step
					for i := range page {
						if !step(textBytes(page[i])) {
							return
						}
						// A step's time runs to the next one's, as on the
						// page: the last of a page reads the next page
						// first (the others are let go by then).
						following := page[i+1:]
						if len(following) == 0 {
							if next = w.page(ctx, t.ID, last); w.err != nil {
								return
							}
							following = next
						}
						v := stepView(page[i], 0, w.d.Workspace.Root)
						if len(following) > 0 {
							if at, ok := store.ParseTimestamp(following[0].At); ok {
								v.Duration = between(page[i].At, at)
							}
						}
						exportImages(v.Images, w.images)
						setActor(&v, actors[page[i].ActorID], page[i].ActorID)
						v.Notes = w.notes[v.Seq]
						v.Divider = marks.step(v)
						if !yield(v) {
							return
						}
						page[i] = store.Step{} // let it go before the next is read
					}
					page = next
				}
			}
			if !yield(et) || !step(0) {
				return
			}
		}
	}
}

// textBytes is the size of a step's recorded texts.
func textBytes(s store.Step) int {
	n := len(s.Payload.Raw) + len(s.Payload.StructuredPatch) + len(s.Payload.Path)
	for _, t := range []*string{s.Payload.Command, s.Payload.Cwd, s.Payload.Stdout, s.Payload.Stderr, s.Payload.OutputRef,
		s.Payload.OldString, s.Payload.NewString, s.Payload.Text, s.Payload.TextRef} {
		if t != nil {
			n += len(*t)
		}
	}
	if s.Error != nil {
		n += len(s.Error.Message)
	}
	for _, f := range s.Flags {
		n += len(f.Reason)
	}
	return n
}

// page reads and masks the steps of a turn after seq after.
func (w *exportWalk) page(ctx context.Context, turnID string, after int64) []store.Step {
	if w.err != nil {
		return nil
	}
	steps, err := redact.ReadTurnSteps(ctx, w.m, w.st, w.d.ID, turnID, after, exportBudget)
	if err != nil {
		w.err = err
		return nil
	}
	return steps
}
