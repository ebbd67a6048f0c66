package browsertest_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server/servertest"
)

var reservationID = regexp.MustCompile(`[0-9a-f]{32}`)

// Test 1: a double click while the first POST is held by the DevTools Fetch
// domain sends exactly one POST; releasing it reserves.
func TestDoubleClickWhileHeldSendsOnePost(t *testing.T) {
	d := startDaemon(t)
	tb := openTab(t, d)
	tb.signIn("")
	tb.holdRequests("*" + api.PathReservations)
	tb.doubleClick("submit")
	tb.waitStatus("sending")
	f := tb.form()
	if !f.SubmitDisabled || !f.QuantityDisabled || !f.WorkshopDisabled || f.Submit != "Sending…" {
		t.Errorf("while the POST is held: %+v, want #submit disabled saying \"Sending…\" and the choice locked", f)
	}
	if n := d.posts(t); n != 0 {
		t.Fatalf("%d POSTs reached the daemon while the browser holds the request", n)
	}
	tb.releaseOnly("reservation requests")
	tb.waitStatus("reserved")
	if n := len(tb.pausedRequests()); n != 1 {
		t.Errorf("the page sent %d reservation requests in all, want 1", n)
	}
	if n := d.posts(t); n != 1 {
		t.Errorf("%d POSTs reached the daemon, want exactly 1", n)
	}
	if n := d.reserved(t, demo); n != 1 {
		t.Errorf("%d places reserved, want 1", n)
	}
}

// Test 2: a garbled answer leaves the intent open ("outcome unclear —
// retry", choice locked, no new intent); a reload shows it again and sends
// nothing; the retry gets the reservation the daemon committed the first
// time.
func TestGarbledAnswerRetryAfterReload(t *testing.T) {
	d := startDaemon(t)
	tb := openTab(t, d)
	tb.signIn("")
	tb.leaveUnclear()
	f := tb.form()
	if !f.QuantityDisabled || !f.WorkshopDisabled || !f.NewIntentHidden || f.SubmitHidden || f.SubmitDisabled || f.Submit != "Retry" {
		t.Errorf("after a garbled answer: %+v, want the choice locked, Retry offered and no new intent", f)
	}
	if !strings.HasPrefix(f.Status, "Outcome unclear — retry") {
		t.Errorf("status %q, want outcome unclear — retry", f.Status)
	}
	key := tb.intentKey()
	if d.posts(t) != 1 || d.reserved(t, demo) != 1 {
		t.Fatalf("after the garbled answer: %d POSTs, %d places reserved; want the one POST committed", d.posts(t), d.reserved(t, demo))
	}

	before := tb.sentPosts()
	tb.do("reload", chromedp.Reload())
	tb.waitReady()
	tb.waitStatus("resumed")
	f = tb.form()
	if !f.QuantityDisabled || !f.WorkshopDisabled || !f.NewIntentHidden || f.Submit != "Retry" || f.SubmitDisabled {
		t.Errorf("after the reload: %+v, want the open intent shown with Retry", f)
	}
	if n := tb.sentPosts() - before; n != 0 {
		t.Errorf("the page sent %d reservation requests on load, want none", n)
	}
	if n := d.posts(t); n != 1 {
		t.Errorf("%d POSTs reached the daemon after the reload, want still 1", n)
	}
	if k := tb.intentKey(); k != key {
		t.Errorf("the reload changed the operation key %s to %s", key, k)
	}

	tb.click("submit")
	tb.waitStatus("reserved")
	committed := d.receipt(t, key)
	want := reservationID.FindString(string(committed.Response))
	if want == "" {
		t.Fatalf("the daemon's receipt has no reservation id: %s", committed.Response)
	}
	if f := tb.form(); !strings.Contains(f.Receipt, want) {
		t.Errorf("the page shows %q, want the committed reservation %s", f.Receipt, want)
	}
	if n := d.reserved(t, demo); n != 1 {
		t.Errorf("%d places reserved after the retry, want still 1", n)
	}
	if got := d.requests(t, "POST "+api.PathReservations); got["replayed"] != 1 {
		t.Errorf("reservation requests by outcome %v, want the retry replayed", got)
	}
}

