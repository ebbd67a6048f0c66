package browsertest_test

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/reserve/reserve/internal/mail/mailtest"
)

// A person signs in by email in real Chromium: the signed-out page of a
// daemon that offers it shows the email form instead of the login-link
// hint, without an accessibility violation in either language; after
// "Send me a sign-in link" it says to check the mailbox; the mail arrives
// at a real SMTP server (in the page's language), and its link signs the
// tab in as the actor bound to the address. Opening the link a second
// time, in another tab, is refused and says so.
func TestSignInByEmailLink(t *testing.T) {
	s := mailtest.Start(t)
	d := startDaemonWith(t, "--smtp", "smtp://"+s.Addr, "--mail-from", "Reserve <reserve@example.org>", "--email-sign-in", "open")
	tb := openTab(t, d)
	tb.openSignedOut()
	tb.poll("the email form", `!document.getElementById("email-signin").hidden && document.getElementById("signin-link-hint").hidden`)
	tb.checkAxeEverywhere("person page signed out, sign-in by email")

	tb.setLang("de")
	tb.setField("email", "not an address")
	tb.click("email-send")
	tb.waitKind("email-status", "emailInvalid")
	tb.setField("email", "Grace.Hopper@Example.org")
	tb.click("email-send")
	tb.waitKind("email-status", "emailSent")
	checkAxe(t, tb.ctx, "person page, sign-in link sent, de")

	m := mailtest.Parse(t, s.Wait(t, 1)[0])
	if m.Header.Get("Content-Language") != "de" || m.Subject != "Ihr Anmeldelink für Reserve" {
		t.Errorf("the mail is not in the page's language: %q, %q", m.Header.Get("Content-Language"), m.Subject)
	}
	if m.Link == "" {
		t.Fatalf("no link in the mail:\n%s", m.Text)
	}
	tb.do("open the mailed link", chromedp.Navigate(m.Link))
	tb.waitReady()
	if actor := eval[string](tb, `document.getElementById("actor").dataset.actor`); actor != "grace-hopper" {
		t.Fatalf("the mailed link signed the tab in as %q, want grace-hopper", actor)
	}
	if u := eval[string](tb, "location.href"); u != d.url+"/" {
		t.Errorf("after sign-in the tab is at %s, want %s/", u, d.url)
	}

	again := openTab(t, d)
	again.do("open the mailed link again", chromedp.Navigate(m.Link))
	again.poll("the refusal", `!document.getElementById("page-error").hidden`)
	if kind := eval[string](again, `document.getElementById("actor").hidden ? "signed out" : "signed in"`); kind != "signed out" {
		t.Errorf("a second use of the mailed link left the tab %s", kind)
	}
}

// Without sign-in by email the signed-out page keeps the login-link hint
// and shows no email form.
func TestNoEmailFormWithoutEmailSignIn(t *testing.T) {
	d := startDaemon(t)
	tb := openTab(t, d)
	tb.openSignedOut()
	if eval[bool](tb, `document.getElementById("signin-link-hint").hidden || !document.getElementById("email-signin").hidden`) {
		t.Error("the page hides the login-link hint or shows the email form although the daemon offers no sign-in by email")
	}
}
