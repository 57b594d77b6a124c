package handlers

import (
	"context"
	"net/http"
	"net/url"
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
	origin, _ := url.Parse(base)
	for _, name := range []string{"clipboard-read", "clipboard-write"} {
		p.Do("allow "+name, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
				Permission: &cdpbrowser.PermissionDescriptor{Name: name}, Setting: cdpbrowser.PermissionSettingGranted, Origin: origin.Scheme + "://" + origin.Host})
			return err
		}))
	}
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
