package handlers

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
)

// TestBrowserResumeCopy copies the command that resumes a Claude Code
// session by keyboard: it is `cd <its folder> && claude --resume <id>`
// (Claude Code's documented command), lands on the clipboard and the page
// says so; where the page may not write to the clipboard, the command is
// selected for the reader to copy and the page says that instead.
func TestBrowserResumeCopy(t *testing.T) {
	b := startBrowser(t)
	s := newTestService(t)
	const sid, root = "3f0c1d2e-resume", "/home/dev/todo-api"
	x := sessionBatch(sid, "claude-code", "2.1.0", time.Now().UTC().Add(-time.Hour), root, nil)
	s.mustPush(x, http.StatusCreated)
	base := serveBrowser(t, s)
	p := b.newTab(t, base)
	grantClipboard(p, base)
	p.Open("/session?id=" + sid)
	want := "cd " + root + " && claude --resume " + sid
	if got := p.Text(`[data-testid="resume-command"]`); got != want {
		t.Fatalf("the page offers %q, want %q", got, want)
	}

	p.PressEnter(`[data-testid="resume-copy"]`)
	p.WaitFor("the page says it copied", `document.querySelector('[data-testid="resume-copied"]').textContent === 'Copied'`)
	if got := awaitJS[string](p, `navigator.clipboard.readText()`); got != want {
		t.Errorf("the clipboard holds %q, want %q", got, want)
	}
	p.WaitFor("the note goes", `document.querySelector('[data-testid="resume-copied"]').textContent === ''`)

	// A page the clipboard refuses (a team server over plain HTTP has no
	// clipboard at all).
	evalJS[bool](p, `(navigator.clipboard.writeText = () => Promise.reject(new DOMException('refused', 'NotAllowedError'))) !== null`)
	p.PressEnter(`[data-testid="resume-copy"]`)
	p.WaitFor("the page says to copy the selection", `document.querySelector('[data-testid="resume-copied"]').textContent.startsWith('Selected')`)
	if got := evalJS[string](p, `getSelection().toString()`); got != want {
		t.Errorf("the selection is %q, want %q", got, want)
	}
}

// TestBrowserStepCopyMarkdown copies an opened step as Markdown by
// keyboard: the clipboard holds the step's redacted Markdown, as the export
// route answers it, the secret in its output masked; where the page may
// not use the clipboard, the Markdown is downloaded instead.
func TestBrowserStepCopyMarkdown(t *testing.T) {
	b := startBrowser(t)
	s := newTestService(t)
	const sid = "copy-step"
	batch, _ := markdownFixture(sid, time.Now().UTC().Add(-time.Hour))
	s.mustPush(batch, http.StatusCreated)
	base := serveBrowser(t, s)
	p := b.newTab(t, base)
	grantClipboard(p, base)
	p.Open("/session?id=" + sid)
	p.PressEnter("#step-2 > summary")
	p.WaitFor("step 2 opens with its copy button", `document.querySelector('#step-2 [data-testid="step-copy-md"]')?.checkVisibility()`)
	p.PressEnter(`#step-2 [data-testid="step-copy-md"]`)
	p.WaitFor("the page says it copied", `document.querySelector('#step-2 .step-copy .copied').textContent === 'Copied'`)
	want := s.get("/api/sessions/" + sid + "/export?format=md&step=2").Body.String()
	got := awaitJS[string](p, `navigator.clipboard.readText()`)
	if got != want || !strings.HasPrefix(got, "**#2 command**") || strings.Contains(got, fakeAWS) {
		t.Errorf("the clipboard holds %q; want step 2's masked Markdown %q", got, want)
	}
	p.WaitFor("the note goes", `document.querySelector('#step-2 .step-copy .copied').textContent === ''`)

	// A step the server no longer has: nothing is copied, and the page
	// says why.
	evalJS[bool](p, `(document.querySelector('#step-2 [data-testid="step-copy-md"]').dataset.copyUrl = '/api/sessions/`+sid+`/export?format=md&step=99') !== ''`)
	p.PressEnter(`#step-2 [data-testid="step-copy-md"]`)
	p.WaitFor("the page says it could not copy", `document.querySelector('#step-2 .step-copy .copied').textContent === 'Not copied: the server answered 404'`)
	if got := awaitJS[string](p, `navigator.clipboard.readText()`); got != want {
		t.Errorf("after a refused copy the clipboard holds %q; want the last copy", got)
	}

	// A page without a clipboard (a team server over plain HTTP): the
	// step's Markdown is downloaded, the page staying where it is.
	evalJS[bool](p, `(document.querySelector('#step-2 [data-testid="step-copy-md"]').dataset.copyUrl = '/api/sessions/`+sid+`/export?format=md&step=2') !== ''`)
	dir := t.TempDir()
	p.Do("allow downloads", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
			Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir})
		return err
	}))
	evalJS[bool](p, `(navigator.clipboard.write = () => Promise.reject(new DOMException('refused', 'NotAllowedError'))) !== null`)
	p.PressEnter(`#step-2 [data-testid="step-copy-md"]`)
	p.WaitFor("the page says it downloaded", `document.querySelector('#step-2 .step-copy .copied').textContent === 'Downloaded'`)
	file := filepath.Join(dir, "session-"+sid+"-step-2.md")
	var downloaded []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if b, err := os.ReadFile(file); err == nil && len(b) == len(want) {
			downloaded = b
			break
		}
	}
	if string(downloaded) != want {
		entries, _ := os.ReadDir(dir)
		t.Errorf("the download %s holds %q (the folder has %v); want step 2's masked Markdown %q", file, downloaded, entries, want)
	}
	if got := evalJS[string](p, `location.pathname + location.search`); got != "/session?id="+sid {
		t.Errorf("after the download the page is %s; want it to stay on the session", got)
	}
}

// grantClipboard lets the tab's pages at base read and write the
// clipboard, as a reader who allowed it.
func grantClipboard(p *tab, base string) {
	p.T.Helper()
	origin, _ := url.Parse(base)
	for _, name := range []string{"clipboard-read", "clipboard-write"} {
		p.Do("allow "+name, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
				Permission: &cdpbrowser.PermissionDescriptor{Name: name}, Setting: cdpbrowser.PermissionSettingGranted, Origin: origin.Scheme + "://" + origin.Host})
			return err
		}))
	}
}
