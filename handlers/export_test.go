package handlers

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/julienschmidt/httprouter"

	"github.com/agentreview/service/pricing"
	"github.com/agentreview/service/redact"
	"github.com/agentreview/service/store"
	"github.com/agentreview/service/views"
)

// Fake secrets, assembled at run time so no scanner mistakes this file
// for a leak.
var (
	fakeAWS    = "AKIA" + "QWERTYUIOPASDFGH"
	fakeGitHub = "gh" + "p_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
	fakeDBPass = "s3cr3t-" + "Passw0rd-9xQ"
)

// secretBatch puts a secret into every kind of field the export shows.
func secretBatch(sid string) obj {
	b := newBatch(sid)
	steps := b["steps"].(arr)
	steps[0].(obj)["payload"].(obj)["text"] = "deploy with key " + fakeAWS + " please"
	cmd := steps[1].(obj)
	cmd["payload"].(obj)["command"] = "curl -H 'Authorization: token " + fakeGitHub + "' https://api.github.com"
	cmd["payload"].(obj)["stdout"] = "AWS_ACCESS_KEY_ID=" + fakeAWS + "\n"
	cmd["payload"].(obj)["stderr"] = "connecting to postgres://app:" + fakeDBPass + "@db.internal:5432/app"
	cmd["payload"].(obj)["cwd"] = "/home/alice/src/app"
	cmd["flags"] = arr{obj{"kind": "secret_in_output", "severity": "danger", "reason": "printed " + fakeGitHub}}
	edit := steps[2].(obj)
	edit["payload"].(obj)["old_string"] = "token = \"" + fakeGitHub + "\""
	edit["payload"].(obj)["new_string"] = "token = os.Getenv(\"GITHUB_TOKEN\")"
	edit["payload"].(obj)["structured_patch"] = arr{obj{"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 1,
		"lines": arr{"-token = \"" + fakeGitHub + "\"", "+token = os.Getenv(\"GITHUB_TOKEN\")"}}}
	edit["error"] = obj{"type": "tool_error", "message": "could not write " + fakeAWS}
	steps[4].(obj)["payload"].(obj)["raw"] = obj{"url": "https://x.example/?key=" + fakeAWS, "headers": obj{"Authorization": "token " + fakeGitHub}}
	return b
}

func TestExportMasksEverySecret(t *testing.T) {
	s := newTestService(t)
	s.mustPush(secretBatch("s1"), http.StatusCreated)
	// A note, which links to its step.
	if _, err := s.store.AddNote(t.Context(), "s1", store.NoteInput{Seq: 2, Author: "Ann", Text: "check this"}); err != nil {
		t.Fatal(err)
	}

	rec := s.get("/api/sessions/s1/export")
	if rec.Code != http.StatusOK {
		t.Fatalf("export = %d %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("content-type = %q", ct)
	}
	if cd := rec.Header().Get("Content-Disposition"); cd != `attachment; filename="session-s1.html"` {
		t.Errorf("content-disposition = %q", cd)
	}
	page := rec.Body.String()
	for _, secret := range []string{fakeAWS, fakeGitHub, fakeDBPass, "/home/alice"} {
		if strings.Contains(page, secret) {
			t.Errorf("the export still holds %q", secret)
		}
	}
	for _, banned := range []string{"<script", "src=\"http", "href=\"http", "<link"} {
		if strings.Contains(page, banned) {
			t.Errorf("the export is not self-contained: it has %q", banned)
		}
	}
	// A downloaded file has no server to link to: every link is to a
	// place in the file (a step, a finding).
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	if doc.Find(`[data-testid="note-step"][href]`).Length() != 1 {
		t.Errorf("the export's note has no link to its step")
	}
	doc.Find("[href]").Each(func(_ int, e *goquery.Selection) {
		href := e.AttrOr("href", "")
		if !strings.HasPrefix(href, "#") {
			t.Errorf("the export links to %q, outside the file (%s)", href, goquery.NodeName(e))
		} else if doc.Find(`[id="`+strings.TrimPrefix(href, "#")+`"]`).Length() != 1 {
			t.Errorf("the export links to %q, which is no place in it", href)
		}
	})

	rec = s.get("/api/sessions/s1/export/review")
	var rv Review
	if err := json.Unmarshal(rec.Body.Bytes(), &rv); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("review = %d %v", rec.Code, err)
	}
	seen := map[string]int{}
	for _, f := range rv.Findings {
		seen[f.Placeholder]++
		if f.Preview == "" || strings.Contains(f.Preview, fakeAWS) || strings.Contains(f.Preview, fakeGitHub) {
			t.Errorf("finding %+v: preview must keep only the ends", f)
		}
		if !strings.Contains(page, f.Placeholder) {
			t.Errorf("review lists %s, but the download does not use it", f.Placeholder)
		}
		if len(f.Where) == 0 {
			t.Errorf("finding %+v has no place", f)
		}
	}
	for p, n := range seen {
		if n != 1 {
			t.Errorf("placeholder %s listed %d times; want once per distinct secret", p, n)
		}
	}
	for _, rule := range []string{"aws-access-key", "github-token"} {
		if rv.Counts[rule] != 1 {
			t.Errorf("counts[%s] = %d; want 1 distinct value", rule, rv.Counts[rule])
		}
	}
}

