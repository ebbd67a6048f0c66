package browsertest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
)

// leaveRoute is the route label of leaving a waiting list in the daemon's
// metrics.
const leaveRoute = "POST /api/v1/waitlist/{id}/leave"

// pottery is the workshop of the waiting list tests: one place.
const pottery = "pottery"

// fullWorkshop creates workshop id, titled title, with one place, which
// bob reserves, and whose offers last ttl seconds; it returns bob's
// reservation.
func (d *daemon) fullWorkshop(t *testing.T, id, title string, ttl int) string {
	t.Helper()
	d.putWorkshopJSON(t, id, fmt.Sprintf(`{"title": %q, "capacity": 1, "max_quantity": 1, "offer_ttl_seconds": %d}`, title, ttl))
	res, err := d.as(t, "bob").Send(d.ctx(t), engine.OperationKey(uuid.NewString()), client.Reserving(engine.Request{Workshop: id, Quantity: 1}))
	if err != nil || res.Answer.Status != engine.StatusReserved {
		t.Fatalf("bob reserves the place of %s: %+v %v", id, res, err)
	}
	return res.Answer.ReservationID
}

// joinFor puts the actor of c on the waiting list of workshop for one
// place and returns the entry.
func (d *daemon) joinFor(t *testing.T, c *client.Client, workshop string) string {
	t.Helper()
	res, err := c.Send(d.ctx(t), engine.OperationKey(uuid.NewString()), client.Reserving(engine.Request{Workshop: workshop, Quantity: 1, Waitlist: true}))
	if err != nil || res.Answer.Status != engine.StatusWaiting {
		t.Fatalf("join the waiting list of %s: %+v %v", workshop, res, err)
	}
	return res.Answer.EntryID
}

// queue returns the daemon's waiting list of workshop id, in the order its
// entries joined.
func (d *daemon) queue(t *testing.T, id string) []engine.WaitEntry {
	t.Helper()
	resp, body, err := d.socket.Do(d.ctx(t), http.MethodGet, api.WorkshopWaitlistPath(id), nil, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the waiting list of %s: %v %v %s", id, resp, err, body)
	}
	var page api.WaitlistPage
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatalf("the waiting list of %s: %v: %s", id, err, body)
	}
	return page.Entries
}

// cancelAsAdmin cancels reservation id on the socket, as an organizer:
// its place is freed and offered to the waiting list.
func (d *daemon) cancelAsAdmin(t *testing.T, id string) {
	t.Helper()
	status, body, _, err := d.socket.Cancel(d.ctx(t), engine.OperationKey(uuid.NewString()), id)
	if err != nil || status != http.StatusOK {
		t.Fatalf("cancel %s on the socket: %d %s %v", id, status, body, err)
	}
}

// joinState is what the form shows of its ways to send.
type joinState struct {
	Join         string `json:"join"`
	JoinHidden   bool   `json:"joinHidden"`
	JoinDisabled bool   `json:"joinDisabled"`
	SubmitHidden bool   `json:"submitHidden"`
	Hint         string `json:"hint"` // The reason for joining, as shown.
	Describes    bool   `json:"describes"`
	Availability string `json:"availability"`
	Instead      string `json:"instead"` // The offer to join after a refusal, "" when it is not shown.
}

func (tb *tab) joinState() joinState {
	tb.t.Helper()
	return eval[joinState](tb, `(() => {
		const $ = (id) => document.getElementById(id);
		const shown = (e) => e.getClientRects().length > 0;
		return {
			join: $("join").textContent, joinHidden: !shown($("join")), joinDisabled: $("join").disabled,
			submitHidden: !shown($("submit")), hint: shown($("full-hint")) ? $("full-hint").textContent : "",
			describes: ($("join").getAttribute("aria-describedby") || "").split(" ").includes("full-hint"),
			availability: $("availability").textContent,
			instead: shown($("join-instead")) ? $("join-instead").textContent : "",
		};
	})()`)
}

// join joins the chosen workshop's waiting list on the page and returns
// the entry the form's receipt names.
func (tb *tab) join(workshop string) string {
	tb.t.Helper()
	tb.choose(workshop, 1)
	tb.click("join")
	tb.waitStatus("waiting")
	id := reservationID.FindString(tb.form().Receipt)
	if id == "" {
		tb.t.Fatalf("the page names no waiting list entry: %+v", tb.form())
	}
	tb.poll("the entry in the waiting list", fmt.Sprintf(`document.getElementById("entry-%s") !== null`, id))
	return id
}

