package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"

	"github.com/agentreview/service/redact"
	"github.com/agentreview/service/store"
	"github.com/agentreview/service/views"
)

// Limits of the review app (spec section 8).
const (
	pageSessions = 100     // sessions per page of the list
	recentTurns  = 30      // turns shown at first
	earlierTurns = 50      // turns added by the earlier-turns control
	updateTurns  = 50      // turns a live update redraws; more changed, the page is read again
	recentSteps  = 200     // of a turn's steps after its first, shown at first
	earlierSteps = 500     // steps of a turn added by the earlier-steps control
	headChars    = 2048    // of each text, in the first delivery
	shownChars   = 100_000 // of each text, once a step is opened
)

// PageSource is what the review app's pages read: the store in the
// server, the core's JSON routes in `service dev`.
type PageSource interface {
	List(ctx context.Context, q store.ListQuery) (store.SessionList, error)
	Detail(ctx context.Context, id string, q store.DetailQuery) (store.SessionDetail, error)
	Review(ctx context.Context, id string) (Review, error)
	FileChanges(ctx context.Context, id string) ([]store.FileChange, error)
	NextProblem(ctx context.Context, id string, seq int64, back bool) (next int64, ok bool, err error)
	Searcher
	store.UsageReporter
}

// storeSource serves the pages from the store itself.
type storeSource struct {
	Reader
	exports exportGate
}

// Review walks the session as the export does, without rendering it.
func (s storeSource) Review(ctx context.Context, id string) (Review, error) {
	if !s.exports.enter() {
		return Review{}, errExportsBusy
	}
	defer s.exports.leave()
	return ReviewSecrets(ctx, s.Reader, id)
}

// ReviewSecrets is every value the export of session id masks, found by
// the walk that masks the download: the export panel's list, and each
// session's lines of `service secrets`.
func ReviewSecrets(ctx context.Context, st Reader, id string) (Review, error) {
	w, err := newExportWalk(ctx, st, id, nil)
	if err != nil {
		return Review{}, err
	}
	for t := range w.turns(ctx, nil) {
		for range t.Steps {
		}
	}
	if w.err != nil {
		return Review{}, w.err
	}
	return reviewOf(w.d.ID, w.m), nil
}

// pageURLs are the review app's routes for one session.
type pageURLs struct{ id string }

func (u pageURLs) with(path string, kv ...string) string {
	v := url.Values{"id": {u.id}}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return path + "?" + v.Encode()
}

func (u pageURLs) step(seq int64, all bool) string {
	if all {
		return u.with("/session/step", "seq", strconv.FormatInt(seq, 10), "all", "1")
	}
	return u.with("/session/step", "seq", strconv.FormatInt(seq, 10))
}

// linkSteps adds the review app's step routes to a session view. partial
// marks the steps with a cut text as partial, for opening to load the rest.
func linkSteps(v *views.SessionView, id string, partial bool, open map[int64]bool) {
	u := pageURLs{id}
	for i := range v.Turns {
		t := &v.Turns[i]
		for _, steps := range t.Runs() {
			for j := range steps {
				linkStep(&steps[j], u, partial, open)
			}
		}
		for j := range t.Earlier {
			g := &t.Earlier[j].Gap
			g.Next = min(g.Steps, earlierSteps)
			g.URL = u.with("/session/steps", "turn", t.ID,
				"after", strconv.FormatInt(g.After, 10), "before", strconv.FormatInt(g.Before, 10))
		}
	}
}

func linkStep(s *views.StepView, u pageURLs, partial bool, open map[int64]bool) {
	s.BodyURL, s.AllURL = u.step(s.Seq, false), u.step(s.Seq, true)
	s.MarkdownURL = "/api/sessions/" + url.PathEscape(u.id) + "/export?format=md&step=" + strconv.FormatInt(s.Seq, 10)
	s.Open = open[s.Seq]
	s.Partial = partial && (s.IsCut() || len(s.Images) > 0) // images load with the details
	for i := range s.Images {
		s.Images[i].Src, s.Images[i].Data = imageURL(u.id, s.Seq, s.Images[i].N), ""
	}
	for i := range s.Fields {
		for j := range s.Fields[i].Files {
			f := &s.Fields[i].Files[j]
			f.Href = filterHref(u.id, "path", f.Path)
		}
	}
}

