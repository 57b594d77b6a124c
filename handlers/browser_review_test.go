package handlers

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/agentreview/service/internal/browsertest"
	"github.com/agentreview/service/store"
	"github.com/chromedp/chromedp"
)

// TestBrowserReview drives what a reviewer writes in the app (issue 15):
// verdicts, notes on steps and the Changes section, in headless Chromium
// against a real server.
func TestBrowserReview(t *testing.T) {
	b := startBrowser(t)
	for _, tc := range []struct {
		name string
		run  func(*testing.T, *browser)
	}{
		{"VerdictInOtherTabs", browserVerdictInOtherTabs},
		{"VerdictInOneClick", browserVerdictInOneClick},
		{"NoteSurvivesUpdateAndExports", browserNoteSurvivesUpdateAndExports},
		{"ChangesOfASample", browserChangesOfASample},
		{"MoreChanges", browserMoreChanges},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, b) })
	}
}

// reviewFixture is a session of one turn: a prompt, a command and an edit.
func reviewFixture(sid string, at time.Time) obj {
	x := sessionBatch(sid, "testagent", "1.0.0", at, "/tmp/ws", metricsOf(0.1, 1, 1, 1))
	x["turns"] = arr{turnRec(sid, 1, at, "")}
	x["steps"] = arr{
		stepRec(sid, 1, 1, at, "message", userPrompt("Make the tests pass")),
		stepRec(sid, 2, 1, at, "command", obj{"command": "go test ./...", "stdout": "FAIL", "exit_code": 1}),
		stepRec(sid, 3, 1, at, "edit", obj{"path": "/tmp/ws/main.go", "old_string": "a", "new_string": "b", "is_full_write": false}),
	}
	return x
}

// typeInto replaces the value of the field matching sel with text, typed.
func (p *tab) typeInto(sel, text string) {
	p.T.Helper()
	evalJS[bool](p, `(document.querySelector(`+browsertest.JSString(sel)+`).value = '') === ''`)
	p.Type(sel, text)
}

