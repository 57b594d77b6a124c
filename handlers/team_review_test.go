package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/agentreview/service/store"
)

// teamWrite sends a review write as user (signed in by the proxy's
// header, or by token when tok is set) and decodes the answer into out.
func (s *teamServer) teamWrite(method, path, body, user, tok string, out any) (int, string) {
	s.t.Helper()
	hdr := []string{"X-Forwarded-User", user}
	if tok != "" {
		hdr = []string{"Authorization", "Bearer " + tok}
	}
	var b []byte
	if body != "" {
		b = []byte(body)
	}
	res, text := s.do(method, path, b, hdr...)
	if out != nil && res.StatusCode < 300 {
		if err := json.Unmarshal([]byte(text), out); err != nil {
			s.t.Fatalf("%s %s answer %q: %v", method, path, text, err)
		}
	}
	return res.StatusCode, text
}

func (s *teamServer) detail(id string) store.SessionDetail {
	s.t.Helper()
	d, err := s.store.Detail(context.Background(), id, store.DetailQuery{})
	if err != nil {
		s.t.Fatalf("Detail(%s) = %v", id, err)
	}
	return d
}

// TestTeamVerdictBySignedInUser: on a team server a verdict's reviewer is
// the signed-in user, by header or by token, whatever the body names; any
// user may set one; a bad body changes nothing.
func TestTeamVerdictBySignedInUser(t *testing.T) {
	s := newTeamServer(t, Team{})
	alice, bob := "alice@example.com", "bob"
	tok := s.mustToken(alice)
	s.push(tok, newBatch("s1"), http.StatusCreated)

	for _, c := range []struct{ user, tok, body string }{
		{bob, "", `{"state":"approved","note":"fine","reviewer":"mallory"}`}, // bob sets alice's session's verdict, naming someone else
		{alice, tok, `{"state":"needs_attention"}`},                          // by token, naming no one
		{bob, "", `{"state":"reviewed","reviewer":"` + bob + `"}`},           // naming themself
	} {
		var want store.Verdict
		if err := json.Unmarshal([]byte(c.body), &want); err != nil {
			t.Fatal(err)
		}
		want.Reviewer = c.user
		var got verdictAnswer
		if code, text := s.teamWrite(http.MethodPut, "/api/sessions/s1/verdict", c.body, c.user, c.tok, &got); code != http.StatusOK {
			t.Fatalf("PUT verdict %s as %s = %d %s; want 200", c.body, c.user, code, text)
		}
		if got.Verdict == nil || *got.Verdict != want {
			t.Errorf("PUT verdict %s as %s answered %+v; want %+v", c.body, c.user, got.Verdict, want)
		}
		if d := s.detail("s1"); d.Verdict == nil || *d.Verdict != want {
			t.Errorf("stored verdict after %s as %s = %+v; want %+v", c.body, c.user, d.Verdict, want)
		}
	}

	before := s.detail("s1").Verdict
	for _, body := range []string{`{"reviewer":"bob"}`, `{"state":"ok","reviewer":7}`, `{"state":"ok","reviewer":"` + strings.Repeat("x", store.MaxNameChars+1) + `"}`, `[]`} {
		if code, text := s.teamWrite(http.MethodPut, "/api/sessions/s1/verdict", body, bob, "", nil); code != http.StatusBadRequest {
			t.Errorf("PUT verdict %s = %d %s; want 400", body, code, text)
		}
	}
	if after := s.detail("s1").Verdict; *after != *before {
		t.Errorf("verdict after bad bodies = %+v; want %+v kept", after, before)
	}
}