// timelineView is d as the session page and its fragments show it: each
// turn in its segment (segmentsBefore), its steps linked to their routes,
// the steps in open rendered open, and the notes the reader may edit.
func timelineView(r *http.Request, src PageSource, d store.SessionDetail, demo bool, open map[int64]bool) (views.SessionView, error) {
	before, err := segmentsBefore(r.Context(), src, d)
	if err != nil {
		return views.SessionView{}, err
	}
	v := sessionView(d, headChars, before)
	linkSteps(&v, d.ID, true, open)
	attachNotes(&v, !demo, signedInUser(r))
	return v, nil
}

// sessionPage is GET /session?id=: the session view, its last turns.
// step= shows the turns around that step's instead, and the steps around it
// in a turn of many: a link to a step not shown. turns=all (without step=)
// shows every turn. On a team server (team) the owner's delete
// is for the whole team, and only the owner is offered it.
func sessionPage(src PageSource, demo, team bool, reviewer string, resume func(kind, id, dir string) string, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("id")
		q := store.DetailQuery{Turns: recentTurns, Steps: recentSteps, Head: headChars}
		q.Around, _ = strconv.ParseInt(r.URL.Query().Get("step"), 10, 64)
		if r.URL.Query().Get("turns") == "all" && q.Around <= 0 {
			q.Turns = 0
		}
		d, err := src.Detail(r.Context(), id, q)
		if err != nil {
			writePageError(w, r, log, err)
			return
		}
		files, err := src.FileChanges(r.Context(), id)
		if err != nil {
			writePageError(w, r, log, err)
			return
		}
		v, err := timelineView(r, src, d, demo, nil)
		if err != nil {
			writePageError(w, r, log, err)
			return
		}
		u := pageURLs{d.ID}
		p := views.SessionPage{
			Changes: changesView(d.ID, d.Workspace.Root, files, 0, firstChanges),
			Session: v, Stamp: d.UpdatedAt, UpdatesURL: u.with("/session/updates"),
			ExportURL: "/api/sessions/" + url.PathEscape(d.ID) + "/export", PanelURL: u.with("/session/export-panel"),
			Demo: demo, Team: team, Review: reviewForms(r, d.ID, reviewer, demo),
		}
		if p.Review.VerdictURL != "" {
			if p.Review.Next, err = nextUnreviewedLink(r.Context(), src, d.Session); err != nil {
				writePageError(w, r, log, err)
				return
			}
		}
		// On a team server only the session's owner may delete it
		// (deleteSession); nobody else is offered a button that answers 403.
		if !demo && (!team || signedInUser(r) == d.OwnerID) {
			p.DeleteURL = "/api/sessions/" + url.PathEscape(d.ID)
		}
		if resume != nil {
			p.Resume = resume(d.Agent.Kind, d.ID, d.Workspace.Root)
		}
		p.Earlier, p.EarlierURL = earlierTurnsLink(d)
		p.Later, p.LaterURL = laterTurnsLink(d)
		render(w, r, log, http.StatusOK, views.Session(p))
	})
}

// earlierTurnsLink is how many turns come before those d holds, and the
// route that reads the 50 before them; 0 and "" when d holds the first.
func earlierTurnsLink(d store.SessionDetail) (int, string) {
	if d.Window == nil || d.Window.First == 0 {
		return 0, ""
	}
	return d.Window.First, earlierTurnsURL(d.ID, d.Window.First)
}

// earlierTurnsURL is the route of the 50 turns of session id before turn
// position before.
func earlierTurnsURL(id string, before int) string {
	return pageURLs{id}.with("/session/turns", "before", strconv.Itoa(before))
}

// laterTurnsLink is how many turns come after those d holds (a read of the
// turns around a step, or of some after those), and the route that reads
// the next 50 of them; 0 and "" when d holds the last.
func laterTurnsLink(d store.SessionDetail) (int, string) {
	if d.Window == nil {
		return 0, ""
	}
	end := d.Window.First + len(d.Turns)
	if end >= d.Window.Total {
		return 0, ""
	}
	return d.Window.Total - end, pageURLs{d.ID}.with("/session/turns", "from", strconv.Itoa(end), "to", strconv.Itoa(min(d.Window.Total, end+earlierTurns)))
}