// browserVerdictInOtherTabs: a verdict set in one tab shows in another tab
// on the session and, as a badge, in a tab on the list, whole and legible
// beside a title too long for its column; the list filters by it; the
// reviewer's name is remembered.
func browserVerdictInOtherTabs(t *testing.T, b *browser) {
	s := newTestService(t)
	at := time.Now().UTC().Add(-time.Hour)
	long := reviewFixture("verdict-1", at)
	long["steps"].(arr)[0] = stepRec("verdict-1", 1, 1, at, "message", userPrompt(strings.Repeat("Make the tests pass and do not skip any ", 8)))
	s.mustPush(long, http.StatusCreated)
	s.mustPush(reviewFixture("verdict-2", at.Add(time.Minute)), http.StatusCreated)
	base := serveBrowser(t, s)

	writer, reader, list := b.newTab(t, base), b.newTab(t, base), b.newTab(t, base)
	writer.Open("/session?id=verdict-1")
	reader.Open("/session?id=verdict-1")
	list.Open("/")
	for _, p := range []*tab{writer, reader, list} {
		p.WaitFor("the stream is live", `document.getElementById('live-pill').textContent === 'live'`)
	}
	if got := reader.Text(`[data-testid="verdict"]`); got != "Not reviewed yet." {
		t.Errorf("verdict before = %q; want Not reviewed yet.", got)
	}

	writer.typeInto(`[data-testid="verdict-input"]`, "needs_attention")
	writer.typeInto(`[data-testid="reviewer-input"]`, "Ann Reviewer")
	writer.typeInto(`[data-testid="verdict-note-input"]`, "the failing test was skipped")
	writer.Click(`[data-testid="verdict-save"]`)
	writer.WaitFor("the verdict is saved", `document.querySelector('[data-testid="verdict-status"]').textContent === 'Saved'`)

	reader.WaitFor("the other tab shows the verdict", `document.querySelector('[data-testid="verdict-state"]')?.textContent === 'needs_attention'`)
	if got := reader.Text(`[data-testid="verdict-reviewer"]`); got != "Ann Reviewer" {
		t.Errorf("other tab's reviewer = %q; want Ann Reviewer", got)
	}
	if got := reader.Text(`[data-testid="verdict-note"]`); got != "the failing test was skipped" {
		t.Errorf("other tab's verdict note = %q", got)
	}
	list.WaitFor("the list shows the verdict badge", `document.querySelector('[data-session-id="verdict-1"] [data-testid="verdict-badge"]')?.textContent === 'needs_attention'`)
	if n := list.Count(`[data-session-id="verdict-2"] [data-testid="verdict-badge"]`); n != 0 {
		t.Errorf("the session without a verdict has %d badges", n)
	}
	badge := `document.querySelector('[data-session-id="verdict-1"] [data-testid="verdict-badge"]')`
	list.eachLook(func(look string) {
		if !evalJS[bool](list, `(b => { const r = b.getBoundingClientRect(), c = b.closest('td').getBoundingClientRect();
			return r.width > 0 && r.left >= c.left && r.right <= c.right; })(`+badge+`)`) {
			t.Errorf("list%s: the verdict badge is cut off by the long title", look)
		}
		if c := evalJS[float64](list, contrastOf+`(`+badge+`, `+badge+`)`); c < 4.5 {
			t.Errorf("list%s: verdict badge contrast %.1f; want at least 4.5", look, c)
		}
	})

	// Not reviewed: the other session, counted on its chip.
	if got := list.Text(`[data-testid="verdict-chip"]:nth-child(2)`); got != "Not reviewed 1" {
		t.Errorf("second verdict chip = %q; want Not reviewed 1", got)
	}
	list.Click(`[data-testid="verdict-chip"]:nth-child(2)`)
	list.WaitFor("the list of sessions not reviewed", `location.search.includes('unreviewed=1') && document.readyState === 'complete'`)
	if got := list.Texts(`[data-testid="session-row"]`); len(got) != 1 || list.Count(`[data-session-id="verdict-2"]`) != 1 {
		t.Errorf("the list of sessions not reviewed shows %d rows; want only verdict-2", len(got))
	}

	list.Open("/?verdict=needs_attention&agent=testagent")
	if got := list.Texts(`[data-testid="session-row"] [data-testid="short-id"]`); strings.Join(got, " ") != "verdict-" {
		t.Errorf("list filtered by needs_attention shows %v; want only verdict-1", got)
	}
	if got := list.Text(`[data-testid="verdict-chip"].active`); !strings.HasPrefix(got, "needs_attention") {
		t.Errorf("active verdict chip = %q; want needs_attention", got)
	}

	// The name stays in this browser for the next page.
	reader.Open("/session?id=verdict-2")
	if got := evalJS[string](reader, `document.querySelector('[data-testid="reviewer-input"]').value`); got != "Ann Reviewer" {
		t.Errorf("reviewer on the next page = %q; want the name typed before", got)
	}

	// Clearing it shows in the other tab too.
	reader.Open("/session?id=verdict-1")
	reader.WaitFor("the stream is live", `document.getElementById('live-pill').textContent === 'live'`)
	writer.Click(`[data-testid="verdict-clear"]`)
	reader.WaitFor("the other tab shows no verdict", `document.querySelector('[data-testid="verdict-none"]') !== null`)
}