// waitEntryState waits until the page shows entry id in state (the daemon
// makes an offer when places are freed; the page reads its lists again
// while an entry waits or is offered places).
func (tb *tab) waitEntryState(id, state string) {
	tb.t.Helper()
	tb.poll("entry "+id+" "+state, fmt.Sprintf(`(() => { const li = document.getElementById("entry-%s"); return li !== null && li.dataset.state === %q; })()`, id, state))
}

// waitPollMS is how often the pages of the tests that wait for an offer
// read their lists again while an entry waits or is offered places; the
// page's own 5 s would make each change seen up to 5 s late.
const waitPollMS = 200

// pollWaitFast makes every page the tab loads from now on read its lists
// every waitPollMS (window.reserveWaitPollMs, which app.js reads at every
// tick of its countdowns, once a second).
func (tb *tab) pollWaitFast() {
	tb.t.Helper()
	tb.do("read the lists every "+strconv.Itoa(waitPollMS)+" ms", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
			Source: "window.reserveWaitPollMs = " + strconv.Itoa(waitPollMS) + ";",
		})
		return err
	}))
}

// offerLine returns the line of entry id that states its offer, "" when it
// shows none.
func (tb *tab) offerLine(id string) string {
	tb.t.Helper()
	return eval[string](tb, fmt.Sprintf(`(() => { const p = document.querySelector("#entry-%s .item-offer"); return p && !p.hidden ? p.textContent : ""; })()`, id))
}