// Test 3: after a reservation, "start another reservation" gives a new
// intent (focus on the choice); 2 more places are unavailable, and then the
// page offers "change selection".
func TestNewIntentThenUnavailable(t *testing.T) {
	d := startDaemon(t)
	tb := openTab(t, d)
	tb.signIn("")
	tb.choose(demo, 2)
	tb.click("submit")
	tb.waitStatus("reserved")
	first := tb.form()
	if first.NewIntentHidden || first.NewIntent != "Start another reservation" || !first.SubmitHidden || !reservationID.MatchString(first.Receipt) || first.Focus != "new-intent" {
		t.Errorf("after reserving: %+v, want the receipt and only \"Start another reservation\", focused", first)
	}
	firstKey := tb.intentKey()

	tb.click("new-intent")
	f := tb.form()
	if f.Focus != "workshop" || f.WorkshopDisabled || f.QuantityDisabled || !f.NewIntentHidden || f.Receipt != "" || f.Intent != "" {
		t.Errorf("after new intent: %+v, want an open choice with the focus on the workshop and no intent", f)
	}
	tb.waitReady()
	tb.choose(demo, 2)
	tb.click("submit")
	tb.waitStatus("unavailable")
	f = tb.form()
	if f.NewIntentHidden || f.NewIntent != "Change selection" || !f.SubmitHidden || f.Receipt != "" {
		t.Errorf("after unavailable: %+v, want only \"Change selection\"", f)
	}
	if want := "Unavailable: Demo workshop does not have 2 free places for this reservation."; !strings.HasPrefix(f.Status, want) {
		t.Errorf("unavailable status %q, want it to start %q", f.Status, want)
	}
	if k := tb.intentKey(); k == firstKey {
		t.Errorf("the new intent reused the key %s", k)
	}
	if d.posts(t) != 2 || d.reserved(t, demo) != 2 {
		t.Errorf("%d POSTs, %d places reserved; want 2 and 2", d.posts(t), d.reserved(t, demo))
	}
	tb.click("new-intent")
	if f := tb.form(); f.Focus != "workshop" || f.WorkshopDisabled {
		t.Errorf("after change selection: %+v, want the choice open and focused", f)
	}
}

// Test 4: an intent refused for lack of places stays refused after an
// admin raises the capacity, on a reload and on a retry of its lost
// answer; only a new intent uses the new capacity. (Of the small
// workshop's 2 places, one is reserved on the socket, so 2 are not free:
// a workshop's maximum per reservation may not be above its capacity.)
func TestUnavailableStaysUnavailableAfterCapacityRaise(t *testing.T) {
	d := startDaemon(t)
	d.putWorkshop(t, "small", 2, 2)
	res, err := d.socket.Send(d.ctx(t), engine.OperationKey(uuid.NewString()), client.Reserving(engine.Request{Workshop: "small", Quantity: 1}))
	if err != nil || res.Answer.Status != engine.StatusReserved {
		t.Fatalf("reserve 1 place of small on the socket: %+v %v", res, err)
	}
	tb := openTab(t, d)
	tb.signIn("")

	// An authoritative refusal, then more places: the reloaded page still
	// shows the refusal and offers no retry of it.
	tb.choose("small", 2)
	tb.click("submit")
	tb.waitStatus("unavailable")
	d.putWorkshop(t, "small", 5, 2)
	tb.do("reload", chromedp.Reload())
	tb.waitReady()
	tb.waitStatus("unavailable")
	if f := tb.form(); !f.SubmitHidden || f.NewIntent != "Change selection" {
		t.Errorf("after the reload: %+v, want the refusal and only \"Change selection\"", f)
	}

	// A refusal whose answer was lost: its retry, after the capacity was
	// raised, is still refused (the daemon replays its stored answer).
	tb.click("new-intent")
	tb.waitReady()
	d.putWorkshop(t, "small", 2, 2)
	d.arm(t, api.FaultGarbleResponse)
	tb.choose("small", 2)
	tb.click("submit")
	tb.waitStatus("unclear")
	d.putWorkshop(t, "small", 5, 2)
	tb.click("submit")
	tb.waitStatus("unavailable")
	if n := d.reserved(t, "small"); n != 1 {
		t.Errorf("%d places reserved after retries of refused intents, want the socket's 1", n)
	}

	tb.submitNew("small", 2, "reserved")
	if n := d.reserved(t, "small"); n != 3 {
		t.Errorf("%d places reserved after the new intent, want 1 + 2", n)
	}
	if got := d.requests(t, "POST "+api.PathReservations); got["replayed"] != 1 || got["unavailable"] != 2 || got["created"] != 2 {
		t.Errorf("reservation requests by outcome %v, want 2 refusals, 1 replayed refusal, 2 created (the socket's and the new intent's)", got)
	}
}

