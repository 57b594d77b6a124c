package handlers

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/views"
)

func verdictView(v *store.Verdict) *views.VerdictView {
	if v == nil {
		return nil
	}
	return &views.VerdictView{State: v.State, Note: v.Note, Reviewer: v.Reviewer}
}

func noteViews(notes []store.Note) []views.NoteView {
	out := make([]views.NoteView, len(notes))
	for i, n := range notes {
		out[i] = views.NoteView{ID: n.ID, Seq: n.Seq, StepRef: "#" + stepDOMID(n.Seq), Author: n.Author, Text: n.Text,
			At: n.UpdatedAt, Edited: n.UpdatedAt != n.CreatedAt}
	}
	return out
}

func stepDOMID(seq int64) string { return "step-" + strconv.FormatInt(seq, 10) }

// notesBySeq groups notes by the step they are on.
func notesBySeq(notes []views.NoteView) map[int64][]views.NoteView {
	by := map[int64][]views.NoteView{}
	for _, n := range notes {
		by[n.Seq] = append(by[n.Seq], n)
	}
	return by
}

// attachNotes puts each note under its step among the turns shown, and
// offers the note controls on every step when canNote: Add note, and Edit
// and Delete on every note, or on a team server, whose signed-in user is
// user ("" on the local service), only on the user's own.
func attachNotes(v *views.SessionView, canNote bool, user string) {
	by := notesBySeq(v.Notes)
	for i := range v.Turns {
		for _, steps := range v.Turns[i].Runs() {
			for j := range steps {
				s := &steps[j]
				s.Notes, s.CanNote = by[s.Seq], canNote
				for k := range s.Notes {
					s.Notes[k].Editable = canNote && (user == "" || s.Notes[k].Author == user)
				}
			}
		}
	}
}

// reviewForms are the verdict and note routes of a session for the page's
// forms; none in the demo. On a team server the forms name the signed-in
// user instead of asking for a name.
func reviewForms(r *http.Request, id, reviewer string, demo bool) views.ReviewForms {
	if demo {
		return views.ReviewForms{}
	}
	base := "/api/sessions/" + url.PathEscape(id)
	f := views.ReviewForms{VerdictURL: base + "/verdict", NotesURL: base + "/notes", Reviewer: reviewer, States: store.VerdictStates}
	if user := signedInUser(r); user != "" {
		f.Reviewer, f.User = user, user
	}
	return f
}

// nextUnreviewed is the session a reviewer goes on to from s, its id and
// title: the next one without a verdict in the list of those (newest
// first, ?unreviewed=1), after s, else from the top; no id when no other
// session waits. A page of at most two sessions (ListQuery.PageOnly: no
// counts of the whole store), twice at most.
func nextUnreviewed(ctx context.Context, src PageSource, s store.Session) (id, title string, err error) {
	after := ""
	if at, ok := store.ParseTimestamp(s.StartedAt); ok {
		after = store.ListCursor(store.StartedNS(at), s.ID)
	}
	for _, from := range []string{after, ""} {
		l, err := src.List(ctx, store.ListQuery{Unreviewed: true, After: from, Limit: 2, PageOnly: true})
		if err != nil {
			return "", "", err
		}
		for _, o := range l.Sessions {
			if o.ID != s.ID {
				return o.ID, cmp.Or(o.Summary.Title, o.ID), nil
			}
		}
	}
	return "", "", nil
}

// nextUnreviewedLink is the link a session's page shows to the session a
// reviewer goes on to (nextUnreviewed), titled as found now; nil when
// none waits. Followed, it asks again (nextUnreviewedPage), so it never
// leads to a session another reviewer or tab judged since.
func nextUnreviewedLink(ctx context.Context, src PageSource, s store.Session) (*views.SessionLink, error) {
	id, title, err := nextUnreviewed(ctx, src, s)
	if id == "" || err != nil {
		return nil, err
	}
	return &views.SessionLink{Title: shorten(title, lineChars), Href: pageURLs{s.ID}.with("/session/next")}, nil
}

// verdictChips filter the list by verdict: any, the sessions not reviewed
// yet, then each state the store holds, each with its count under the
// list's other filters; none until a session has a verdict or the filter
// is set. A state filtered on that no session has keeps a chip, so the
// filter shows. href is the list with a state, or with unreviewed "1".
func verdictChips(l store.SessionList, q store.ListQuery, href func(state, unreviewed string) string) []views.VerdictChip {
	active := q.Verdict
	if len(l.Verdicts) == 0 && active == "" && !q.Unreviewed {
		return nil
	}
	chips := []views.VerdictChip{
		{Label: "Any verdict", Href: href("", ""), Active: active == "" && !q.Unreviewed},
		{Label: "Not reviewed", Href: href("", "1"), Count: l.Unreviewed, Active: q.Unreviewed},
	}
	seen := false
	for _, c := range l.Verdicts {
		seen = seen || c.State == active
		chips = append(chips, views.VerdictChip{Label: shorten(c.State, lineChars), Href: href(c.State, ""), Count: c.Sessions, Active: c.State == active})
	}
	if active != "" && !seen {
		chips = append(chips, views.VerdictChip{Label: shorten(active, lineChars), Href: href(active, ""), Active: true})
	}
	return chips
}

// nextUnreviewedPage is GET /session/next?id=: a redirect (303) to the
// session a reviewer goes on to from session id, as nextUnreviewed finds
// it when the link is followed, or to the list of sessions not reviewed
// when none other waits.
func nextUnreviewedPage(src PageSource, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, err := src.Detail(r.Context(), r.URL.Query().Get("id"), store.DetailQuery{Turns: 1, NoSteps: true})
		if err != nil {
			writePageError(w, r, log, err)
			return
		}
		next, _, err := nextUnreviewed(r.Context(), src, d.Session)
		if err != nil {
			writePageError(w, r, log, err)
			return
		}
		to := "/?unreviewed=1"
		if next != "" {
			to = "/session?id=" + url.QueryEscape(next)
		}
		http.Redirect(w, r, to, http.StatusSeeOther)
	})
}