// THE waiting list's flow on the person's page: on a full workshop the
// form offers "Join the waiting list" instead of Reserve; a real double
// click on it while its POST is held sends one request, which makes one
// entry, and the answer shows the position. The entry is listed as
// waiting with Leave. When an organizer cancels the reservation that took
// the place, the page shows the offer by itself, with a live countdown to
// its deadline, Accept and Decline, and not among the holds; Accept makes
// the reservation.
func TestWaitlistJoinOfferAccept(t *testing.T) {
	d := startDaemon(t)
	bobs := d.fullWorkshop(t, pottery, "Pottery", 600)
	tb := openTab(t, d)
	tb.pollWaitFast()
	tb.signIn("alice")
	tb.choose(pottery, 1)
	js := tb.joinState()
	if js.JoinHidden || !js.SubmitHidden || js.Join != "Join the waiting list" || !js.Describes ||
		js.Hint != "No place is free. Join the waiting list to be offered places when they are freed." || js.Availability != "0 of 1 places free" {
		t.Errorf("on a full workshop the form shows %+v, want only \"Join the waiting list\", described by why", js)
	}
	tb.choose(demo, 1)
	if js := tb.joinState(); !js.JoinHidden || js.SubmitHidden {
		t.Errorf("on a workshop with free places the form shows %+v, want Reserve and no join", js)
	}
	tb.choose(pottery, 1)

	before := d.posts(t) // Bob's.
	tb.holdRequests("*" + api.PathReservations)
	tb.doubleClick("join")
	tb.waitStatus("sending")
	if js := tb.joinState(); !js.JoinDisabled || js.Join != "Sending…" {
		t.Errorf("while the POST is held: %+v, want the join button disabled saying \"Sending…\"", js)
	}
	tb.releaseOnly("requests to join")
	tb.waitStatus("waiting")
	f := tb.form()
	if !strings.HasPrefix(f.Status, "On the waiting list: you are number 1 for 1 place in Pottery.") || f.NewIntentHidden || f.NewIntent != "Start another reservation" {
		t.Errorf("after joining: %+v, want the position and only \"Start another reservation\"", f)
	}
	if js := tb.joinState(); !js.JoinHidden || !js.SubmitHidden {
		t.Errorf("after joining the form shows %+v, want neither Reserve nor join", js)
	}
	entry := reservationID.FindString(f.Receipt)
	if n, m := len(tb.pausedRequests()), d.posts(t)-before; n != 1 || m != 1 {
		t.Errorf("the page sent %d requests, %d reached the daemon; want 1 and 1", n, m)
	}
	if q := d.queue(t, pottery); len(q) != 1 || q[0].ID != entry || q[0].Actor != "alice" || q[0].State != engine.WaitWaiting || q[0].OperationKey != engine.OperationKey(tb.intentKey()) {
		t.Fatalf("the daemon's waiting list %+v, want alice's one entry %s under the page's key", q, entry)
	}
	item := "entry-" + entry
	tb.poll("the entry in the waiting list", fmt.Sprintf(`document.getElementById(%q) !== null`, item))
	if it := tb.item(item); it.State != "waiting" || it.What != "1 place in Pottery · waiting, number 1" || len(it.Buttons) != 1 || it.Buttons["leave"] != "Leave the waiting list" {
		t.Errorf("the listed entry: %+v, want it waiting as number 1 with only Leave", it)
	}

	d.cancelAsAdmin(t, bobs)
	tb.waitEntryState(entry, "offered")
	it := tb.item(item)
	if !strings.HasPrefix(it.What, "1 place in Pottery · offered to you, ") || !strings.HasSuffix(it.What, " left to accept") ||
		len(it.Buttons) != 2 || it.Buttons["accept"] != "Accept" || it.Buttons["decline"] != "Decline" {
		t.Fatalf("the offered entry: %+v, want a countdown, Accept and Decline", it)
	}
	if line := tb.offerLine(entry); !strings.HasPrefix(line, "Places are free for you until ") {
		t.Errorf("the offer says %q, want its deadline", line)
	}
	tb.poll("the countdown to move", fmt.Sprintf(`document.querySelector("#%s .item-what").textContent !== %q`, item, it.What))
	if n := eval[int](tb, `document.querySelectorAll("#hold-list li").length`); n != 0 {
		t.Errorf("the holds list shows %d holds, want none: the offer is shown with its entry", n)
	}

	tb.click("accept-" + entry)
	tb.waitItem(item, "accepted")
	tb.waitEntryState(entry, "reserved")
	if it := tb.item(item); it.Status != "Accepted: 1 place in Pottery is now your reservation." || len(it.Buttons) != 0 || tb.offerLine(entry) != "" {
		t.Errorf("after accepting: %+v, want the acceptance and no button", it)
	}
	q := d.queue(t, pottery)
	if len(q) != 1 || q[0].State != engine.WaitReserved {
		t.Fatalf("the daemon's waiting list %+v, want alice's entry reserved", q)
	}
	h, err := d.socket.Hold(d.ctx(t), q[0].HoldID)
	if err != nil || h.ReservationID == "" || h.Actor != "alice" || h.SettleOperation != engine.OperationKey(tb.opKey("alice", "accept", q[0].HoldID)) {
		t.Fatalf("the offer's hold %+v: %v, want it confirmed for alice under the page's key", h, err)
	}
	tb.poll("the reservation in the list", fmt.Sprintf(`document.getElementById("reservation-%s") !== null`, h.ReservationID))
	if n := d.reserved(t, pottery); n != 1 {
		t.Errorf("%d places reserved in pottery, want alice's 1", n)
	}
	if got := d.requests(t, confirmRoute); sum(got) != 1 {
		t.Errorf("confirmations by outcome %v, want exactly one", got)
	}
}