// Test 6: a page on another origin (another port of the same host, so the
// same site) cannot act for the signed-in form: no credential goes along
// with its requests (the form keeps its session in its own tab and the
// daemon reads no cookies), and the daemon refuses its POSTs as
// cross-origin, also a redemption of a login code: nothing is reserved,
// the code stays unused and the form's session lives on.
func TestCrossOriginPostRefused(t *testing.T) {
	d := startDaemon(t)
	code := codeOf(t, d.loginURL(t, ""))
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>elsewhere</title><script>
const target = %q;
Promise.allSettled([
  fetch(target + "/api/v1/reservations", {method: "POST", mode: "no-cors", credentials: "include",
    headers: {"Content-Type": "text/plain"}, body: '{"workshop":"workshop-demo","quantity":1}'}),
  fetch(target + "/api/v1/sessions", {method: "POST", mode: "no-cors", credentials: "include",
    headers: {"Content-Type": "text/plain"}, body: JSON.stringify({code: %q})}),
]).then(() => { document.title = "done"; });
</script>`, d.url, code)
	}))
	t.Cleanup(evil.Close)
	if hostOf(t, evil.URL) == hostOf(t, d.url) {
		t.Fatal("the second origin must differ from the daemon's")
	}
	tb := openTab(t, d)
	tb.signIn("")
	session := eval[string](tb, `sessionStorage.getItem("`+sessionKey+`")`)
	tb.do("open the other origin", chromedp.Navigate(evil.URL))
	tb.poll("the other origin's requests", `document.title === "done"`)

	if got := d.requests(t, "unmatched"); got["cross_origin"] != 2 {
		t.Errorf("requests refused as cross-origin: %v, want the POST and the redemption", got)
	}
	if n := d.posts(t); n != 0 {
		t.Errorf("%d reservation POSTs reached the handler, want 0", n)
	}
	if n := d.reserved(t, demo); n != 0 {
		t.Errorf("%d places reserved, want 0", n)
	}
	tb.mu.Lock()
	cookies := append([]string(nil), tb.cookies...)
	tb.mu.Unlock()
	for _, c := range cookies {
		if strings.Contains(c, session) {
			t.Errorf("a request carried the session in its cookies: %q", c)
		}
	}
	if _, err := (&client.Client{BaseURL: d.url}).OpenSession(d.ctx(t), code); err != nil {
		t.Errorf("the code the other origin sent: %v, want it unused", err)
	}
	tb.do("back to the form", chromedp.Navigate(d.url+"/"))
	tb.waitReady()
}

// Test 7: no horizontal overflow at 320, 390 and 1440 px in the initial,
// unclear and reserved states; 48 px targets; screenshots (also in dark
// mode) to $RESERVE_SCREENSHOTS.
func TestLayoutAtThreeWidths(t *testing.T) {
	d := startDaemon(t)
	tb := openTab(t, d)
	tb.signIn("")
	check := func(state string) {
		t.Helper()
		for _, width := range []int64{320, 390, 1440} {
			tb.do("viewport", chromedp.EmulateViewport(width, 900))
			type layout struct {
				ScrollWidth int      `json:"scrollWidth"`
				InnerWidth  int      `json:"innerWidth"`
				Small       []string `json:"small"`
			}
			l := eval[layout](tb, `(() => {
				const small = [];
				for (const el of document.querySelectorAll("button, select, input")) {
					const r = el.getBoundingClientRect();
					if (r.width > 0 && (r.width < 48 || r.height < 48)) small.push(el.id + " " + r.width + "x" + r.height);
				}
				return {scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth, small};
			})()`)
			if l.ScrollWidth > l.InnerWidth {
				t.Errorf("%s at %d px: the page is %d px wide, wider than the window (%d px)", state, width, l.ScrollWidth, l.InnerWidth)
			}
			if len(l.Small) > 0 {
				t.Errorf("%s at %d px: targets smaller than 48 px: %v", state, width, l.Small)
			}
			tb.screenshot(fmt.Sprintf("form-%s-%d", state, width))
		}
	}
	check("initial")
	tb.leaveUnclear()
	check("unclear")
	tb.click("submit")
	tb.waitStatus("reserved")
	check("reserved")

	// Dark mode follows the system's colour scheme.
	tb.do("dark mode", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}},
		})
		return err
	}), chromedp.EmulateViewport(390, 900))
	bg := eval[string](tb, `getComputedStyle(document.body).backgroundColor`)
	if bg != "rgb(22, 23, 24)" {
		t.Errorf("dark mode background %s, want the dark scheme's rgb(22, 23, 24)", bg)
	}
	tb.screenshot("form-reserved-390-dark")
}

// Test 8 runs in every test above: openTab fails a test whose page logged a
// console error, threw, or failed to load an asset. This test proves that
// the watch sees such problems, so that the others cannot pass by being
// blind.
func TestPageProblemsAreSeen(t *testing.T) {
	d := startDaemon(t)
	tb := openTab(t, d)
	tb.signIn("")
	if p := tb.takeProblems(); len(p) != 0 {
		t.Errorf("the signed-in form had problems: %v", p)
	}
	tb.do("break the page", chromedp.Evaluate[chromedp.Void](`(() => {
		console.error("a console error");
		setTimeout(() => { throw new Error("an uncaught exception"); });
		const l = document.createElement("link");
		l.rel = "stylesheet"; l.href = "/missing.css";
		document.head.append(l);
	})()`))
	want := []string{"a console error", "an uncaught exception", "Stylesheet load failed"}
	servertest.Eventually(t, waitTimeout, "the problems seen", func() bool {
		all := strings.Join(tb.problemsSoFar(), "\n")
		for _, w := range want {
			if !strings.Contains(all, w) {
				return false
			}
		}
		return true
	})
	tb.takeProblems()
}