func TestExportRefusesAReportThatStillHoldsASecret(t *testing.T) {
	if rule, ok := redact.FirstDefinite(fakeGitHub); !ok {
		t.Fatalf("the fake token must be a definite match for this test to mean anything (rule %q)", rule)
	}
	s := newTestService(t)
	s.mustPush(secretBatch("s1"), http.StatusCreated)
	for _, markdown := range []bool{false, true} {
		export := func(change func(*exportWalk)) (*httptest.ResponseRecorder, error) {
			walk, err := newExportWalk(t.Context(), s.store, "s1", nil)
			if err != nil {
				t.Fatal(err)
			}
			change(walk)
			rec := httptest.NewRecorder()
			start := func() { rec.Header().Set("Content-Disposition", "attachment") }
			return rec, writeExport(t.Context(), &checkedWriter{w: rec, start: start}, walk, time.Now(), markdown)
		}
		if _, err := export(func(*exportWalk) {}); err != nil {
			t.Fatalf("writeExport(masked, markdown %v) = %v; want it to pass", markdown, err)
		}
		// A field the masking step did not see, in the first piece: nothing is sent.
		rec, err := export(func(w *exportWalk) { w.d.Workspace.Repo = "github.com/acme/app?token=" + fakeGitHub })
		if err == nil || !strings.Contains(err.Error(), "github") {
			t.Errorf("writeExport(with an unmasked field, markdown %v) = %v; want it refused naming the rule", markdown, err)
		}
		if rec.Body.Len() != 0 || rec.Header().Get("Content-Disposition") != "" {
			t.Errorf("a refused export (markdown %v) sent %d bytes and headers %v", markdown, rec.Body.Len(), rec.Header())
		}
	}
}