// A person who declines an offer passes it on: of two people waiting, the
// first is offered the place freed and declines it on the page, and the
// second's page then shows the offer. Before the second joins, the form
// says how many wait. The organizer's page shows the waiting list in the
// order people joined, with their states.
func TestWaitlistDeclinePassesOfferOn(t *testing.T) {
	d := startDaemon(t)
	bobs := d.fullWorkshop(t, pottery, "Pottery", 600)
	alice := openTab(t, d)
	alice.pollWaitFast()
	alice.signIn("alice")
	first := alice.join(pottery)
	carol := openTab(t, d)
	carol.pollWaitFast()
	carol.signIn("carol")
	carol.choose(pottery, 1)
	if js := carol.joinState(); js.JoinHidden || js.Availability != "0 of 1 places free · 1 waiting" ||
		js.Hint != "No place is free for you: 1 person is waiting. Join the waiting list to be offered places in turn when they are freed." {
		t.Errorf("the form for the second person: %+v, want join with how many wait", js)
	}
	second := carol.join(pottery)
	if s := carol.form().Status; !strings.HasPrefix(s, "On the waiting list: you are number 2 for 1 place in Pottery.") {
		t.Errorf("the second person's answer %q, want number 2", s)
	}

	d.cancelAsAdmin(t, bobs)
	alice.waitEntryState(first, "offered")
	carol.poll("the second entry first in line", fmt.Sprintf(`document.querySelector("#entry-%s .item-what").textContent === "1 place in Pottery · waiting, number 1"`, second))
	alice.click("decline-" + first)
	alice.waitItem("entry-"+first, "declined")
	alice.waitEntryState(first, "left")
	if it := alice.item("entry-" + first); it.Status != "Declined: 1 place in Pottery goes on to the next person waiting." || len(it.Buttons) != 0 {
		t.Errorf("after declining: %+v, want the decline and no button", it)
	}
	carol.waitEntryState(second, "offered")
	if it := carol.item("entry-" + second); it.Buttons["accept"] != "Accept" || it.Buttons["decline"] != "Decline" {
		t.Errorf("the offer passed on: %+v, want Accept and Decline", it)
	}
	q := d.queue(t, pottery)
	if len(q) != 2 || q[0].ID != first || q[0].State != engine.WaitLeft || q[1].ID != second || q[1].State != engine.WaitOffered {
		t.Fatalf("the daemon's waiting list %+v, want alice's entry left and carol's offered", q)
	}
	if got := d.requests(t, leaveRoute); sum(got) != 1 {
		t.Errorf("leave requests by outcome %v, want exactly one", got)
	}

	org := openTab(t, d)
	org.openAdmin()
	if s := org.text("item-" + pottery); !strings.Contains(s, "0 waiting; an offer lasts 10 minutes") {
		t.Errorf("the organizer's list shows %q, want the waiting list's count and offer time", s)
	}
	org.click("waitlist-" + pottery)
	org.until("the waiting list", `document.querySelectorAll("#queue-list li").length === 2`)
	rows := eval[[]map[string]string](org, `[...document.querySelectorAll("#queue-list li")].map((li) => ({actor: li.dataset.actor, state: li.dataset.state, text: li.textContent}))`)
	if rows[0]["actor"] != "alice" || rows[0]["state"] != "left" || !strings.HasSuffix(rows[0]["text"], " · left") ||
		rows[1]["actor"] != "carol" || rows[1]["state"] != "offered" || !strings.Contains(rows[1]["text"], " · offered, until ") {
		t.Errorf("the organizer's waiting list shows %v, want alice left, then carol offered with the deadline", rows)
	}
	if s := org.text("queue-summary"); s != "0 waiting, in the order they joined; an offer lasts 10 minutes." {
		t.Errorf("the waiting list's summary %q", s)
	}
}

// Joining whose answer is lost stays open ("outcome unclear — retry" on
// the join button); a reload shows it again and sends nothing; the retry
// sends the same key and gets the entry the daemon made the first time,
// so there is one entry. Leaving it from the list takes it off the list.
func TestWaitlistJoinLostAnswerRetryAfterReload(t *testing.T) {
	d := startDaemon(t)
	d.fullWorkshop(t, pottery, "Pottery", 600)
	tb := openTab(t, d)
	tb.signIn("alice")
	tb.choose(pottery, 1)
	d.arm(t, api.FaultGarbleResponse)
	tb.click("join")
	tb.waitStatus("joinUnclear")
	if js, f := tb.joinState(), tb.form(); js.JoinHidden || js.Join != "Retry" || !js.SubmitHidden || !f.NewIntentHidden || !f.WorkshopDisabled ||
		!strings.HasPrefix(f.Status, "Outcome unclear — retry. You may or may not be on the waiting list") {
		t.Errorf("after a garbled answer: %+v %+v, want only the join's Retry", js, f)
	}
	key := tb.intentKey()
	if q := d.queue(t, pottery); len(q) != 1 {
		t.Fatalf("the daemon's waiting list %+v, want the one entry it made", q)
	}

	sent := tb.sentPosts()
	tb.do("reload", chromedp.Reload())
	tb.waitReady()
	tb.waitStatus("joinResumed")
	if js := tb.joinState(); js.JoinHidden || js.Join != "Retry" || !js.SubmitHidden {
		t.Errorf("after the reload: %+v, want the join's Retry", js)
	}
	if n := tb.sentPosts() - sent; n != 0 {
		t.Errorf("the page sent %d requests on load, want none", n)
	}
	tb.click("join")
	tb.waitStatus("waiting")
	if k := tb.intentKey(); k != key {
		t.Errorf("the retry used the key %s, want %s", k, key)
	}
	if got := d.requests(t, "POST "+api.PathReservations); got["replayed"] != 1 || sum(got) != 3 {
		t.Errorf("reservation requests by outcome %v, want bob's, the garbled join and its replay", got)
	}
	q := d.queue(t, pottery)
	if len(q) != 1 || q[0].OperationKey != engine.OperationKey(key) {
		t.Fatalf("the daemon's waiting list %+v, want one entry under %s", q, key)
	}
	entry := q[0].ID
	if id := reservationID.FindString(tb.form().Receipt); id != entry {
		t.Errorf("the form names entry %q, want %s", id, entry)
	}

	tb.poll("the entry in the waiting list", fmt.Sprintf(`document.getElementById("entry-%s") !== null`, entry))
	tb.click("leave-" + entry)
	tb.waitItem("entry-"+entry, "left")
	tb.waitEntryState(entry, "left")
	if it := tb.item("entry-" + entry); it.Status != "Left: you are no longer waiting for 1 place in Pottery." || len(it.Buttons) != 0 {
		t.Errorf("after leaving: %+v, want the answer and no button", it)
	}
	if q := d.queue(t, pottery); len(q) != 1 || q[0].State != engine.WaitLeft {
		t.Errorf("the daemon's waiting list %+v, want the entry left", q)
	}
	if w := d.workshop(t, pottery); w.Waiting != 0 {
		t.Errorf("%d people wait for pottery, want none", w.Waiting)
	}
}

