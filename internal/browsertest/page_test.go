package browsertest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/bench"
)

// The page speaks German to a German browser, and its switch changes the
// language (remembered across a reload).
func TestLanguageFromBrowserAndSwitch(t *testing.T) {
	d := startDaemon(t)
	tb := openTab(t, d)
	ua := eval[string](tb, "navigator.userAgent")
	tb.do("German browser", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: ua, AcceptLanguage: "de-DE,de"})
		return err
	}))
	tb.signIn("")
	lang := func() (string, string, string) {
		return eval[string](tb, `document.documentElement.lang`), eval[string](tb, `document.querySelector("h1").textContent`), eval[string](tb, `document.getElementById("lang").textContent`)
	}
	if l, h1, sw := lang(); l != "de" || h1 != "Platz reservieren" || sw != "English" {
		t.Errorf("a German browser gets lang=%q, %q, switch %q; want de, Platz reservieren, English", l, h1, sw)
	}
	tb.click("lang")
	if l, h1, sw := lang(); l != "en" || h1 != "Reserve a place" || sw != "Deutsch" {
		t.Errorf("after the switch: lang=%q, %q, switch %q; want en, Reserve a place, Deutsch", l, h1, sw)
	}
	tb.do("reload", chromedp.Reload())
	tb.waitReady()
	if l, _, _ := lang(); l != "en" {
		t.Errorf("after a reload the page speaks %q, want the chosen en", l)
	}
}

// Without sessionStorage the page cannot keep an intent, so it says so and
// sends nothing.
func TestNoSessionStorageSendsNothing(t *testing.T) {
	d := startDaemon(t)
	tb := openTab(t, d)
	tb.do("no sessionStorage", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
			Source: `Object.defineProperty(window, "sessionStorage", {get() { throw new DOMException("storage is disabled", "SecurityError"); }});`,
		})
		return err
	}))
	tb.signIn("")
	tb.click("submit")
	tb.poll("the notice", `!document.getElementById("notice").hidden`)
	notice := eval[string](tb, `document.getElementById("notice").textContent`)
	if !strings.Contains(notice, "cannot be prepared safely. Nothing was sent.") {
		t.Errorf("notice %q, want that the intent cannot be prepared", notice)
	}
	if n := tb.sentPosts(); n != 0 {
		t.Errorf("the page sent %d reservation requests, want none", n)
	}
	if n := d.posts(t); n != 0 {
		t.Errorf("%d POSTs reached the daemon, want none", n)
	}
}

// Without a session the page explains how to sign in and sends nothing.
func TestSignedOutPageExplainsSignIn(t *testing.T) {
	d := startDaemon(t)
	tb := openTab(t, d)
	tb.openSignedOut()
	if f := tb.form(); f.FormShown || !strings.Contains(eval[string](tb, `document.getElementById("signin").textContent`), "reservectl login-link") {
		t.Errorf("signed out: %+v, want only the sign-in explanation naming reservectl login-link", f)
	}
	if n := tb.sentPosts(); n != 0 {
		t.Errorf("the page sent %d reservation requests, want none", n)
	}
}

// TestSignedOutPagesAskNothingThatFails: a tab without a session asks the
// daemon nothing that it knows will fail. Neither page asks whose session
// the tab has (the daemon reads no cookies, so the answer could only be
// 401), every answer the tab gets is a success, each page describes
// itself for search engines, and a login link still signs the same tab
// in, after which the page does ask.
func TestSignedOutPagesAskNothingThatFails(t *testing.T) {
	d := startDaemon(t)
	tb := openTab(t, d)
	tb.openSignedOut()
	tb.do("open /admin", chromedp.Navigate(d.url+"/admin"))
	tb.until("the organizer's page's sign-in explanation", `!document.getElementById("signin").hidden`)
	tb.do("back to the page for reserving", chromedp.Navigate(d.url+"/"))
	tb.poll("the sign-in explanation", `!document.getElementById("signin").hidden`)
	signInMethods := 0
	for _, a := range tb.answersSoFar() {
		if a.status >= 400 {
			t.Errorf("signed out, %s", a)
		}
		if a.url == d.url+api.PathSignIn && a.status == 200 {
			signInMethods++
		}
	}
	if signInMethods != 2 {
		t.Errorf("the tab saw %d answers to GET %s, want the 2 of the page's two loads: %v", signInMethods, api.PathSignIn, tb.answersSoFar())
	}
	if got := d.requests(t, "GET "+api.PathWhoAmI); sum(got) != 0 {
		t.Errorf("whoami reached the daemon from a tab without a session: %v", got)
	}
	for _, path := range []string{"/", "/admin"} {
		tb.do("open "+path, chromedp.Navigate(d.url+path))
		if desc := eval[string](tb, `document.querySelector('meta[name="description"]').content`); len(desc) < 40 {
			t.Errorf("%s has the description %q, want one that says what the page is for", path, desc)
		}
	}

	tb.signIn("")
	if got := d.requests(t, "GET "+api.PathWhoAmI); got["ok"] != 1 || sum(got) != 1 {
		t.Errorf("whoami after the sign-in: %v, want one request answered ok", got)
	}
}

// TestBenchWorkshopsStayOutOfTheList: the workshop a bench run creates is
// not offered by the form, during the run or after it; one kept with Keep
// is.
func TestBenchWorkshopsStayOutOfTheList(t *testing.T) {
	d := startDaemon(t)
	run := func(keep bool) string {
		t.Helper()
		res, err := bench.Run(d.ctx(t), bench.Config{Socket: d.socket.Socket, Clients: 2, Count: 10, Keep: keep})
		if err != nil {
			t.Fatalf("bench (keep %t): %v", keep, err)
		}
		return res.Workshop
	}
	hidden := run(false)
	tb := openTab(t, d)
	tb.signIn("")
	offered := func() string {
		return eval[string](tb, `[...document.getElementById("workshop").options].map(o => o.value).join(" ")`)
	}
	if got := offered(); got != demo {
		t.Errorf("after a bench the form offers %q, want only %s (not %s)", got, demo, hidden)
	}
	kept := run(true)
	tb.do("reload", chromedp.Reload())
	tb.waitReady()
	if got := offered(); !strings.Contains(got, kept) || strings.Contains(got, hidden) {
		t.Errorf("after a bench with Keep the form offers %q, want %s and not %s", got, kept, hidden)
	}
}
