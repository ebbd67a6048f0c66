package browsertest_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// cancelRoute is the route label of the cancellation in the daemon's
// request metrics.
const cancelRoute = "POST /api/v1/reservations/{id}/cancel"

// cancels returns how many cancellation requests reached the daemon, by
// outcome, and in all.
func (d *daemon) cancels(t *testing.T) (map[string]int, int) {
	t.Helper()
	got := d.requests(t, cancelRoute)
	n := 0
	for _, v := range got {
		n += v
	}
	return got, n
}

// reservation returns the daemon's record of reservation id.
func (d *daemon) reservation(t *testing.T, id string) engine.Reservation {
	t.Helper()
	r, err := d.socket.Reservation(d.ctx(t), id)
	if err != nil {
		t.Fatalf("reservation %s: %v", id, err)
	}
	return r
}

// reserve reserves quantity places of the demo workshop in the page and
// returns the reservation id it shows, once the list shows it too.
func (tb *tab) reserve(quantity int) string {
	tb.t.Helper()
	tb.choose(demo, quantity)
	tb.click("submit")
	tb.waitStatus("reserved")
	id := reservationID.FindString(tb.form().Receipt)
	if id == "" {
		tb.t.Fatalf("the page shows no reservation id: %+v", tb.form())
	}
	tb.poll("the reservation in the list", fmt.Sprintf(`document.getElementById("reservation-%s") !== null`, id))
	return id
}

// cancelKey returns the operation key of the cancellation of the form's
// reservation in sessionStorage.
func (tb *tab) cancelKey() string {
	tb.t.Helper()
	f := tb.form()
	var op struct{ Operation string }
	if err := json.Unmarshal([]byte(f.CancelIntent), &op); err != nil || op.Operation == "" {
		tb.t.Fatalf("the page keeps no cancellation of its reservation: %+v", f)
	}
	return op.Operation
}

// A reservation just made has exactly one cancel control, in the list of
// the person's reservations; the form leads there. Cancelling it keeps a
// cancel intent of its own, the places are free again at once, and after
// the answer the form's only way on is a new intent. A reload shows the
// settled cancellation and sends nothing.
func TestCancelFreesPlaces(t *testing.T) {
	d := startDaemon(t)
	tb := openTab(t, d)
	tb.signIn("")
	id := tb.reserve(2)
	f := tb.form()
	if f.CancelControls != 1 || f.CancelDisabled || f.Cancel != "Cancel reservation" || f.CancelIntent != "" || !f.ToReservation {
		t.Errorf("after reserving: %+v, want one \"Cancel reservation\", the list's, the form leading there, and no cancel intent yet", f)
	}
	tb.click("to-reservation")
	if f := tb.form(); f.Focus != "cancel-"+id {
		t.Errorf("the form's link to its reservation put the focus on %q, want the list's cancel-%s", f.Focus, id)
	}
	if n := d.reserved(t, demo); n != 2 {
		t.Fatalf("%d places reserved, want 2", n)
	}

	tb.click("cancel-" + id)
	tb.waitStatus("cancelled")
	f = tb.form()
	if f.CancelControls != 0 || f.ToReservation || f.NewIntentHidden || f.NewIntent != "Start another reservation" || f.Focus != "reservation-"+id || !f.SubmitHidden {
		t.Errorf("after cancelling: %+v, want no cancel control, only \"Start another reservation\", and the focus on the list item", f)
	}
	if !strings.HasPrefix(f.Status, "Cancelled: 2 places in ") || !strings.HasSuffix(f.Status, " are free again.") {
		t.Errorf("status %q, want the cancellation of 2 places", f.Status)
	}
	key := tb.cancelKey()
	if key == tb.intentKey() {
		t.Errorf("the cancellation reused the reservation's key %s", key)
	}
	if n := d.reserved(t, demo); n != 0 {
		t.Errorf("%d places reserved after the cancellation, want 0", n)
	}
	r := d.reservation(t, id)
	if !r.Cancelled() || r.CancelOperation != engine.OperationKey(key) {
		t.Errorf("the daemon's reservation %+v, want it cancelled under the page's key %s", r, key)
	}
	if got, n := d.cancels(t); n != 1 || got["cancelled"] != 1 {
		t.Errorf("cancellation requests by outcome %v, want exactly one, cancelled", got)
	}

	sent := tb.sentCancels()
	tb.do("reload", chromedp.Reload())
	tb.waitReady()
	tb.waitStatus("cancelled")
	if f := tb.form(); f.CancelControls != 0 || f.NewIntentHidden {
		t.Errorf("after the reload: %+v, want the settled cancellation and only the new intent", f)
	}
	if n := tb.sentCancels() - sent; n != 0 {
		t.Errorf("the page sent %d cancellations on load, want none", n)
	}

	tb.click("new-intent")
	if f := tb.form(); f.Intent != "" || f.CancelIntent != "" || f.ToReservation || f.WorkshopDisabled {
		t.Errorf("after new intent: %+v, want both intents gone and an open choice", f)
	}
	tb.waitReady()
	tb.reserve(2) // The freed places serve the new intent.
	if n := d.reserved(t, demo); n != 2 {
		t.Errorf("%d places reserved by the new intent, want 2", n)
	}
}

