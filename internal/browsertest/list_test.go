package browsertest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
)

// The route labels of confirmations and releases in the daemon's metrics.
const (
	confirmRoute = "POST /api/v1/holds/{id}/confirm"
	releaseRoute = "POST /api/v1/holds/{id}/release"
)

// sum adds up requests by outcome.
func sum(byOutcome map[string]int) int {
	n := 0
	for _, v := range byOutcome {
		n += v
	}
	return n
}

// holdFor holds quantity places of the demo workshop for ttl seconds as
// the actor of c and returns the hold id.
func (d *daemon) holdFor(t *testing.T, c *client.Client, quantity, ttl int) string {
	t.Helper()
	res, err := c.Send(d.ctx(t), engine.OperationKey(uuid.NewString()), client.Holding(engine.HoldRequest{Workshop: demo, Quantity: quantity, TTLSeconds: ttl}))
	if err != nil || res.Answer.Status != engine.StatusHeld {
		t.Fatalf("hold %d places: %+v %v", quantity, res, err)
	}
	return res.Answer.HoldID
}

// reserveFor reserves quantity places of the demo workshop as the actor of
// c and returns the reservation id.
func (d *daemon) reserveFor(t *testing.T, c *client.Client, quantity int) string {
	t.Helper()
	res, err := c.Send(d.ctx(t), engine.OperationKey(uuid.NewString()), client.Reserving(engine.Request{Workshop: demo, Quantity: quantity}))
	if err != nil || res.Answer.Status != engine.StatusReserved {
		t.Fatalf("reserve %d places: %+v %v", quantity, res, err)
	}
	return res.Answer.ReservationID
}

// itemState is what the list shows of one item.
type itemState struct {
	Shown   bool              `json:"shown"`
	State   string            `json:"state"`  // data-state: active, cancelled, held, expired, confirmed, released.
	What    string            `json:"what"`   // .item-what
	Kind    string            `json:"kind"`   // .item-status's data-kind: the message's text key.
	Status  string            `json:"status"` // .item-status
	Buttons map[string]string `json:"buttons"`
	Enabled map[string]bool   `json:"enabled"`
}

// item reads the list item with element id ("reservation-<id>" or
// "hold-<id>"): its visible buttons by kind with their text.
func (tb *tab) item(id string) itemState {
	tb.t.Helper()
	return eval[itemState](tb, fmt.Sprintf(`(() => {
		const li = document.getElementById(%q);
		if (!li) return {shown: false, buttons: {}, enabled: {}};
		const buttons = {}, enabled = {};
		for (const b of li.querySelectorAll("button")) {
			if (!b.hidden) { buttons[b.dataset.kind] = b.textContent; enabled[b.dataset.kind] = !b.disabled; }
		}
		const s = li.querySelector(".item-status");
		return {shown: true, state: li.dataset.state || "", what: li.querySelector(".item-what").textContent,
			kind: s.dataset.kind || "", status: s.textContent, buttons, enabled};
	})()`, id))
}

// waitItem waits until the item's message is of kind.
func (tb *tab) waitItem(id, kind string) {
	tb.t.Helper()
	tb.poll(id+" "+kind, fmt.Sprintf(`(() => { const li = document.getElementById(%q); return li !== null && li.querySelector(".item-status").dataset.kind === %q; })()`, id, kind))
}