// browserVerdictInOneClick: each common state's button saves it as the
// verdict, with the note typed and the reviewer's name, though the verdict
// field is empty (or holds another word); a second button replaces it.
func browserVerdictInOneClick(t *testing.T, b *browser) {
	s := newTestService(t)
	s.mustPush(reviewFixture("quick-1", time.Now().UTC().Add(-time.Hour)), http.StatusCreated)
	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/session?id=quick-1")
	p.WaitFor("the stream is live", `document.getElementById('live-pill').textContent === 'live'`)
	p.typeInto(`[data-testid="reviewer-input"]`, "Cy")
	p.typeInto(`[data-testid="verdict-note-input"]`, "tests pass now")
	for i, state := range store.VerdictStates {
		if i == 1 {
			p.typeInto(`[data-testid="verdict-input"]`, "some other word")
		}
		p.Click(`[data-testid="verdict-quick"][data-state="` + state + `"]`)
		p.WaitFor("the page shows the verdict "+state, `document.querySelector('[data-testid="verdict-state"]')?.textContent === `+browsertest.JSString(state))
		var got struct {
			Verdict struct{ State, Note, Reviewer string }
		}
		if err := json.Unmarshal(s.get("/api/sessions/quick-1").Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if v := got.Verdict; v.State != state || v.Note != "tests pass now" || v.Reviewer != "Cy" {
			t.Errorf("after the %s button, the stored verdict = %+v", state, v)
		}
		if v := evalJS[string](p, `document.querySelector('[data-testid="verdict-input"]').value`); v != state {
			t.Errorf("after the %s button, the verdict field holds %q", state, v)
		}
	}
}

// browserNoteSurvivesUpdateAndExports: a note written on a step shows
// under it and at the top, stays through a live update that rewrites the
// step, and is in the export with a secret in it masked.
func browserNoteSurvivesUpdateAndExports(t *testing.T, b *browser) {
	s := newTestService(t)
	sid := "note-session"
	at := time.Now().UTC().Add(-time.Hour)
	x := reviewFixture(sid, at)
	s.mustPush(x, http.StatusCreated)
	base := serveBrowser(t, s)
	key := "AKIA" + "ZXCVBNMASDFGHJKL"

	p := b.newTab(t, base)
	p.Open("/session?id=" + sid)
	p.WaitFor("the stream is live", `document.getElementById('live-pill').textContent === 'live'`)
	p.Click(`#step-2 summary`)
	p.Click(`[data-testid="step-notes"][data-seq="2"] [data-testid="note-add"]`)
	p.WaitFor("the note dialog opens", `document.querySelector('[data-testid="note-dialog"]').open`)
	p.typeInto(`[data-testid="note-text-input"]`, "check why it failed; it printed "+key)
	p.typeInto(`[data-testid="note-author-input"]`, "Bob")
	p.Click(`[data-testid="note-save"]`)
	p.WaitFor("the note shows under step 2", `document.querySelector('[data-testid="step-notes"][data-seq="2"] [data-testid="note-text"]') !== null`)
	if got := p.Text(`[data-seq="2"] [data-testid="step-note"] [data-testid="note-text"]`); got != "check why it failed; it printed "+key {
		t.Errorf("note under step 2 = %q", got)
	}
	if got := p.Text(`[data-seq="2"] [data-testid="step-note"] [data-testid="note-author"]`); got != "Bob" {
		t.Errorf("note author = %q; want Bob", got)
	}
	p.WaitFor("the note is listed at the top", `document.querySelector('[data-testid="notes"] [data-testid="note-item"][data-seq="2"]') !== null`)

	// A live update rewrites step 2 and adds step 4.
	later := laterPush(x, nil, arr{
		stepRec(sid, 2, 1, at, "command", obj{"command": "go test ./...", "stdout": "FAIL again", "exit_code": 1}),
		stepRec(sid, 4, 1, at, "command", obj{"command": "go vet ./...", "stdout": "", "exit_code": 0}),
	})
	s.mustPush(later, http.StatusOK)
	p.WaitFor("the live update shows step 4", `document.getElementById('step-4') !== null`)
	if got := p.Text(`[data-testid="step-notes"][data-seq="2"] [data-testid="note-text"]`); got != "check why it failed; it printed "+key {
		t.Errorf("note under step 2 after a live update = %q; want it kept", got)
	}
	if got := p.Count(`[data-testid="note-item"]`); got != 1 {
		t.Errorf("notes listed after a live update = %d; want 1", got)
	}

	res, err := http.Get(base + "/api/sessions/" + sid + "/export")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET export = %d", res.StatusCode)
	}
	if strings.Contains(string(body), key) {
		t.Error("the export holds the key written in a note")
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	under := strings.TrimSpace(doc.Find(`[data-testid="step-notes"][data-seq="2"] [data-testid="note-text"]`).Text())
	listed := strings.TrimSpace(doc.Find(`[data-testid="note-item"] [data-testid="note-text"]`).Text())
	for what, got := range map[string]string{"under step 2": under, "in the list": listed} {
		if !strings.HasPrefix(got, "check why it failed; it printed [") || strings.Contains(got, key) {
			t.Errorf("export's note %s = %q; want it with the key masked", what, got)
		}
	}
}

// browserChangesOfASample: the Changes section of a recorded Claude Code
// session (the adapter's batch for testdata/agentlogs_crud.jsonl) shows
// JOKE.md created, edited and removed, and its diff is the file's content
// worked out here from the raw Write and Edit inputs of the transcript.
func browserChangesOfASample(t *testing.T, b *browser) {
	const sample = "../adapters/claudecode/testdata/agentlogs_crud.jsonl"
	const golden = "../adapters/claudecode/testdata/golden/agentlogs_crud.json"
	var batches []obj
	raw, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &batches); err != nil || len(batches) != 1 {
		t.Fatalf("golden %s: %v", golden, err)
	}
	s := newTestService(t)
	s.mustPush(batches[0], http.StatusCreated)
	sid := batches[0]["session"].(map[string]any)["id"].(string)

	// The file's content after the session, from the transcript's own tool
	// inputs: a Write sets it, an Edit replaces old_string by new_string.
	f, err := os.Open(sample)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var path, after string
	var writes int
	lines := bufio.NewScanner(f)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		var rec struct {
			Message struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(lines.Bytes(), &rec) != nil {
			continue
		}
		var items []struct {
			Type  string `json:"type"`
			Name  string `json:"name"`
			Input struct {
				FilePath  string `json:"file_path"`
				Content   string `json:"content"`
				OldString string `json:"old_string"`
				NewString string `json:"new_string"`
			} `json:"input"`
		}
		if json.Unmarshal(rec.Message.Content, &items) != nil {
			continue
		}
		for _, it := range items {
			switch {
			case it.Type == "tool_use" && it.Name == "Write":
				path, after = it.Input.FilePath, it.Input.Content
				writes++
			case it.Type == "tool_use" && it.Name == "Edit" && it.Input.FilePath == path:
				if !strings.Contains(after, it.Input.OldString) {
					t.Fatalf("the sample's edit does not apply: %q", it.Input.OldString)
				}
				after = strings.Replace(after, it.Input.OldString, it.Input.NewString, 1)
			}
		}
	}
	if writes != 1 || !strings.HasSuffix(path, "/JOKE.md") {
		t.Fatalf("the sample writes %d files (%s); want JOKE.md once", writes, path)
	}
	var want []string // created: every line of the content after is added
	for _, l := range strings.Split(strings.TrimSuffix(after, "\n"), "\n") {
		want = append(want, "+"+l)
	}

	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/session?id=" + sid)
	change := `[data-testid="change"][data-path=` + browsertest.JSString(path) + `]`
	if p.Count(change) != 1 {
		t.Fatalf("Changes lists %v; want %s", p.Texts(`[data-testid="change-path"]`), path)
	}
	got := evalJS[[]string](p, `Array.from(document.querySelectorAll(`+browsertest.JSString(change+` [data-testid="change-diff"] .dl`)+`), e => e.textContent)`)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Changes diff of %s =\n%s\nwant the content from the transcript's edits\n%s", path, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got, want := p.Text(change+` [data-testid="change-added"]`), fmt.Sprintf("+%d", len(want)); got != want {
		t.Errorf("lines added = %s; want %s", got, want)
	}
	if got := p.Text(change + ` [data-testid="change-removed"]`); got != "−0" {
		t.Errorf("lines removed = %s; want −0", got)
	}
	if got := p.Text(change + ` [data-testid="change-status"]`); got != "created, removed at step 14" {
		t.Errorf("status = %q; want created, removed at step 14", got)
	}
	if got := p.Texts(change + ` [data-testid="change-step"]`); strings.Join(got, " ") != "5 11" {
		t.Errorf("steps linked = %v; want 5 11", got)
	}
	p.Click(change + ` [data-testid="change-step"]:last-child`)
	p.WaitFor("the link opens step 11", `document.getElementById('step-11').open`)
}

