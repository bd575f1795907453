package e2e

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// The tab newTab hands from test to test (sharedBrowser.reusableTab) comes to the next test as a new
// tab would: the same tab, on a blank page, at the viewport asked for, with none of the cookies,
// local or session storage or emulated media the test before it left, even on the same origin.
func TestReusedTabComesClear(t *testing.T) {
	chromiumPath(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, "<!doctype html><title>t</title><p>a page</p>")
	}))
	defer srv.Close()
	eval := func(t *testing.T, ctx context.Context, js string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("evaluating %s: %v", js, err)
		}
		return s
	}
	var first target.ID
	t.Run("leaves state", func(t *testing.T) {
		ctx := newTab(t, 390, 844)
		first = chromedp.FromContext(ctx).Target.TargetID
		if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL), chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
			chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
				return err
			})); err != nil {
			t.Fatal(err)
		}
		if got := eval(t, ctx, `document.cookie = "who=first; max-age=3600"; localStorage.setItem("k", "v"); sessionStorage.setItem("k", "v"); [document.cookie, localStorage.getItem("k"), matchMedia("(prefers-color-scheme: dark)").matches].join("|")`); got != "who=first|v|true" {
			t.Fatalf("the state left: %q", got)
		}
	})
	t.Run("finds none", func(t *testing.T) {
		ctx := newTab(t, 1200, 900)
		if id := chromedp.FromContext(ctx).Target.TargetID; id != first {
			t.Errorf("tab %s, want the first test's %s (reused)", id, first)
		}
		if got := eval(t, ctx, `location.href + " " + innerWidth + "×" + innerHeight + " @" + devicePixelRatio`); got != "about:blank 1200×900 @1" {
			t.Errorf("the next test's tab: %q, want about:blank 1200×900 @1", got)
		}
		if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL)); err != nil {
			t.Fatal(err)
		}
		if got := eval(t, ctx, `[document.cookie, localStorage.getItem("k"), sessionStorage.getItem("k"), matchMedia("(prefers-color-scheme: dark)").matches].join("|")`); got != "|||false" {
			t.Errorf("on the same origin the next test finds cookie|local|session|dark %q, want none of them", got)
		}
	})
}