// A cancellation whose answer is garbled stays open ("cancellation unclear
// — retry", no new intent); a reload shows it again and sends nothing; the
// retry sends the same key and gets the cancellation the daemon committed
// the first time, replayed. The reservation is cancelled exactly once.
func TestCancelGarbledRetryAfterReload(t *testing.T) {
	d := startDaemon(t)
	tb := openTab(t, d)
	tb.signIn("")
	id := tb.reserve(2)

	d.arm(t, api.FaultGarbleResponse)
	tb.click("cancel-" + id)
	tb.waitStatus("cancelUnclear")
	f := tb.form()
	if f.CancelControls != 1 || f.CancelDisabled || f.Cancel != "Retry cancellation" || !f.NewIntentHidden || f.Focus != "cancel-"+id {
		t.Errorf("after a garbled answer: %+v, want only the list's \"Retry cancellation\", focused", f)
	}
	if !strings.HasPrefix(f.Status, "Cancellation unclear — retry") {
		t.Errorf("status %q, want cancellation unclear — retry", f.Status)
	}
	key := tb.cancelKey()
	if _, n := d.cancels(t); n != 1 {
		t.Fatalf("%d cancellation requests reached the daemon, want 1", n)
	}
	if n := d.reserved(t, demo); n != 0 {
		t.Fatalf("%d places reserved after the garbled cancellation, want 0 (it was committed)", n)
	}

	sent := tb.sentCancels()
	tb.do("reload", chromedp.Reload())
	tb.waitReady()
	tb.waitStatus("cancelResumed")
	f = tb.form()
	if f.CancelControls != 1 || f.CancelDisabled || f.Cancel != "Retry cancellation" || !f.NewIntentHidden || !reservationID.MatchString(f.Receipt) {
		t.Errorf("after the reload: %+v, want the reservation with the list's \"Retry cancellation\" and no new intent", f)
	}
	if n := tb.sentCancels() - sent; n != 0 {
		t.Errorf("the page sent %d cancellations on load, want none", n)
	}
	if _, n := d.cancels(t); n != 1 {
		t.Errorf("%d cancellation requests reached the daemon after the reload, want still 1", n)
	}
	if k := tb.cancelKey(); k != key {
		t.Errorf("the reload changed the cancel key %s to %s", key, k)
	}

	tb.click("cancel-" + id)
	tb.waitStatus("cancelled")
	if got, n := d.cancels(t); n != 2 || got["replayed"] != 1 {
		t.Errorf("cancellation requests by outcome %v, want 2 with the retry replayed", got)
	}
	if k := tb.cancelKey(); k != key {
		t.Errorf("the retry used the key %s, want %s", k, key)
	}
	if r := d.reservation(t, id); r.CancelOperation != engine.OperationKey(key) {
		t.Errorf("the reservation %+v, want it cancelled under %s", r, key)
	}
	if v := d.receipt(t, key); v.HTTPStatus != 200 {
		t.Errorf("the cancel receipt %+v, want 200 cancelled", v)
	}
	if n := d.reserved(t, demo); n != 0 {
		t.Errorf("%d places reserved after the retry, want 0", n)
	}
	if f := tb.form(); f.NewIntentHidden || f.CancelControls != 0 || f.Focus != "reservation-"+id {
		t.Errorf("after the retry: %+v, want only the new intent and the focus on the list item", f)
	}
}

// A double click on "Cancel reservation" while the first POST is held by
// the DevTools Fetch domain sends exactly one cancellation.
func TestCancelDoubleClickSendsOnePost(t *testing.T) {
	d := startDaemon(t)
	tb := openTab(t, d)
	tb.signIn("")
	id := tb.reserve(1)
	tb.holdRequests("*/cancel")
	tb.doubleClick("cancel-" + id)
	tb.waitStatus("cancelling")
	if f := tb.form(); !f.CancelDisabled || !f.NewIntentHidden || f.Cancel != "Cancelling…" {
		t.Errorf("while the POST is held: %+v, want the list's cancel button disabled saying \"Cancelling…\" and no new intent", f)
	}
	if _, n := d.cancels(t); n != 0 {
		t.Fatalf("%d cancellations reached the daemon while the browser holds the request", n)
	}
	tb.releaseOnly("cancellation requests")
	tb.waitStatus("cancelled")
	if n := len(tb.pausedRequests()); n != 1 {
		t.Errorf("the page sent %d cancellation requests in all, want 1", n)
	}
	if got, n := d.cancels(t); n != 1 || got["cancelled"] != 1 {
		t.Errorf("cancellation requests by outcome %v, want exactly one, cancelled", got)
	}
	if n := d.reserved(t, demo); n != 0 {
		t.Errorf("%d places reserved, want 0", n)
	}
}

// A reservation cancelled elsewhere (here by the admin on the socket)
// answers the page's own cancellation with a stored 409 already_cancelled,
// which is authoritative: the page says so, in German too, and offers the
// new intent.
func TestCancelAlreadyCancelledElsewhere(t *testing.T) {
	d := startDaemon(t)
	tb := openTab(t, d)
	tb.signIn("")
	id := tb.reserve(1)
	status, body, _, err := d.socket.Cancel(d.ctx(t), engine.OperationKey(uuid.NewString()), id)
	if err != nil || status != 200 {
		t.Fatalf("cancel on the socket: %d %s %v", status, body, err)
	}

	tb.click("lang")
	tb.click("cancel-" + id)
	tb.waitStatus("alreadyCancelled")
	f := tb.form()
	if !strings.HasPrefix(f.Status, "Bereits storniert") || f.NewIntentHidden || f.NewIntent != "Weitere Reservierung beginnen" || f.CancelControls != 0 {
		t.Errorf("after already cancelled: %+v, want the German answer and only the new intent", f)
	}
	if got, n := d.cancels(t); n != 2 || got["already_cancelled"] != 1 {
		t.Errorf("cancellation requests by outcome %v, want the socket's and the page's already_cancelled", got)
	}
	if n := d.reserved(t, demo); n != 0 {
		t.Errorf("%d places reserved, want 0", n)
	}
}