// TestExportMasksShortFieldsOfLaterSteps: a secret in a later step's tool
// name, error type, flag kind, decision or outcome is masked like any
// other text, so the download completes instead of being cut off, and the
// review names each place.
func TestExportMasksShortFieldsOfLaterSteps(t *testing.T) {
	s := newTestService(t)
	b := newBatch("s1")
	steps := b["steps"].(arr)
	steps[4].(obj)["payload"].(obj)["tool_name"] = "fetch " + fakeGitHub
	steps[2].(obj)["outcome"] = "failed"
	steps[2].(obj)["error"] = obj{"type": "denied " + fakeGitHub, "message": "no"}
	steps[1].(obj)["flags"] = arr{obj{"kind": "leak " + fakeGitHub, "severity": "warn", "reason": "r"}}
	steps[3].(obj)["decision"] = "approved by " + fakeGitHub
	steps[3].(obj)["outcome"] = "done " + fakeGitHub
	s.mustPush(b, http.StatusCreated)
	srv := httptest.NewServer(s.handler)
	t.Cleanup(srv.Close)

	// "": the client asks for gzip and decompresses it itself.
	for _, encoding := range []string{"", "identity"} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/sessions/s1/export", nil)
		if encoding != "" {
			req.Header.Set("Accept-Encoding", encoding)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("export (%s): %v", encoding, err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		page := string(body)
		if err != nil || res.StatusCode != http.StatusOK || !strings.Contains(page, "</html>") {
			t.Fatalf("export (%s) = %d, %d bytes, %v; want 200 and the whole report", encoding, res.StatusCode, len(body), err)
		}
		if strings.Contains(page, fakeGitHub) {
			t.Errorf("export (%s) holds the secret", encoding)
		}
		for _, want := range []string{"fetch [github-token-1]", "failed: denied [github-token-1]", "leak [github-token-1]", "approved by [github-token-1]", "done [github-token-1]"} {
			if !strings.Contains(page, want) {
				t.Errorf("export (%s) lacks %q", encoding, want)
			}
		}
	}

	var rv Review
	rec := s.get("/api/sessions/s1/export/review")
	if err := json.Unmarshal(rec.Body.Bytes(), &rv); err != nil || rec.Code != http.StatusOK || len(rv.Findings) != 1 {
		t.Fatalf("review = %d %s; want one finding", rec.Code, rec.Body)
	}
	var where []string
	for _, p := range rv.Findings[0].Where {
		if p.Seq == nil {
			where = append(where, p.Field)
		} else {
			where = append(where, fmt.Sprintf("%d %s", *p.Seq, p.Field))
		}
	}
	// The tool's name is also the report's (its Other tools).
	want := []string{"report.tools.tool", "2 flags.kind", "3 error.type", "4 decision", "4 outcome", "5 payload.tool_name"}
	if strings.Join(where, ", ") != strings.Join(want, ", ") {
		t.Errorf("review places = %v; want %v", where, want)
	}
}

// TestExportCutOffWhenALaterPieceHoldsASecret: a secret that only the
// rendering makes whole, in a step after the first piece was sent, ends
// the download early, so the client sees it fail rather than a
// whole-looking report. (Masked whole, the outcome below holds no key:
// the key runs on into more letters; cut to a line, it ends at the key.)
func TestExportCutOffWhenALaterPieceHoldsASecret(t *testing.T) {
	s := newTestService(t)
	b := newBatch("s1")
	outcome := strings.Repeat("a", lineChars-len(fakeAWS)-1) + " " + fakeAWS + "ZZZZ"
	b["steps"].(arr)[4].(obj)["outcome"] = outcome
	s.mustPush(b, http.StatusCreated)
	if _, ok := redact.FirstDefinite(redact.NewMasker("").Mask(outcome, "t")); ok {
		t.Fatal("the outcome must be clean once masked for this test to mean anything")
	}
	if _, ok := redact.FirstDefinite(shorten(outcome, lineChars)); !ok {
		t.Fatal("the outcome must hold a key once cut for this test to mean anything")
	}
	srv := httptest.NewServer(s.handler)
	t.Cleanup(srv.Close)
	// Compressed, the first piece may still be in the compressor when the
	// download is cut off, so the client sees no answer at all; plain, it
	// sees a body that ends early. Either way it fails, without the secret.
	for _, encoding := range []string{"gzip", "identity"} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/sessions/s1/export", nil)
		req.Header.Set("Accept-Encoding", encoding)
		res, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			continue // cut off before the headers
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err == nil {
			t.Errorf("export (%s) = %d with %d bytes read whole; want the download cut off", encoding, res.StatusCode, len(body))
		}
		if encoding == "identity" && strings.Contains(string(body), fakeAWS) {
			t.Error("the cut-off download holds the secret")
		}
	}
}

// TestExportsAtOnceAreLimited: beyond maxExports running at once, an export
// or review gets 503 with a JSON error; once one ends, the next runs.
func TestExportsAtOnceAreLimited(t *testing.T) {
	s := newTestService(t)
	s.mustPush(newBatch("s1"), http.StatusCreated)
	gate := newExportGate()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	r := httprouter.New()
	r.Handler(http.MethodGet, "/api/sessions/:id/export", exportSession(s.store, gate, log))
	r.Handler(http.MethodGet, "/api/sessions/:id/export/review", exportReview(s.store, gate, log))
	for range maxExports {
		if !gate.enter() {
			t.Fatal("the gate is full before any export")
		}
	}
	for _, path := range []string{"/api/sessions/s1/export", "/api/sessions/s1/export/review"} {
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusServiceUnavailable || decodeError(t, rec).Error != errExportsBusy.msg {
			t.Errorf("GET %s with %d exports running = %d %s; want 503 %q", path, maxExports, rec.Code, rec.Body, errExportsBusy.msg)
		}
	}
	gate.leave()
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/sessions/s1/export", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("export after one ended = %d; want 200", rec.Code)
	}
}