// turnsFragment is GET /session/turns?id=&before=: the 50 turns before turn
// position before, and the control for those before them; or, with
// from=&to=, the turns from position from until position to (at most 50),
// and the control for those after them.
func turnsFragment(src PageSource, demo bool, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := store.DetailQuery{Turns: earlierTurns, Steps: recentSteps, Head: headChars}
		later, from := r.URL.Query().Has("from"), 0
		if later {
			var err error
			from, err = strconv.Atoi(r.URL.Query().Get("from"))
			to, err2 := strconv.Atoi(r.URL.Query().Get("to"))
			if err != nil || err2 != nil || from < 0 || to <= from || to-from > earlierTurns {
				writeError(w, r, log, &statusError{http.StatusBadRequest, fmt.Sprintf("from and to must be turn positions, from below to, at most %d apart", earlierTurns)})
				return
			}
			q.Turns, q.Before = to-from, to
		} else {
			before, err := strconv.Atoi(r.URL.Query().Get("before"))
			if err != nil || before <= 0 {
				writeError(w, r, log, &statusError{http.StatusBadRequest, "before must be a turn position above 0"})
				return
			}
			q.Before = before
		}
		d, err := src.Detail(r.Context(), r.URL.Query().Get("id"), q)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		if later && d.Window != nil && d.Window.First < from {
			// to past the session's last turn: the read ended there, and
			// took turns before from, which the page shows already.
			n := min(from-d.Window.First, len(d.Turns))
			d.Turns, d.Window.First = d.Turns[n:], d.Window.First+n
		}
		v, err := timelineView(r, src, d, demo, nil)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		if later {
			n, next := laterTurnsLink(d)
			render(w, r, log, http.StatusOK, views.TurnsAfter(v.Turns, n, next))
			return
		}
		n, next := earlierTurnsLink(d)
		render(w, r, log, http.StatusOK, views.TurnsBefore(v.Turns, n, next))
	})
}

// earlierStepsFragment is GET /session/steps?id=&turn=&after=&before=:
// the last 500 steps of a turn between the steps of seq after and before,
// which the page shows, and the control for those before them.
func earlierStepsFragment(src PageSource, demo bool, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		after, err := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
		before, err2 := strconv.ParseInt(r.URL.Query().Get("before"), 10, 64)
		if err != nil || err2 != nil || after < 0 || before <= after {
			writeError(w, r, log, &statusError{http.StatusBadRequest, "after and before must be the seqs of steps, after the lower"})
			return
		}
		turn := r.URL.Query().Get("turn")
		if turn == "" {
			writeError(w, r, log, &statusError{http.StatusBadRequest, "turn must be a turn's id"})
			return
		}
		// The read takes the page's step of seq before too, so that the
		// step before it has its time until it; the page shows it already.
		q := store.DetailQuery{Turn: turn, Steps: earlierSteps + 1, StepsAfter: &after, StepsBefore: before + 1, Head: headChars}
		if before == math.MaxInt64 {
			q.Steps, q.StepsBefore = earlierSteps, before
		}
		d, err := src.Detail(r.Context(), r.URL.Query().Get("id"), q)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		if len(d.Turns) == 0 {
			writeError(w, r, log, store.ErrNotFound)
			return
		}
		v, err := timelineView(r, src, d, demo, nil)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		t := v.Turns[0]
		if n := len(t.Steps); n > 0 && t.Steps[n-1].Seq == before {
			t.Steps = t.Steps[:n-1]
		}
		render(w, r, log, http.StatusOK, views.StepsBefore(t))
	})
}

// updatesFragment is GET /session/updates?id=&since=&open=&from=: the
// summary, report and every turn changed since the page's stamp, with the
// steps the reader has open rendered open. A turn of many steps comes with
// its last steps, or, when the page shows more of it (steps the reader
// added, the steps around a linked one), every step from those it showed
// first (from), whose redrawn turn app.js gives the steps shown before
// them. The new stamp is in X-Session-Stamp.
// Every change to a session moves its stamp (a push, an end, a verdict, a
// note), so an unmoved stamp is 204 with nothing: the refresh a stream's
// connecting makes does not redraw the page under the reader's hand. More
// than updateTurns turns changed is 205: the page reloads.
func updatesFragment(src PageSource, demo bool, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		since, ok := store.ParseTimestamp(r.URL.Query().Get("since"))
		if !ok {
			writeError(w, r, log, &statusError{http.StatusBadRequest, "since must be the page's updated_at stamp"})
			return
		}
		q := store.DetailQuery{Since: since.UnixMicro(), MostChanged: updateTurns, Steps: recentSteps, Head: headChars}
		if s := r.URL.Query().Get("from"); s != "" {
			q.From = parseSeqs(s, maxSeqs)
		}
		d, err := src.Detail(r.Context(), r.URL.Query().Get("id"), q)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		w.Header().Set("X-Session-Stamp", d.UpdatedAt)
		if stamp, _ := store.ParseTimestamp(d.UpdatedAt); stamp.Equal(since) {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if d.Window != nil && d.Window.Changed > len(d.Turns) {
			// More turns changed than an update redraws (an import
			// rewrote the session, a page woke after hours): the page
			// is read again, as big as a first view, not this answer.
			w.WriteHeader(http.StatusResetContent)
			return
		}
		files, err := src.FileChanges(r.Context(), d.ID)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		open := map[int64]bool{}
		for _, seq := range parseSeqs(r.URL.Query().Get("open"), maxSeqs) {
			open[seq] = true
		}
		v, err := timelineView(r, src, d, demo, open)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		var keep views.KeptTurns
		if d.Window != nil && d.Window.Total > 2*recentTurns {
			total := d.Window.Total
			keep = views.KeptTurns{Turns: recentTurns, Earlier: total - recentTurns, URL: earlierTurnsURL(d.ID, total-recentTurns)}
		}
		render(w, r, log, http.StatusOK, views.Updates(v, v.Turns, changesView(d.ID, d.Workspace.Root, files, 0, firstChanges), keep))
	})
}