// TestTeamNotesByAuthor: a note's author is the signed-in user whatever
// the body says (or with no author in the body); only its author may edit
// or delete it (403 otherwise, the note kept); the page names the user
// instead of asking for a name and offers Edit and Delete only on the
// user's own notes.
func TestTeamNotesByAuthor(t *testing.T) {
	s := newTeamServer(t, Team{})
	alice, bob := "alice@example.com", "bob"
	tok := s.mustToken(alice)
	s.push(tok, newBatch("s1"), http.StatusCreated)

	var byBob, byAlice, byAliceTok store.Note
	for _, c := range []struct {
		user, tok, body string
		out             *store.Note
	}{
		{bob, "", `{"seq":2,"author":"` + alice + `","text":"bob, naming alice"}`, &byBob},
		{alice, "", `{"seq":3,"text":"alice, no author"}`, &byAlice},
		{alice, tok, `{"seq":4,"author":"someone","text":"alice by token"}`, &byAliceTok},
	} {
		code, text := s.teamWrite(http.MethodPost, "/api/sessions/s1/notes", c.body, c.user, c.tok, c.out)
		if code != http.StatusCreated || c.out.Author != c.user {
			t.Fatalf("POST note %s as %s = %d %s; want 201 by %s", c.body, c.user, code, text, c.user)
		}
	}
	for _, body := range []string{`{"seq":2,"author":7,"text":"x"}`, `{"seq":2,"text":""}`, `{"seq":99,"text":"no step"}`} {
		if code, text := s.teamWrite(http.MethodPost, "/api/sessions/s1/notes", body, bob, "", nil); code != http.StatusBadRequest {
			t.Errorf("POST note %s = %d %s; want 400", body, code, text)
		}
	}
	stored := s.detail("s1").Notes
	if len(stored) != 3 {
		t.Fatalf("notes stored = %+v; want the 3 added", stored)
	}
	for _, n := range stored {
		want := map[int64]string{byBob.ID: bob, byAlice.ID: alice, byAliceTok.ID: alice}[n.ID]
		if n.Author != want {
			t.Errorf("stored note %d by %q; want %q", n.ID, n.Author, want)
		}
	}

	// Someone else's note: refused, with the note as it was.
	notePath := func(n store.Note) string { return fmt.Sprintf("/api/sessions/s1/notes/%d", n.ID) }
	for _, c := range []struct{ method, user, tok string }{
		{http.MethodPut, alice, ""}, {http.MethodPut, alice, tok}, {http.MethodDelete, alice, ""}, {http.MethodDelete, alice, tok},
	} {
		code, text := s.teamWrite(c.method, notePath(byBob), `{"author":"`+bob+`","text":"taken over"}`, c.user, c.tok, nil)
		if code != http.StatusForbidden || !strings.Contains(text, errNotYourNote.msg) {
			t.Errorf("%s bob's note as %s = %d %s; want 403 %q", c.method, c.user, code, text, errNotYourNote.msg)
		}
	}
	if got := s.detail("s1").Notes; !slices.Equal(got, stored) {
		t.Errorf("notes after refused edits = %+v; want %+v", got, stored)
	}
	// A note the session does not have is not found, for its author too.
	for _, method := range []string{http.MethodPut, http.MethodDelete} {
		if code, text := s.teamWrite(method, "/api/sessions/s1/notes/99999", `{"text":"x"}`, bob, "", nil); code != http.StatusNotFound {
			t.Errorf("%s unknown note = %d %s; want 404", method, code, text)
		}
	}

	// The page: alice sees her name, no name to type, and Edit only on hers.
	res, page := s.do(http.MethodGet, "/session?id=s1", nil, "X-Forwarded-User", alice)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /session as alice = %d", res.StatusCode)
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	if got := doc.Find(`[data-testid="reviewer-signed-in"]`).Text(); got != alice {
		t.Errorf("verdict form names %q; want %q", got, alice)
	}
	if got := doc.Find(`[data-testid="note-author-signed-in"]`).Text(); got != alice {
		t.Errorf("note dialog names %q; want %q", got, alice)
	}
	if n := doc.Find(`[data-testid="reviewer-input"], [data-testid="note-author-input"]`).Length(); n != 0 {
		t.Errorf("page has %d name inputs; want none on a team server", n)
	}
	var editable []string
	doc.Find(`[data-testid="step-note"]`).Each(func(_ int, n *goquery.Selection) {
		if n.Find(`[data-testid="note-edit"]`).Length() > 0 {
			editable = append(editable, n.AttrOr("data-note-id", ""))
		}
		if n.Find(`[data-testid="note-edit"]`).Length() != n.Find(`[data-testid="note-delete"]`).Length() {
			t.Errorf("note %s: Edit and Delete not offered together", n.AttrOr("data-note-id", ""))
		}
	})
	slices.Sort(editable)
	want := []string{fmt.Sprint(byAlice.ID), fmt.Sprint(byAliceTok.ID)}
	slices.Sort(want)
	if doc.Find(`[data-testid="step-note"]`).Length() != 3 || !slices.Equal(editable, want) {
		t.Errorf("notes offering Edit to alice: %v of %d; want %v", editable, doc.Find(`[data-testid="step-note"]`).Length(), want)
	}

	// Its author edits (the body's author overridden) and deletes it.
	var edited store.Note
	if code, text := s.teamWrite(http.MethodPut, notePath(byBob), `{"author":"`+alice+`","text":"rewritten"}`, bob, "", &edited); code != http.StatusOK || edited.Author != bob || edited.Text != "rewritten" {
		t.Errorf("PUT own note = %d %s; want 200 by %s, rewritten", code, text, bob)
	}
	if code, text := s.teamWrite(http.MethodDelete, notePath(byAliceTok), "", alice, "", nil); code != http.StatusOK {
		t.Errorf("DELETE own note = %d %s; want 200", code, text)
	}
	var ids []int64
	for _, n := range s.detail("s1").Notes {
		ids = append(ids, n.ID)
	}
	if !slices.Equal(ids, []int64{byBob.ID, byAlice.ID}) {
		t.Errorf("notes left = %v; want %v", ids, []int64{byBob.ID, byAlice.ID})
	}
}