// TestExportMemoryIsBounded exports a session with one 32 MB message and
// counts every byte the export allocates: at most a few times the message
// (it was about ten before the export was streamed).
func TestExportMemoryIsBounded(t *testing.T) {
	const size = 32 << 20
	s := newTestService(t)
	b := newBatch("big")
	b["steps"].(arr)[0].(obj)["payload"].(obj)["text"] = "key " + fakeAWS + " " + strings.Repeat("x", size)
	s.mustApply(b)
	srv := httptest.NewServer(s.handler)
	t.Cleanup(srv.Close)
	// The search index takes the write in the background, and making its
	// text allocates too; a search first catches it up, so what is
	// counted below is the export's alone.
	if _, err := s.store.Search(t.Context(), store.SearchQuery{Q: "key", Limit: 1}); err != nil {
		t.Fatal(err)
	}

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res, err := http.Get(srv.URL + "/api/sessions/big/export") // gzip, as browsers ask
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, res.Body)
	res.Body.Close()
	runtime.ReadMemStats(&after)
	if err != nil || res.StatusCode != http.StatusOK || n < size {
		t.Fatalf("export = %d, %d bytes, %v", res.StatusCode, n, err)
	}
	got := after.TotalAlloc - before.TotalAlloc
	t.Logf("exporting a %d MB message allocated %d MB", size>>20, got>>20)
	if got > 4*size {
		t.Errorf("the export of a %d MB message allocated %d MB; want at most %d MB", size>>20, got>>20, 4*size>>20)
	}
}

// TestExportCarriesItsOwnCSP: the file has no scripts and a policy in a
// meta tag, before its one style sheet, that allows that sheet by hash and
// nothing else.
func TestExportCarriesItsOwnCSP(t *testing.T) {
	s := newTestService(t)
	s.mustPush(newBatch("s1"), http.StatusCreated)
	page := s.get("/api/sessions/s1/export").Body.String()
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	csp, ok := doc.Find(`head meta[http-equiv="Content-Security-Policy"]`).Attr("content")
	if !ok {
		t.Fatal("the export has no Content-Security-Policy meta tag")
	}
	sum := sha256.Sum256([]byte(doc.Find("head style").Text()))
	want := "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; base-uri 'none'; form-action 'none'"
	if csp != want {
		t.Errorf("export CSP = %q; want %q", csp, want)
	}
	if strings.Index(page, "Content-Security-Policy") > strings.Index(page, "<style") {
		t.Error("the CSP meta tag comes after the style sheet")
	}
	if n := doc.Find("script, [style], link, img, iframe").Length(); n > 0 {
		t.Errorf("the export has %d scripts, style attributes or outside resources", n)
	}
}

func TestExportUnknownSessionIs404(t *testing.T) {
	s := newTestService(t)
	for _, path := range []string{"/api/sessions/nope/export", "/api/sessions/nope/export/review"} {
		if rec := s.get(path); rec.Code != http.StatusNotFound {
			t.Errorf("GET %s = %d; want 404", path, rec.Code)
		}
	}
}

// BenchmarkExport5000 measures the whole export of a 5,000-step session:
// read, mask every field, render, scan the final bytes.
func BenchmarkExport5000(b *testing.B) {
	s := newTestService(b)
	batch := newBatch("big")
	steps := arr{}
	template := newBatch("big")["steps"].(arr)
	for i := range 5000 {
		st := map[string]any{}
		for k, v := range template[i%5].(obj) {
			st[k] = v
		}
		st["id"], st["seq"] = fmt.Sprintf("big-%d", i), i
		if i%5 == 1 {
			p := map[string]any{}
			for k, v := range st["payload"].(obj) {
				p[k] = v
			}
			p["stdout"] = strings.Repeat("ok  \texample.com/pkg/sub\t0.012s\n", 40)
			if i%500 == 1 {
				p["stdout"] = p["stdout"].(string) + "AWS_ACCESS_KEY_ID=" + fakeAWS + "\n"
			}
			st["payload"] = p
		}
		steps = append(steps, st)
	}
	batch["steps"] = steps
	if rec := s.push(mustJSON(b, batch)); rec.Code != http.StatusCreated {
		b.Fatalf("push = %d %s", rec.Code, rec.Body)
	}
	b.ResetTimer()
	for b.Loop() {
		rec := s.get("/api/sessions/big/export")
		if rec.Code != http.StatusOK {
			b.Fatalf("export = %d", rec.Code)
		}
		b.SetBytes(int64(rec.Body.Len()))
	}
}