// browserMoreChanges: a session that changed 25 files shows 20 in the
// page, closed, without their diffs; opening one, by keyboard, loads its
// diff; the more-files control, by keyboard, shows the other 5. After a
// live update redraws the section, its new control works too.
func browserMoreChanges(t *testing.T, b *browser) {
	s := newTestService(t)
	sid := "many-files"
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	edit := func(seq int) obj {
		return stepRec(sid, seq, 1, at, "edit", obj{"path": fmt.Sprintf("/tmp/ws/f%02d.go", seq), "old_string": "a", "new_string": "b", "is_full_write": false})
	}
	x := sessionBatch(sid, "testagent", "1.0.0", at, "/tmp/ws", nil)
	x["turns"] = arr{turnRec(sid, 1, at, "")}
	steps := arr{stepRec(sid, 1, 1, at, "message", userPrompt("Touch every file"))}
	for seq := 2; seq <= 26; seq++ {
		steps = append(steps, edit(seq))
	}
	x["steps"] = steps
	s.mustPush(x, http.StatusCreated)
	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/session?id=" + sid)
	p.WaitFor("the pill says live", `document.querySelector('[data-testid="live-pill"]').textContent === 'live'`)
	const shown = `document.querySelectorAll('[data-testid="change"]').length`
	if n := p.Count(`[data-testid="change"]`); n != firstChanges {
		t.Fatalf("%d files in the page; want %d", n, firstChanges)
	}
	if got := p.Text(`[data-testid="more-changes"]`); !strings.Contains(got, "5 more files") || !strings.Contains(got, "5 not shown") {
		t.Errorf("more-files control = %q; want 5 more, 5 not shown", got)
	}
	if n := p.Count(`[data-testid="change-edit"]`); n != 0 {
		t.Errorf("%d diffs in the page; want none until a file is opened", n)
	}
	p.PressEnterUntil(`#change-3 > summary`, "Enter on a file opens it", `document.querySelector('#change-3').open`)
	if err := p.Poll(browsertest.WaitTimeout, `Array.from(document.querySelectorAll('#change-3 [data-testid="change-edit-diff"] .dl'), e => e.textContent).join('|') === '-a|+b'`); err != nil {
		t.Fatalf("the opened file's diff did not load: %v; the file now: %s", err,
			evalJS[string](p, `document.querySelector('#change-3').outerHTML.slice(0, 2000)`))
	}
	p.PressEnter(`[data-testid="more-changes"]`)
	p.WaitFor("Enter on the control shows the 25 files", shown+` === 25 && document.querySelector('[data-testid="more-changes"]') === null`)
	p.Click(`#change-25 > summary`)
	p.WaitFor("a loaded file opens with its diff", `document.querySelector('#change-25 [data-testid="change-edit-diff"]') !== null`)
	if dir := os.Getenv("SERVICE_SCREENSHOTS"); dir != "" {
		p.eachLook(func(suffix string) {
			p.Do("scroll to the changes", chromedp.Evaluate[chromedp.Void](`document.querySelector('#change-20').scrollIntoView({block: 'center'})`))
			p.Shoot(dir, "changes"+suffix)
		})
		p.Emulate(1280, 800, "light")
	}

	s.mustPush(laterPush(x, nil, arr{edit(27)}), http.StatusOK)
	p.WaitFor("the update redraws the section's first 20 files and its control", shown+` === 20
		&& document.querySelector('[data-testid="more-changes"]') !== null`)
	p.Click(`[data-testid="more-changes"]`)
	p.WaitFor("the redrawn control shows the 26 files", shown+` === 26`)
	if got := p.Text(`#change-26 [data-testid="change-path"]`); got != "f27.go" {
		t.Errorf("the last file = %q; want f27.go, its path in the workspace /tmp/ws", got)
	}
}