// The list shows the signed-in person's own reservations, not another's,
// and its Cancel button cancels one: the daemon frees the places, the item
// says so and shows the reservation cancelled, and a reservation made by
// the form and cancelled from the list is cancelled for the form too.
func TestListCancelsOwnReservation(t *testing.T) {
	d := startDaemon(t)
	other := d.reserveFor(t, d.as(t, "bob"), 1)
	tb := openTab(t, d)
	tb.signIn("alice")
	id := tb.reserve(2)
	item := "reservation-" + id
	tb.poll("the reservation in the list", fmt.Sprintf(`document.getElementById(%q) !== null`, item))
	if it := tb.item(item); it.State != "active" || it.What != "2 places in Demo workshop · reserved" || it.Buttons["cancel"] != "Cancel reservation" || len(it.Buttons) != 1 {
		t.Errorf("the listed reservation: %+v, want 2 active places with Cancel", it)
	}
	if n := eval[int](tb, `document.querySelectorAll("#reservation-list li").length`); n != 1 || tb.item("reservation-"+other).Shown {
		t.Errorf("alice's list shows %d reservations, want only her own (not bob's %s)", n, other)
	}

	tb.click("cancel-" + id)
	tb.waitItem(item, "cancelled")
	tb.poll("the cancelled state", fmt.Sprintf(`document.getElementById(%q).dataset.state === "cancelled"`, item))
	if it := tb.item(item); it.Status != "Cancelled: 2 places in Demo workshop are free again." || len(it.Buttons) != 0 {
		t.Errorf("after cancelling from the list: %+v, want the cancellation and no button", it)
	}
	if r := d.reservation(t, id); !r.Cancelled() || r.CancelOperation != engine.OperationKey(tb.opKey("alice", "cancel", id)) {
		t.Errorf("the daemon's reservation %+v, want it cancelled under the page's key", r)
	}
	if f := tb.form(); f.Kind != "cancelled" || f.CancelControls != 0 || f.NewIntentHidden {
		t.Errorf("the form after its reservation was cancelled from the list: %+v, want the cancellation and only the new intent", f)
	}
	if got, n := d.cancels(t); n != 1 || got["cancelled"] != 1 {
		t.Errorf("cancellation requests by outcome %v, want exactly one, cancelled", got)
	}
	if n := d.reserved(t, demo); n != 1 {
		t.Errorf("%d places reserved, want bob's 1", n)
	}
}

// A cancellation from the list whose answer is garbled stays open: the
// item offers only "Retry cancellation"; a reload shows it again and sends
// nothing; the retry sends the same key and gets the committed answer.
func TestListCancelGarbledRetryAfterReload(t *testing.T) {
	d := startDaemon(t)
	id := d.reserveFor(t, d.as(t, "alice"), 1)
	item := "reservation-" + id
	tb := openTab(t, d)
	tb.signIn("alice")
	tb.poll("the reservation in the list", fmt.Sprintf(`document.getElementById(%q) !== null`, item))

	d.arm(t, api.FaultGarbleResponse)
	tb.click("cancel-" + id)
	tb.waitItem(item, "cancelUnclear")
	key := tb.opKey("alice", "cancel", id)
	if it := tb.item(item); it.Buttons["cancel"] != "Retry cancellation" || !it.Enabled["cancel"] || !strings.HasPrefix(it.Status, "Cancellation unclear — retry") {
		t.Errorf("after a garbled answer: %+v, want only \"Retry cancellation\"", it)
	}
	if f := tb.form(); f.Kind == "cancelUnclear" || f.WorkshopDisabled {
		t.Errorf("the form after a list item's cancellation: %+v, want it untouched", f)
	}

	tb.do("reload", chromedp.Reload())
	tb.waitReady()
	tb.waitItem(item, "cancelResumed")
	if it := tb.item(item); it.Buttons["cancel"] != "Retry cancellation" || it.State != "cancelled" {
		t.Errorf("after the reload: %+v, want the committed cancellation listed with \"Retry cancellation\"", it)
	}
	if _, n := d.cancels(t); n != 1 {
		t.Errorf("%d cancellation requests after the reload, want still 1", n)
	}
	tb.click("cancel-" + id)
	tb.waitItem(item, "cancelled")
	if got, n := d.cancels(t); n != 2 || got["replayed"] != 1 {
		t.Errorf("cancellation requests by outcome %v, want 2 with the retry replayed", got)
	}
	if k := tb.opKey("alice", "cancel", id); k != key {
		t.Errorf("the retry used the key %s, want %s", k, key)
	}
	if r := d.reservation(t, id); r.CancelOperation != engine.OperationKey(key) {
		t.Errorf("the reservation %+v, want it cancelled under %s", r, key)
	}
}