// keepBatch has a value only the generic rule matches (code, not a
// secret), a known-format key, and a real-looking generic secret.
func keepBatch(sid string) obj {
	b := newBatch(sid)
	steps := b["steps"].(arr)
	cmd := steps[1].(obj)
	cmd["payload"].(obj)["command"] = "mix run -e 'token = Base.url_encode64(:crypto.strong_rand_bytes(32))'"
	cmd["payload"].(obj)["stdout"] = "AWS_ACCESS_KEY_ID=" + fakeAWS + "\napi_key = \"zq8Kf3LmN0pR7sT2vW5xY9aB\"\n"
	return b
}

// TestExportKeep: candidate values the reviewer ticked are left unmasked
// and named in the manifest; a known-format key stays masked however the
// request lists it; a keep list that names no placeholder is refused.
func TestExportKeep(t *testing.T) {
	s := newTestService(t)
	s.mustPush(keepBatch("k1"), http.StatusCreated)
	before := s.snapshot()

	rec := s.get("/api/sessions/k1/export?keep=%5Bgeneric-secret-1%5D&keep=%5Baws-access-key-1%5D")
	if rec.Code != http.StatusOK {
		t.Fatalf("export with keep = %d %s", rec.Code, rec.Body)
	}
	body := rec.Body.String()
	if !strings.Contains(body, "Base.url_encode64(:crypto") {
		t.Error("the kept candidate value is masked in the export")
	}
	for _, masked := range []string{fakeAWS, "zq8Kf3LmN0pR7sT2vW5xY9aB"} {
		if strings.Contains(body, masked) {
			t.Errorf("the export shows %q; want it masked", masked)
		}
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	manifest := map[string]string{}
	doc.Find(`[data-testid="manifest-row"]`).Each(func(_ int, r *goquery.Selection) {
		cells := r.Find("td")
		manifest[cells.Eq(0).Text()] = cells.Eq(1).Text() + " | " + strings.Join(strings.Fields(cells.Eq(2).Text()), " ")
	})
	want := map[string]string{
		"generic-secret": "1 | 1 value kept unmasked by the reviewer: [generic-secret-1]",
		"aws-access-key": "1 | ",
	}
	if fmt.Sprint(manifest) != fmt.Sprint(want) {
		t.Errorf("manifest = %q; want %q", manifest, want)
	}

	plain := s.get("/api/sessions/k1/export").Body.String()
	if strings.Contains(plain, "Base.url_encode64(:crypto") {
		t.Error("without keep, the candidate value is not masked")
	}

	for _, bad := range []string{"keep=generic-secret-1", "keep=%5B%3Cscript%3E-1%5D", "keep=" + strings.Repeat("x", 200)} {
		rec := s.get("/api/sessions/k1/export?" + bad)
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "keep must name placeholders") {
			t.Errorf("export?%s = %d %s; want 400 naming the keep list", bad, rec.Code, rec.Body)
		}
	}
	if after := s.snapshot(); after != before {
		t.Error("exports changed the store")
	}
}

