package handlers

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/agentreview/service/internal/browsertest"
	"github.com/agentreview/service/store"
)

// browserDeleteOddID: a session whose id holds "/", "?", "#", "%", a space
// and non-ASCII is really deleted from its page; and when the delete route
// answers anything but success, the app says the session could not be
// deleted and keeps showing it.
func browserDeleteOddID(t *testing.T, b *browser) {
	s := newTestService(t)
	const odd = "odd/id ?#%ü"
	s.mustPush(newBatch(odd), http.StatusCreated)
	s.mustPush(newBatch("kept-session"), http.StatusCreated)
	base := serveBrowser(t, s)
	p := b.newTab(t, base)

	p.Open("/session?id=" + url.QueryEscape(odd))
	p.Click(`[data-testid="delete-button"]`)
	p.WaitFor("the dialog opens", `document.querySelector('[data-testid="delete-dialog"]').open`)
	p.Click(`[data-testid="delete-confirm"]`)
	p.WaitFor("deleting lands on the list", onTheList)
	if _, err := s.store.Detail(context.Background(), odd, store.DetailQuery{}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after Delete of %q, Detail = %v; want ErrNotFound", odd, err)
	}
	if ids := p.listRows(); len(ids) != 1 || ids[0].ID != "kept-session" {
		t.Errorf("list after the delete = %+v; want only kept-session", ids)
	}

	// The route answers 404 for a session that is still stored, as it did
	// for ids holding "/" before routes matched the escaped path.
	const sid = "kept-session"
	p.Open("/session?id=" + sid)
	evalJS[bool](p, `(document.querySelector('[data-testid="delete-dialog"]').dataset.deleteUrl = '/api/sessions/kept-session%2Fnot-stored', true)`)
	p.Click(`[data-testid="delete-button"]`)
	p.WaitFor("the dialog opens", `document.querySelector('[data-testid="delete-dialog"]').open`)
	p.Click(`[data-testid="delete-confirm"]`)
	for deadline := time.Now().Add(browsertest.WaitTimeout); len(p.SeenDialogs()) == 0 && time.Now().Before(deadline); {
		time.Sleep(browsertest.PollEvery)
	}
	d := p.SeenDialogs()
	if len(d) != 1 || !strings.Contains(d[0], "could not be deleted: 404") {
		t.Fatalf("dialogs after a delete answered 404 = %q; want one saying the session could not be deleted", d)
	}
	p.Do("close the alert", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		return err
	}))
	if evalJS[string](p, `location.pathname`) != "/session" || p.Text(`[data-testid="session-title"]`) == "" {
		t.Error("after a failed delete the app left the session page; want the session still shown")
	}
	if _, err := s.store.Detail(context.Background(), sid, store.DetailQuery{}); err != nil {
		t.Errorf("after a failed delete, Detail = %v; want the session kept", err)
	}
}