// setCapacity changes only the capacity of workshop id, as the admin on
// the socket: its limit per reservation stays as it was, also above the
// new capacity.
func (d *daemon) setCapacity(t *testing.T, id string, capacity int) {
	t.Helper()
	if _, err := d.socket.PatchWorkshop(d.ctx(t), id, engine.WorkshopPatch{Capacity: &capacity}, nil); err != nil {
		t.Fatalf("set the capacity of %s to %d: %v", id, capacity, err)
	}
}

// A reservation refused as unavailable (2 places asked, 1 free) offers to
// join the waiting list for those 2 places, next to "Change selection". A
// real double click on it while its POST is held sends one request, under
// a new key, which makes one entry for 2 places; the answer shows the
// position, and the form then leads only to a new intent. The refused
// intent stays as the daemon answered it.
func TestJoinWaitingListAfterUnavailable(t *testing.T) {
	d := startDaemon(t)
	d.reserveFor(t, d.as(t, "bob"), 2) // 1 of the demo's 3 places is free.
	tb := openTab(t, d)
	tb.signIn("alice")
	tb.choose(demo, 2)
	tb.click("submit")
	tb.waitStatus("unavailable")
	refused := tb.intentKey()
	if js, f := tb.joinState(), tb.form(); js.Instead != "Join the waiting list for 2 places" || !js.JoinHidden || !js.SubmitHidden ||
		f.NewIntentHidden || f.NewIntent != "Change selection" {
		t.Fatalf("after the refusal: %+v %+v, want \"Join the waiting list for 2 places\" and \"Change selection\"", js, f)
	}

	before := d.posts(t)
	tb.holdRequests("*" + api.PathReservations)
	tb.doubleClick("join-instead")
	tb.waitStatus("sending")
	if js := tb.joinState(); js.Instead != "" || js.JoinHidden || !js.JoinDisabled || js.Join != "Sending…" {
		t.Errorf("while the POST is held: %+v, want only the join button, disabled, saying \"Sending…\"", js)
	}
	tb.releaseOnly("requests to join")
	tb.waitStatus("waiting")
	f := tb.form()
	if !strings.HasPrefix(f.Status, "On the waiting list: you are number 1 for 2 places in Demo workshop.") ||
		f.NewIntentHidden || f.NewIntent != "Start another reservation" || f.Focus != "new-intent" {
		t.Errorf("after joining: %+v, want the position and only \"Start another reservation\", focused", f)
	}
	if js := tb.joinState(); js.Instead != "" || !js.JoinHidden || !js.SubmitHidden {
		t.Errorf("after joining the form shows %+v, want no way to send", js)
	}
	key := tb.intentKey()
	if key == refused {
		t.Errorf("joining reused the refused intent's key %s", key)
	}
	if n, m := len(tb.pausedRequests()), d.posts(t)-before; n != 1 || m != 1 {
		t.Errorf("the page sent %d requests, %d reached the daemon; want 1 and 1", n, m)
	}
	entry := reservationID.FindString(f.Receipt)
	q := d.queue(t, demo)
	if len(q) != 1 || q[0].ID != entry || q[0].Actor != "alice" || q[0].Quantity != 2 || q[0].State != engine.WaitWaiting ||
		q[0].OperationKey != engine.OperationKey(key) {
		t.Fatalf("the daemon's waiting list %+v, want alice's one entry %s for 2 places under the page's new key", q, entry)
	}
	if r, err := d.as(t, "alice").Operation(d.ctx(t), engine.OperationKey(refused)); err != nil || !strings.Contains(string(r.Response), `"status":"unavailable"`) {
		t.Errorf("the refused intent's stored answer is %s (%v), want it still unavailable", r.Response, err)
	}
	tb.poll("the entry in the waiting list", fmt.Sprintf(`document.getElementById("entry-%s") !== null`, entry))
	if it := tb.item("entry-" + entry); it.What != "2 places in Demo workshop · waiting, number 1" {
		t.Errorf("the listed entry: %+v, want it waiting for 2 places as number 1", it)
	}
}