// TestExportShowsTheVerdict: the report says how the session was judged:
// the verdict's state, reviewer and note, the note masked as notes are;
// a session not judged says so.
func TestExportShowsTheVerdict(t *testing.T) {
	s := newTestService(t)
	s.mustPush(newBatch("judged"), http.StatusCreated)
	s.mustPush(newBatch("open"), http.StatusCreated)
	srv := httptest.NewServer(s.handler)
	t.Cleanup(srv.Close)
	note := "rotate " + fakeAWS + " before merging"
	body, _ := json.Marshal(obj{"state": "needs_attention", "reviewer": "Ann", "note": note})
	if code, out := call(t, srv, http.MethodPut, "/api/sessions/judged/verdict", string(body), nil); code != http.StatusOK {
		t.Fatalf("PUT verdict = %d %s", code, out)
	}

	rec := s.get("/api/sessions/judged/export")
	if rec.Code != http.StatusOK {
		t.Fatalf("export = %d %s", rec.Code, rec.Body)
	}
	if strings.Contains(rec.Body.String(), fakeAWS) {
		t.Error("the export holds the secret of the verdict's note")
	}
	doc, err := goquery.NewDocumentFromReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	review := doc.Find(`[data-testid="export-review"]`)
	if got := review.Find(`[data-testid="verdict-state"]`).Text(); got != "needs_attention" {
		t.Errorf("verdict state = %q; want needs_attention", got)
	}
	if got := review.Find(`[data-testid="verdict-reviewer"]`).Text(); got != "Ann" {
		t.Errorf("reviewer = %q; want Ann", got)
	}
	got := review.Find(`[data-testid="verdict-note"]`).Text()
	before, after, _ := strings.Cut(note, fakeAWS)
	if !strings.HasPrefix(got, before) || !strings.HasSuffix(got, after) || !redact.IsMaskPlaceholder(strings.TrimSuffix(strings.TrimPrefix(got, before), after)) {
		t.Errorf("verdict note = %q; want %q with the key masked", got, note)
	}

	rec = s.get("/api/sessions/open/export")
	doc, err = goquery.NewDocumentFromReader(rec.Body)
	if err != nil || rec.Code != http.StatusOK {
		t.Fatalf("export = %d %v", rec.Code, err)
	}
	if got := doc.Find(`[data-testid="export-review"] [data-testid="verdict-none"]`).Text(); got != "Not reviewed yet." {
		t.Errorf("the export of a session not judged says %q", got)
	}
}

// TestExportTurnUsage: each turn of a downloaded report says its tokens,
// requests and cost in its heading, as the session's page does: the sum of
// the turn's usage records, the cost estimated from the price table.
func TestExportTurnUsage(t *testing.T) {
	s := newTestService(t)
	f := usageFixture()[0] // its records are all of its first turn
	mustApplyUsage(t, s, f.sid, f.agent, f.root, f.records...)
	var tok pricing.Tokens
	for _, r := range f.records {
		tok.Add(r.Tokens)
	}
	want := views.Thousands(tok.Total()) + " tokens · " + views.Plural(len(f.records), "request") + " · " +
		estimateOf(t, map[string][]store.UsageRecord{f.sid: f.records}, f.sid)
	line := func(doc *goquery.Document) string {
		turn := doc.Find(`.turn`).First()
		return strings.Join(strings.Fields(turn.Find(`[data-testid="turn-tokens"]`).Text()+" · "+turn.Find(`[data-testid="turn-cost"]`).Text()), " ")
	}
	rec := s.get("/api/sessions/" + f.sid + "/export")
	export, err := goquery.NewDocumentFromReader(rec.Body)
	if rec.Code != http.StatusOK || err != nil {
		t.Fatalf("export = %d, %v", rec.Code, err)
	}
	if got := line(export); got != want {
		t.Errorf("the export's first turn says %q; want %q", got, want)
	}
	if got := line(mustDocument(t, s, "/session?id="+f.sid)); got != want {
		t.Errorf("the page's first turn says %q; want %q", got, want)
	}
}