// A hold is listed with a live countdown to its deadline and Confirm and
// Release. A double click on Confirm while the POST is held sends one
// confirmation, with both buttons locked; its answer turns the hold into a
// reservation, which the list then shows with Cancel.
func TestListHoldCountdownConfirm(t *testing.T) {
	d := startDaemon(t)
	hold := d.holdFor(t, d.as(t, "alice"), 2, 600)
	item := "hold-" + hold
	tb := openTab(t, d)
	tb.signIn("alice")
	tb.poll("the hold in the list", fmt.Sprintf(`document.getElementById(%q) !== null`, item))
	it := tb.item(item)
	if it.State != "held" || !strings.HasPrefix(it.What, "2 places in Demo workshop · held, ") || !strings.HasSuffix(it.What, " left") ||
		it.Buttons["confirm"] != "Confirm" || it.Buttons["release"] != "Release" {
		t.Fatalf("the listed hold: %+v, want 2 held places with a countdown, Confirm and Release", it)
	}
	tb.poll("the countdown to move", fmt.Sprintf(`document.querySelector("#%s .item-what").textContent !== %q`, item, it.What))

	tb.holdRequests("*/confirm")
	tb.doubleClick("confirm-" + hold)
	tb.waitItem(item, "confirming")
	if it := tb.item(item); it.Enabled["confirm"] || len(it.Buttons) != 1 || it.Buttons["confirm"] != "Confirming…" {
		t.Errorf("while the POST is held: %+v, want only Confirm, disabled, saying \"Confirming…\"", it)
	}
	tb.releaseOnly("confirmations")
	tb.waitItem(item, "confirmed")
	tb.poll("the confirmed hold", fmt.Sprintf(`document.getElementById(%q).dataset.state === "confirmed"`, item))
	if it := tb.item(item); it.Status != "Confirmed: 2 places in Demo workshop are now your reservation." || len(it.Buttons) != 0 {
		t.Errorf("after confirming: %+v, want the confirmation and no button", it)
	}
	h, err := d.socket.Hold(d.ctx(t), hold)
	if err != nil || h.ReservationID == "" {
		t.Fatalf("the daemon's hold %+v: %v, want it confirmed", h, err)
	}
	reservation := "reservation-" + h.ReservationID
	tb.poll("the new reservation in the list", fmt.Sprintf(`document.getElementById(%q) !== null`, reservation))
	if it := tb.item(reservation); it.State != "active" || it.Buttons["cancel"] != "Cancel reservation" {
		t.Errorf("the reservation from the hold: %+v, want it active with Cancel", it)
	}
	if got := d.requests(t, confirmRoute); sum(got) != 1 {
		t.Errorf("confirmations by outcome %v, want exactly one", got)
	}
	if n := d.reserved(t, demo); n != 2 {
		t.Errorf("%d places reserved, want the hold's 2", n)
	}
}

// A release whose answer is garbled stays open, with only its retry (no
// Confirm while the release's outcome is unknown); a reload shows it again
// and sends nothing; the retry sends the same key and gets the release
// the daemon committed.
func TestListHoldReleaseGarbledRetryAfterReload(t *testing.T) {
	d := startDaemon(t)
	hold := d.holdFor(t, d.as(t, "alice"), 1, 600)
	item := "hold-" + hold
	tb := openTab(t, d)
	tb.signIn("alice")
	tb.poll("the hold in the list", fmt.Sprintf(`document.getElementById(%q) !== null`, item))

	d.arm(t, api.FaultGarbleResponse)
	tb.click("release-" + hold)
	tb.waitItem(item, "releaseUnclear")
	key := tb.opKey("alice", "release", hold)
	if it := tb.item(item); len(it.Buttons) != 1 || it.Buttons["release"] != "Retry release" || !strings.HasPrefix(it.Status, "Release unclear — retry") {
		t.Errorf("after a garbled answer: %+v, want only \"Retry release\"", it)
	}
	// The sign-out warning counts the open release.
	tb.click("sign-out")
	tb.poll("the sign-out warning", `!document.getElementById("sign-out-warning").hidden`)
	tb.click("sign-out-stay")

	tb.do("reload", chromedp.Reload())
	tb.waitReady()
	tb.waitItem(item, "releaseResumed")
	if it := tb.item(item); len(it.Buttons) != 1 || it.Buttons["release"] != "Retry release" || it.State != "released" {
		t.Errorf("after the reload: %+v, want the committed release listed with only \"Retry release\"", it)
	}
	if got := d.requests(t, releaseRoute); sum(got) != 1 {
		t.Errorf("releases by outcome %v after the reload, want still 1", got)
	}
	tb.click("release-" + hold)
	tb.waitItem(item, "released")
	if got := d.requests(t, releaseRoute); sum(got) != 2 || got["replayed"] != 1 {
		t.Errorf("releases by outcome %v, want 2 with the retry replayed", got)
	}
	if k := tb.opKey("alice", "release", hold); k != key {
		t.Errorf("the retry used the key %s, want %s", k, key)
	}
	if h, err := d.socket.Hold(d.ctx(t), hold); err != nil || h.SettleOperation != engine.OperationKey(key) {
		t.Errorf("the daemon's hold %+v: %v, want it released under %s", h, err, key)
	}
	if got := d.requests(t, confirmRoute); sum(got) != 0 {
		t.Errorf("confirmations %v, want none", got)
	}
}