// TestLocalReviewNames: the local service keeps its one user's ways: the
// body names the reviewer and the author (a note needs one), anyone edits
// any note, even under a user header, and the page asks for a name.
func TestLocalReviewNames(t *testing.T) {
	s, srv, note := reviewService(t)
	hdr := map[string]string{"X-Forwarded-User": "mallory"}
	if code, body := call(t, srv, http.MethodPost, "/api/sessions/s1/notes", `{"seq":2,"text":"no author"}`, hdr); code != http.StatusBadRequest || !strings.Contains(body, "author") {
		t.Errorf("POST note without author = %d %s; want 400 naming author", code, body)
	}
	if code, body := call(t, srv, http.MethodPut, "/api/sessions/s1/notes/"+note, `{"author":"Bob","text":"Bob's now"}`, hdr); code != http.StatusOK || !strings.Contains(body, `"author":"Bob"`) {
		t.Errorf("PUT Ann's note as Bob = %d %s; want 200 by Bob", code, body)
	}
	if code, body := call(t, srv, http.MethodPut, "/api/sessions/s1/verdict", `{"state":"reviewed","reviewer":"Cy"}`, hdr); code != http.StatusOK {
		t.Errorf("PUT verdict = %d %s; want 200", code, body)
	}
	d, err := s.store.Detail(context.Background(), "s1", store.DetailQuery{})
	if err != nil || d.Verdict == nil || d.Verdict.Reviewer != "Cy" {
		t.Errorf("verdict = %+v, %v; want reviewer Cy from the body", d.Verdict, err)
	}
	code, page := call(t, srv, http.MethodGet, "/session?id=s1", "", nil)
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(page))
	if code != http.StatusOK || err != nil {
		t.Fatalf("GET /session = %d, %v", code, err)
	}
	if doc.Find(`[data-testid="reviewer-input"]`).Length() != 1 || doc.Find(`[data-testid="note-author-input"]`).Length() != 1 ||
		doc.Find(`[data-testid="reviewer-signed-in"], [data-testid="note-author-signed-in"]`).Length() != 0 {
		t.Errorf("the local page should ask for the reviewer's and the author's names, and name no signed-in user")
	}
	if notes, edits := doc.Find(`[data-testid="step-note"]`).Length(), doc.Find(`[data-testid="step-note"] [data-testid="note-edit"]`).Length(); notes == 0 || edits != notes {
		t.Errorf("%d notes, %d with Edit; want Edit on every note", notes, edits)
	}
}