// TestExportStepDurations: each step of a downloaded report says its time
// to the next step, as the session's page does, also the last step of each
// of the export's reads of a turn (exportBudget bytes at a time), and the
// turn's heading the time it took.
func TestExportStepDurations(t *testing.T) {
	s := newTestService(t)
	sid := "durations"
	t0 := time.Date(2026, 2, 3, 10, 0, 0, 0, time.UTC)
	b := sessionBatch(sid, "claude-code", "2.1.0", t0, "/w", nil)
	b["turns"] = arr{turnRec(sid, 1, t0, "")}
	gaps := []time.Duration{3 * time.Second, 62 * time.Second, time.Second, 4 * time.Minute, 2 * time.Second, 9 * time.Second, 75 * time.Minute, time.Second}
	at, steps := t0, arr{}
	for i := range len(gaps) + 1 {
		out := strings.Repeat(fmt.Sprintf("line %d\n", i), 600_000/7) // 8 steps fill more than one read
		steps = append(steps, stepRec(sid, i+1, 1, at, "command", obj{"command": fmt.Sprintf("step %d", i), "stdout": out}))
		if i < len(gaps) {
			at = at.Add(gaps[i])
		}
	}
	b["steps"] = steps
	s.mustPush(b, http.StatusCreated)

	var want []string
	for _, g := range gaps {
		want = append(want, views.Duration(g))
	}
	want = append(want, "") // the last step has no next
	durations := func(doc *goquery.Document, sel string) []string {
		return doc.Find(sel).Map(func(_ int, e *goquery.Selection) string { return strings.TrimSpace(e.Find(".dur").Text()) })
	}
	rec := s.get("/api/sessions/" + sid + "/export")
	export, err := goquery.NewDocumentFromReader(rec.Body)
	if rec.Code != http.StatusOK || err != nil {
		t.Fatalf("export = %d, %v", rec.Code, err)
	}
	if got := durations(export, `details.step > summary`); !slices.Equal(got, want) {
		t.Errorf("the export's step times = %q; want %q", got, want)
	}
	page := mustDocument(t, s, "/session?id="+sid)
	if got := durations(page, `details.step > summary`); !slices.Equal(got, want) {
		t.Errorf("the page's step times = %q; want %q", got, want)
	}
	// The turn took from its start to its last step, in the export's
	// heading (written before its steps are read) as on the page.
	var took time.Duration
	for _, g := range gaps {
		took += g
	}
	if got, want := strings.TrimSpace(export.Find(`section.turn h3 .turn-dur`).Text()), views.Duration(took); got != want {
		t.Errorf("the export's turn took %q; want %q", got, want)
	}
	if got, want := strings.TrimSpace(page.Find(`[data-testid="turn-duration"]`).Text()), views.Duration(took); got != want {
		t.Errorf("the page's turn took %q; want %q", got, want)
	}
	if n := 9 * 600_000; n <= exportBudget {
		t.Fatalf("the steps hold %d bytes; want more than a read of the export (%d)", n, exportBudget)
	}
}

// A secret in coloured command output is masked whole, in the HTML and
// the Markdown export, printed in colour or split by a colour code, and
// counted once with the same value printed plain; neither report holds a
// control character.
func TestExportMasksSecretsInColouredOutput(t *testing.T) {
	s := newTestService(t)
	b := newBatch("c1")
	steps := b["steps"].(arr)
	half := len(fakeAWS) / 2
	steps[0].(obj)["payload"].(obj)["text"] = "use " + fakeGitHub
	steps[1].(obj)["payload"].(obj)["stdout"] = "token: \x1b[1m" + fakeGitHub + "\x1b[22m\n" +
		"key: " + fakeAWS[:half] + "\x1b[31m" + fakeAWS[half:] + "\x1b[0m\n"
	s.mustPush(b, http.StatusCreated)
	for _, path := range []string{"/api/sessions/c1/export", "/api/sessions/c1/export?format=md"} {
		rec := s.get(path)
		if rec.Code != http.StatusOK {
			t.Fatalf("%s = %d %s", path, rec.Code, rec.Body)
		}
		report := rec.Body.String()
		for _, secret := range []string{fakeGitHub, fakeAWS, fakeAWS[:half], fakeAWS[half:]} {
			if strings.Contains(report, secret) {
				t.Errorf("%s still holds %q", path, secret)
			}
		}
		if strings.ContainsFunc(report, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' }) {
			t.Errorf("%s holds a control character", path)
		}
	}
	var rv Review
	if rec := s.get("/api/sessions/c1/export/review"); json.Unmarshal(rec.Body.Bytes(), &rv) != nil {
		t.Fatalf("review = %d %s", rec.Code, rec.Body)
	}
	if rv.Counts["github-token"] != 1 || rv.Counts["aws-access-key"] != 1 {
		t.Errorf("counts = %v; want one github-token (plain and in colour) and one aws-access-key (split by a code)", rv.Counts)
	}
}