// Joining after a refusal is offered only for places the workshop has in
// all: not when 2 places are refused in a workshop of 1 place (its limit
// per reservation was left at 2 when its capacity was lowered). A request
// to join that the daemon refuses as unavailable, because the capacity was
// lowered below it after the offer was shown, says why, and joining is not
// offered again, also not after a reload once the capacity is back: that
// refusal is settled, and only a new intent may ask again.
func TestJoinAfterUnavailableNotAboveCapacity(t *testing.T) {
	d := startDaemon(t)
	d.putWorkshop(t, "small", 2, 2)
	d.setCapacity(t, "small", 1)
	tb := openTab(t, d)
	tb.signIn("alice")
	tb.choose("small", 2)
	tb.click("submit")
	tb.waitStatus("unavailable")
	if js, f := tb.joinState(), tb.form(); js.Instead != "" || f.NewIntentHidden || f.NewIntent != "Change selection" {
		t.Errorf("2 places refused in a workshop of 1: %+v %+v, want only \"Change selection\"", js, f)
	}

	d.putWorkshop(t, "pair", 2, 2)
	if _, err := d.socket.Send(d.ctx(t), engine.OperationKey(uuid.NewString()), client.Reserving(engine.Request{Workshop: "pair", Quantity: 1})); err != nil {
		t.Fatalf("reserve 1 place of pair on the socket: %v", err)
	}
	tb.submitNew("pair", 2, "unavailable")
	refused := tb.intentKey()
	if js := tb.joinState(); js.Instead != "Join the waiting list for 2 places" {
		t.Fatalf("2 places refused in a workshop of 2: %+v, want the offer to join", js)
	}
	// Lowered meanwhile below what the request asks, the capacity does
	// not stop the request to join: it waits for the capacity to rise.
	d.setCapacity(t, "pair", 1)
	tb.click("join-instead")
	tb.waitStatus("waiting")
	if k := tb.intentKey(); k == refused {
		t.Errorf("joining reused the refused intent's key %s", k)
	}
	if q := d.queue(t, "pair"); len(q) != 1 || q[0].Quantity != 2 || q[0].State != engine.WaitWaiting {
		t.Errorf("the daemon's waiting list of pair %+v, want one entry waiting for 2 places", q)
	}
	if got := d.requests(t, "POST "+api.PathReservations); got["unavailable"] != 2 || got["waiting"] != 1 || sum(got) != 4 {
		t.Errorf("reservation requests by outcome %v, want the socket's, 2 refusals and the join", got)
	}
}