// TestTeamDeleteByOwner: on a team server a session is deleted by its
// owner only, signed in or by token; anyone else gets 403 and the session
// stays as it was.
func TestTeamDeleteByOwner(t *testing.T) {
	s := newTeamServer(t, Team{})
	alice, bob := "alice@example.com", "bob"
	aliceTok, bobTok := s.mustToken(alice), s.mustToken(bob)
	s.push(aliceTok, newBatch("d1"), http.StatusCreated)
	s.push(aliceTok, newBatch("d2"), http.StatusCreated)
	before := s.detail("d1")

	for _, c := range []struct{ user, tok string }{{bob, ""}, {"", bobTok}} {
		code, body := s.teamWrite(http.MethodDelete, "/api/sessions/d1", "", c.user, c.tok, nil)
		if code != http.StatusForbidden || !strings.Contains(body, "owner") {
			t.Errorf("bob's delete of alice's session = %d %s; want 403 naming the owner", code, body)
		}
	}
	if after := s.detail("d1"); after.UpdatedAt != before.UpdatedAt || after.Summary.Steps != before.Summary.Steps {
		t.Errorf("refused deletes changed the session: stamp %s -> %s", before.UpdatedAt, after.UpdatedAt)
	}
	for id, c := range map[string]struct{ user, tok string }{"d1": {alice, ""}, "d2": {"", aliceTok}} {
		if code, body := s.teamWrite(http.MethodDelete, "/api/sessions/"+id, "", c.user, c.tok, nil); code != http.StatusOK {
			t.Errorf("alice's delete of %s = %d %s; want 200", id, code, body)
		}
		if _, err := s.store.Detail(context.Background(), id, store.DetailQuery{}); err == nil {
			t.Errorf("%s still readable after its owner's delete", id)
		}
	}
	if code, _ := s.teamWrite(http.MethodDelete, "/api/sessions/nope", "", alice, "", nil); code != http.StatusNotFound {
		t.Errorf("delete of an unknown session = %d; want 404", code)
	}
}

// TestTeamUnknownText: on a team server (PostgreSQL, which holds neither
// a NUL nor bytes that are not UTF-8) a route asked for a session by such
// an id answers 404, and a filter with such a value keeps nothing, as the
// local service does: never a 500 of a failed query.
func TestTeamUnknownText(t *testing.T) {
	s := newTeamServer(t, Team{})
	tok := s.mustToken("alice")
	s.push(tok, newBatch("s1"), http.StatusCreated)
	as := []string{"X-Forwarded-User", "bob"}
	for _, x := range []string{"%00", "%FF"} {
		for _, c := range []struct {
			method, path, body string
			want               int
		}{
			{http.MethodGet, "/api/sessions/" + x, "", http.StatusNotFound},
			{http.MethodGet, "/api/sessions/" + x + "/changes", "", http.StatusNotFound},
			{http.MethodGet, "/api/sessions/" + x + "/export", "", http.StatusNotFound},
			{http.MethodGet, "/api/sessions/" + x + "/steps/1/images/1", "", http.StatusNotFound},
			{http.MethodPut, "/api/sessions/" + x + "/verdict", `{"state":"approved"}`, http.StatusNotFound},
			{http.MethodDelete, "/api/sessions/" + x + "/verdict", "", http.StatusNotFound},
			{http.MethodPost, "/api/sessions/" + x + "/notes", `{"seq":1,"text":"n"}`, http.StatusNotFound},
			{http.MethodDelete, "/api/sessions/" + x, "", http.StatusNotFound},
			{http.MethodGet, "/session?id=" + x, "", http.StatusNotFound},
			{http.MethodGet, "/session/turns?id=" + x + "&before=1", "", http.StatusNotFound},
			{http.MethodGet, "/session/steps?id=" + x + "&turn=" + x + "&after=1&before=2", "", http.StatusNotFound},
			{http.MethodGet, "/api/sessions?agent=" + x + "&workspace=" + x, "", http.StatusOK},
			{http.MethodGet, "/?verdict=" + x + "&owner=" + x, "", http.StatusOK},
			{http.MethodGet, "/api/usage?agent=" + x, "", http.StatusOK},
			{http.MethodGet, "/usage?agent=" + x, "", http.StatusOK},
		} {
			var body []byte
			if c.body != "" {
				body = []byte(c.body)
			}
			res, text := s.do(c.method, c.path, body, as...)
			if res.StatusCode != c.want {
				t.Errorf("%s %s = %d %.200s; want %d", c.method, c.path, res.StatusCode, text, c.want)
			}
			if c.want == http.StatusOK && strings.Contains(text, "Fix the failing test") {
				t.Errorf("%s %s shows s1; want no session", c.method, c.path)
			}
		}
	}
	if d := s.detail("s1"); d.Verdict != nil || len(d.Notes) != 0 {
		t.Errorf("s1 after = verdict %+v, %d notes; want none", d.Verdict, len(d.Notes))
	}
}
