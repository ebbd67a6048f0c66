package browsertest_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
)

// as returns a client of the daemon's TCP API signed in as actor, with a
// session of its own.
func (d *daemon) as(t *testing.T, actor string) *client.Client {
	t.Helper()
	return &client.Client{BaseURL: d.url, Token: d.session(t, actor)}
}

// pageText returns everything the page shows, hidden parts included.
func (tb *tab) pageText() string {
	tb.t.Helper()
	return eval[string](tb, `document.body.textContent`)
}

// signOutPast signs out of a page whose actor has an open intent: the
// first click only warns, "Sign out anyway" signs out.
func (tb *tab) signOutPast() {
	tb.t.Helper()
	tb.click("sign-out")
	tb.poll("the sign-out warning", `!document.getElementById("sign-out-warning").hidden`)
	tb.clickToLoad("sign-out-confirm")
	tb.poll("the sign-in explanation", `!document.getElementById("signin").hidden`)
}

// Each person's intent stays theirs in a tab that several people sign in
// to, in either order: first leaves a reservation whose answer was lost
// (it was committed), signs out, and second signs in in the same tab. The
// page shows second nothing of first's (neither the intent nor the name),
// and second's own reservation leaves first's intent as it was. When first
// signs in again the page offers the intent again with its retry, sends
// nothing by itself, and the retry gets the reservation committed the first
// time. Second's settled reservation is shown to second again, by the
// workshop's title.
func TestActorsKeepTheirIntents(t *testing.T) {
	for _, order := range [][2]string{{"alice", "bob"}, {"bob", "alice"}} {
		first, second := order[0], order[1]
		t.Run(first+" first", func(t *testing.T) {
			d := startDaemon(t)
			tb := openTab(t, d)
			tb.signIn(first)
			tb.leaveUnclear()
			key := tb.intentKey()
			kept := tb.storedIntent(first)
			tb.signOutPast()
			if got := tb.storedIntent(first); got != kept {
				t.Fatalf("signing out changed %s's intent from %s to %q", first, kept, got)
			}

			tb.signIn(second)
			f := tb.form()
			if f.Notice != "" || f.Kind == "resumed" || f.WorkshopDisabled || f.QuantityDisabled || f.Submit != "Reserve" || f.Intent != "" {
				t.Errorf("signed in as %s: %+v, want an open choice, no notice and no intent", second, f)
			}
			tb.poll("the list", `document.getElementById("mine-status").textContent !== "Loading your reservations…"`)
			if text := tb.pageText(); strings.Contains(text, first) {
				t.Errorf("the page shows %s something of %s's: %q", second, first, text)
			}
			id := tb.reserve(1)
			if n := d.reserved(t, demo); n != 2 {
				t.Errorf("%d places reserved, want %s's committed 1 and %s's 1", n, first, second)
			}
			if got := tb.storedIntent(first); got != kept {
				t.Errorf("%s's reservation changed %s's intent from %s to %q", second, first, kept, got)
			}
			tb.poll("the list of "+second, `document.querySelectorAll("#reservation-list li").length === 1`)
			if !eval[bool](tb, `document.getElementById("reservation-`+id+`") !== null`) {
				t.Errorf("the list of %s does not show %s's reservation %s", second, second, id)
			}
			tb.clickToLoad("sign-out") // Nothing open: no warning.
			tb.poll("the sign-in explanation", `!document.getElementById("signin").hidden`)

			sent, posts := tb.sentPosts(), d.posts(t)
			tb.signIn(first)
			tb.waitStatus("resumed")
			f = tb.form()
			if !f.WorkshopDisabled || !f.QuantityDisabled || f.Submit != "Retry" || f.SubmitDisabled || !f.NewIntentHidden || f.Notice != "" {
				t.Errorf("%s signed in again: %+v, want the open intent with Retry", first, f)
			}
			if want := "Your reservation of 1 place in Demo workshop was sent earlier and its outcome is not known."; !strings.HasPrefix(f.Status, want) {
				t.Errorf("%s signed in again: status %q, want it to start %q", first, f.Status, want)
			}
			if text := tb.pageText(); strings.Contains(text, second) {
				t.Errorf("the page shows %s something of %s's: %q", first, second, text)
			}
			if n := tb.sentPosts() - sent; n != 0 {
				t.Errorf("the page sent %d reservation requests on sign-in, want none", n)
			}
			tb.click("submit")
			tb.waitStatus("reserved")
			if k := tb.intentKey(); k != key {
				t.Errorf("the retry used the key %s, want %s", k, key)
			}
			receipt, err := d.as(t, first).Operation(d.ctx(t), engine.OperationKey(key))
			if err != nil {
				t.Fatalf("the receipt of %s's intent: %v", first, err)
			}
			committed := reservationID.FindString(string(receipt.Response))
			if f := tb.form(); committed == "" || !strings.Contains(f.Receipt, committed) {
				t.Errorf("the page shows %q, want the committed reservation %s", f.Receipt, committed)
			}
			if n := d.posts(t) - posts; n != 1 || d.reserved(t, demo) != 2 {
				t.Errorf("%d POSTs for the retry, %d places reserved; want 1 and still 2", n, d.reserved(t, demo))
			}
			if got := d.requests(t, "POST /api/v1/reservations"); got["replayed"] != 1 {
				t.Errorf("reservation requests by outcome %v, want the retry replayed", got)
			}

			tb.clickToLoad("sign-out")
			tb.signIn(second)
			tb.waitStatus("reserved")
			if f := tb.form(); f.Status != "Reserved: 1 place in Demo workshop." || !strings.Contains(f.Receipt, id) {
				t.Errorf("%s signed in again: %+v, want the settled reservation %s by its title", second, f, id)
			}
		})
	}
}