// The organizer's editor sets how long an offer lasts and, emptied, sets
// the daemon's default back.
func TestOrganizerSetsOfferTime(t *testing.T) {
	d := startDaemon(t)
	tb := openTab(t, d)
	tb.openAdmin()
	save := func(value string, want int) {
		t.Helper()
		tb.click("edit-" + demo)
		// The editor keeps its fields when it closes: it is filled anew
		// once the focus is on its title.
		tb.until("the editor filled", `document.activeElement !== null && document.activeElement.id === "f-title"`)
		tb.setField("f-offer-ttl", value)
		tb.click("save")
		tb.until("the editor closed", `document.getElementById("editor").hidden`) // A saved change closes it.
		tb.waitKind("status-"+demo, "saved")
		if w := d.workshop(t, demo); w.OfferTTLSeconds != want {
			t.Errorf("after saving %q the daemon's offer time is %d, want %d", value, w.OfferTTLSeconds, want)
		}
	}
	save("3600", 3600)
	if s := tb.text("item-" + demo); !strings.Contains(s, "0 waiting; an offer lasts 1 hour") {
		t.Errorf("the list shows %q, want an offer time of 1 hour", s)
	}
	save("", 0)
	if s := tb.text("item-" + demo); !strings.Contains(s, "an offer lasts 1 day") {
		t.Errorf("the list shows %q, want the default offer time of 1 day", s)
	}
}

// The person's page with waiting list entries (one offered places, one
// waiting) and the form offering to join, then offering to join after a
// reservation was refused as unavailable, and the organizer's page with a
// waiting list and the editor open, have no accessibility violation that
// axe-core finds and nothing cut off, in light and dark, German and
// English, at 320, 390 and 1440 px.
func TestWaitlistAccessibility(t *testing.T) {
	needAxe(t)
	d := startDaemon(t)
	potteryBob := d.fullWorkshop(t, pottery, "Pottery", 600)
	d.fullWorkshop(t, "weaving", "Weaving on a frame loom, for beginners", 3600)
	d.reserveFor(t, d.as(t, "bob"), 2) // 1 of the demo's 3 places is free.
	alice := d.as(t, "alice")
	offered := d.joinFor(t, alice, pottery)
	waiting := d.joinFor(t, alice, "weaving")
	d.joinFor(t, d.as(t, "carol"), pottery)
	d.cancelAsAdmin(t, potteryBob)

	tb := openTab(t, d)
	tb.signIn("alice")
	tb.waitEntryState(offered, "offered")
	tb.waitEntryState(waiting, "waiting")
	tb.choose(pottery, 1)
	if js := tb.joinState(); js.JoinHidden {
		t.Fatalf("the form shows %+v, want join", js)
	}
	tb.checkFit("person page with a waiting list")
	tb.checkAxeEverywhere("person page with a waiting list")
	tb.choose(demo, 2)
	tb.click("submit")
	tb.waitStatus("unavailable")
	if js := tb.joinState(); js.Instead != "Join the waiting list for 2 places" {
		t.Fatalf("after the refusal the form shows %+v, want the offer to join for 2 places", js)
	}
	tb.checkFit("person page offering to join after a refusal")
	tb.checkAxeEverywhere("person page offering to join after a refusal")

	org := openTab(t, d)
	org.openAdmin()
	org.click("waitlist-" + pottery)
	org.until("the waiting list", `document.querySelectorAll("#queue-list li").length === 2`)
	org.click("edit-weaving")
	org.until("the editor", `document.getElementById("f-offer-ttl").value === "3600"`)
	org.checkFit("organizer page with a waiting list")
	org.checkAxeEverywhere("organizer page with a waiting list")
}

// Deleting a workshop that nobody has places in but people wait for is
// refused, and the organizer's page says why: the people waiting, not
// places reserved or held, which it has none of.
func TestOrganizerDeleteRefusedForPeopleWaiting(t *testing.T) {
	d := startDaemon(t)
	d.putWorkshopJSON(t, pottery, `{"title": "Pottery", "capacity": 0, "max_quantity": 1}`)
	d.joinFor(t, d.as(t, "alice"), pottery)
	org := openTab(t, d)
	org.openAdmin()
	confirm, msg := org.deleteRefused(pottery)
	if !strings.Contains(confirm, "nobody has a place reserved or held in it or waits for one") {
		t.Errorf("the confirmation step says %q, want the waiting list among the reasons", confirm)
	}
	if !strings.Contains(msg, "or people on its waiting list") {
		t.Errorf("deleting a workshop people wait for says %q, want the waiting list named", msg)
	}
	if _, err := d.socket.Workshop(d.ctx(t), pottery); err != nil {
		t.Errorf("the workshop people wait for is gone: %v", err)
	}
}