// stepFragment is GET /session/step?id=&seq=[&all=1]: a step's details,
// its texts cut at 100,000 characters unless all is set.
func stepFragment(src PageSource, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seq, err := strconv.ParseInt(r.URL.Query().Get("seq"), 10, 64)
		if err != nil {
			writeError(w, r, log, &statusError{http.StatusBadRequest, "seq must be a step's seq"})
			return
		}
		q := store.DetailQuery{Seq: &seq, Head: shownChars}
		if r.URL.Query().Get("all") != "" {
			q.Head = 0
		}
		d, err := src.Detail(r.Context(), r.URL.Query().Get("id"), q)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		if len(d.Steps) == 0 {
			writeError(w, r, log, store.ErrNotFound)
			return
		}
		s := stepView(d.Steps[0], q.Head, d.Workspace.Root)
		linkStep(&s, pageURLs{d.ID}, false, nil)
		render(w, r, log, http.StatusOK, views.StepDetail(s))
	})
}

// problemAnswer is what nextProblem answers: the seq of the step, none
// when the session has no failed or flagged step.
type problemAnswer struct {
	Seq *int64 `json:"seq,omitempty"`
}

// nextProblem is GET /session/problem?id=&after=N (or &before=N): the seq
// of the session's first failed or flagged step after step N (the last
// before it), going round at either end. The e and E keys ask it when the
// page leaves steps out, so they reach every problem, not only those
// shown.
func nextProblem(src PageSource, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		back, param, end := false, "after", int64(-1)
		if q.Has("before") {
			back, param, end = true, "before", math.MaxInt64
		}
		seq, err := strconv.ParseInt(q.Get(param), 10, 64)
		if err != nil || q.Has("after") && q.Has("before") {
			writeError(w, r, log, &statusError{http.StatusBadRequest, "give after or before, a step's seq"})
			return
		}
		id := q.Get("id")
		next, ok, err := src.NextProblem(r.Context(), id, seq, back)
		if err == nil && !ok { // round from the other end
			next, ok, err = src.NextProblem(r.Context(), id, end, back)
		}
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		var a problemAnswer
		if ok {
			a.Seq = &next
		}
		writeJSON(w, http.StatusOK, a)
	})
}

// exportPanelFragment is GET /session/export-panel?id=: every value the
// export masks, from the same review as the JSON route, then the download.
func exportPanelFragment(src PageSource, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("id")
		rv, err := src.Review(r.Context(), id)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		p := views.ExportPanel{ExportURL: "/api/sessions/" + url.PathEscape(id) + "/export"}
		for _, f := range rv.Findings {
			pf := views.PanelFinding{Rule: f.Rule, Confidence: f.Confidence, Preview: f.Preview, Placeholder: f.Placeholder,
				Keepable: f.Confidence == string(redact.Candidate)}
			for _, w := range f.Where {
				place := views.Place{Label: views.FieldLabel(w.Field)}
				if w.Seq != nil {
					seq := strconv.FormatInt(*w.Seq, 10)
					place = views.Place{Label: "step " + seq + " " + views.FieldLabel(w.Field), Href: "#" + stepDOMID(*w.Seq)}
				}
				pf.Where = append(pf.Where, place)
			}
			p.Findings = append(p.Findings, pf)
		}
		render(w, r, log, http.StatusOK, views.ExportPanelList(p))
	})
}

// writePageError answers a page request: a missing session is a page that
// says so, with 404.
func writePageError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	if errors.Is(err, store.ErrNotFound) {
		render(w, r, log, http.StatusNotFound, views.Missing("This session is not in the service: it was deleted, or never recorded."))
		return
	}
	writeError(w, r, log, err)
}