// Signing out with an open intent warns first and keeps the intent:
// "Stay signed in" keeps the session, "Sign out anyway" ends it and leaves
// the intent for its actor.
func TestSignOutWarnsOfOpenIntent(t *testing.T) {
	d := startDaemon(t)
	tb := openTab(t, d)
	tb.signIn("alice")
	tb.leaveUnclear()
	kept := tb.storedIntent("alice")
	session := eval[string](tb, `sessionStorage.getItem("`+sessionKey+`")`)

	tb.click("sign-out")
	tb.poll("the sign-out warning", `!document.getElementById("sign-out-warning").hidden`)
	warning := eval[string](tb, `document.getElementById("sign-out-warning-text").textContent`)
	if want := "One request of yours has no known outcome yet. Signing out does not undo it: the page keeps it in this tab for alice."; !strings.HasPrefix(warning, want) {
		t.Errorf("the warning says %q, want it to start %q", warning, want)
	}
	if f := tb.form(); !f.FormShown || f.Actor != "alice" || f.Focus != "sign-out-confirm" {
		t.Errorf("after the first click on sign out: %+v, want alice still signed in and the focus on the warning", f)
	}
	if status, _ := d.whoAmI(t, http.Header{"Authorization": {"Bearer " + session}}); status != http.StatusOK {
		t.Errorf("whoami with the session after the warning: %d, want 200 (not signed out)", status)
	}
	tb.click("sign-out-stay")
	if hidden := eval[bool](tb, `document.getElementById("sign-out-warning").hidden`); !hidden {
		t.Errorf("after \"Stay signed in\" the warning is still shown")
	}

	tb.click("sign-out")
	tb.poll("the sign-out warning", `!document.getElementById("sign-out-warning").hidden`)
	tb.clickToLoad("sign-out-confirm")
	tb.poll("the sign-in explanation", `!document.getElementById("signin").hidden`)
	if status, _ := d.whoAmI(t, http.Header{"Authorization": {"Bearer " + session}}); status != http.StatusUnauthorized {
		t.Errorf("whoami with the signed-out session: %d, want 401 (ended on the daemon)", status)
	}
	if got := tb.storedIntent("alice"); got != kept {
		t.Errorf("signing out changed alice's intent from %s to %q", kept, got)
	}
	if text := tb.pageText(); strings.Contains(text, "alice") {
		t.Errorf("the signed-out page names alice: %q", text)
	}
}

// A quantity above the workshop's limit is refused with a clear message
// and nothing is sent; the quantity chosen is not rewritten, so the next
// click is refused again rather than reserving another number of places.
func TestOutOfRangeQuantityRefused(t *testing.T) {
	d := startDaemon(t)
	tb := openTab(t, d)
	tb.signIn("")
	tb.choose(demo, 5)
	for i := 0; i < 2; i++ {
		tb.click("submit")
		tb.waitStatus("invalidQuantity")
		f := tb.form()
		if f.Status != "Choose between 1 and 2 places. Nothing was sent." || f.Quantity != "5" || f.Intent != "" || f.Focus != "quantity" {
			t.Errorf("click %d on 5 of at most 2 places: %+v, want the refusal, the 5 kept and focused, no intent", i+1, f)
		}
	}
	if n := tb.sentPosts(); n != 0 {
		t.Errorf("the page sent %d reservation requests, want none", n)
	}
	if n := d.reserved(t, demo); n != 0 {
		t.Errorf("%d places reserved, want none", n)
	}
}

// A reservation's answer names the workshop by its title, also after a
// reload, when the answer is shown before the workshops are loaded again.
func TestReloadNamesWorkshopTitle(t *testing.T) {
	d := startDaemon(t)
	tb := openTab(t, d)
	tb.signIn("")
	tb.reserve(1)
	const want = "Reserved: 1 place in Demo workshop."
	if f := tb.form(); f.Status != want {
		t.Fatalf("status %q, want %q", f.Status, want)
	}
	tb.do("reload", chromedp.Reload())
	tb.waitReady()
	tb.waitStatus("reserved")
	if f := tb.form(); f.Status != want {
		t.Errorf("after the reload the status is %q, want %q", f.Status, want)
	}
}

// TestIntentOfAnEarlierPageVersion: a tab that kept an open intent under
// the single key an earlier version of the page used ("reserve.intent",
// the actor inside) gets it back after the page is upgraded and reloaded:
// moved to the actor's own key, offered with its retry under the same key,
// and nothing sent by itself.
func TestIntentOfAnEarlierPageVersion(t *testing.T) {
	d := startDaemon(t)
	tb := openTab(t, d)
	tb.signIn("")
	actor := eval[string](tb, `document.getElementById("actor").dataset.actor`)
	const key = "5b1c2a34-8d4e-4f60-9a7b-0c1d2e3f4a5b"
	old := fmt.Sprintf(`{"operation":%q,"payload":{"workshop":%q,"quantity":1},"actor":%q}`, key, demo, actor)
	eval[bool](tb, fmt.Sprintf(`(sessionStorage.removeItem("reserve.intent." + %q), sessionStorage.setItem("reserve.intent", %q), true)`, actor, old))
	sent := tb.sentPosts()
	tb.do("reload", chromedp.Reload())
	tb.waitStatus("resumed")
	f := tb.form()
	if f.Submit != "Retry" || !f.WorkshopDisabled || f.Intent == "" || !strings.Contains(f.Intent, key) {
		t.Fatalf("after the upgrade: %+v, want the old intent offered with Retry", f)
	}
	if eval[bool](tb, `sessionStorage.getItem("reserve.intent") !== null`) {
		t.Error("the old key is still there")
	}
	if n := tb.sentPosts() - sent; n != 0 {
		t.Errorf("the page sent %d reservation requests by itself", n)
	}
	tb.click("submit")
	tb.waitStatus("reserved")
	if v := d.receipt(t, key); v.HTTPStatus != 201 {
		t.Errorf("the retry's receipt = %+v, want the reservation under the old key", v)
	}
}
