package browsertest_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server/servertest"
)

// The route labels of the workshop writes in the daemon's metrics.
const (
	patchRoute  = "PATCH /api/v1/workshops/{id}"
	deleteRoute = "DELETE /api/v1/workshops/{id}"
)

// adminLoginURL asks the daemon over its socket for a login link to an
// admin's session of the test's own actor, as `reservectl login-link
// --admin` does.
func (d *daemon) adminLoginURL(t *testing.T) string {
	t.Helper()
	link, err := d.socket.LoginLinkFor(d.ctx(t), api.LoginLinkRequest{Admin: true})
	if err != nil || !link.Admin {
		t.Fatalf("admin login link: %+v %v", link, err)
	}
	return link.URL
}

// workshop returns the daemon's view of workshop id.
func (d *daemon) workshop(t *testing.T, id string) engine.Workshop {
	t.Helper()
	w, err := d.socket.Workshop(d.ctx(t), id)
	if err != nil {
		t.Fatalf("workshop %s: %v", id, err)
	}
	return w
}

// openAdmin signs the tab in with an admin's login link, which lands on
// the person's page, and follows its link to the organizer's page, as an
// organizer does, until the workshop list is shown.
func (tb *tab) openAdmin() {
	tb.t.Helper()
	tb.do("sign in as an admin", chromedp.Navigate(tb.d.adminLoginURL(tb.t)))
	tb.until("the link to the organizer's page", `!document.getElementById("to-admin").hidden`)
	tb.clickToLoad("to-admin")
	tb.waitAdmin()
}

// waitAdmin waits until the organizer's page shows its workshop list.
func (tb *tab) waitAdmin() {
	tb.t.Helper()
	if u := eval[string](tb, "location.pathname"); u != "/admin" {
		tb.t.Fatalf("the tab is at %s, want /admin", u)
	}
	tb.until("the workshop list", `!document.getElementById("workshops").hidden && document.getElementById("list-status").textContent !== ""`)
}

// until waits until a JavaScript predicate holds on the organizer's page;
// on a timeout it fails with what the page shows.
func (tb *tab) until(what, predicate string) {
	tb.t.Helper()
	if _, err := chromedp.Run(tb.ctx, chromedp.Poll[chromedp.Void](predicate, chromedp.WithPollingTimeout(waitTimeout))); err != nil {
		text, _ := chromedp.Run(tb.ctx, chromedp.Evaluate[string](`(() => { const c = document.body.cloneNode(true); c.querySelectorAll("select").forEach((s) => s.remove()); document.body.append(c); c.hidden = true; const x = c.innerText; c.remove(); return x || document.body.textContent; })()`))
		tb.t.Fatalf("wait until %s: %v\nthe page shows:\n%s", what, err, text)
	}
}

// setField sets an input, textarea or select of the organizer's page as
// a user would: its input and change events run the page's handlers.
func (tb *tab) setField(id, value string) {
	tb.t.Helper()
	tb.do("set #"+id, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
		const f = document.getElementById(%q);
		f.value = %q;
		f.dispatchEvent(new Event("input", {bubbles: true}));
		f.dispatchEvent(new Event("change", {bubbles: true}));
	})()`, id, value)))
	if got := eval[string](tb, fmt.Sprintf(`document.getElementById(%q).value`, id)); got != value {
		tb.t.Fatalf("#%s holds %q, want %q", id, got, value)
	}
}

// field returns the value of an input of the page.
func (tb *tab) field(id string) string {
	tb.t.Helper()
	return eval[string](tb, fmt.Sprintf(`document.getElementById(%q).value`, id))
}

// text returns what element id shows ("" when it is not shown).
func (tb *tab) text(id string) string {
	tb.t.Helper()
	return eval[string](tb, fmt.Sprintf(`(() => { const e = document.getElementById(%q); return e && e.getClientRects().length > 0 ? e.textContent : ""; })()`, id))
}

// waitKind waits until element id carries the message kind (its
// data-kind: the text key in admin.js) and returns its text.
func (tb *tab) waitKind(id, kind string) string {
	tb.t.Helper()
	tb.until("#"+id+" says "+kind, fmt.Sprintf(`(() => { const e = document.getElementById(%q); return e !== null && e.dataset.kind === %q; })()`, id, kind))
	return tb.text(id)
}

// inNewYork makes the tab's browser run in New York's time zone, so that
// a page that read dates in the browser's zone would be caught.
func (tb *tab) inNewYork() {
	tb.t.Helper()
	tb.do("a browser in New York", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "America/New_York"})
		return err
	}))
}

// downloadsTo makes the tab's browser context save downloads in dir under
// the names the page gives them.
func (tb *tab) downloadsTo(dir string) {
	tb.t.Helper()
	id := chromedp.FromContext(tb.ctx).BrowserContextID
	tb.do("allow downloads", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Call(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
			Behavior: browser.SetDownloadBehaviorBehaviorAllow, BrowserContextID: id, DownloadPath: dir,
		})
		return err
	}))
}

// holdAnswers makes the browser hold every answer to requests of url at
// the response stage: the daemon has answered, and the page has not seen
// it. stop ends it.
func (tb *tab) holdAnswers(url string) (stop func()) {
	tb.t.Helper()
	if _, err := chromedp.Call(tb.ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{
		{URLPattern: url, RequestStage: fetch.RequestStageResponse},
	}}); err != nil {
		tb.t.Fatalf("enable the Fetch domain: %v", err)
	}
	return func() {
		if _, err := chromedp.Call(tb.ctx, fetch.Disable, cdp.Empty{}); err != nil {
			tb.t.Fatalf("disable the Fetch domain: %v", err)
		}
	}
}

// loseAnswer waits until the browser holds n answers and breaks the
// connection of the last one off: the daemon decided, the page gets no
// answer.
func (tb *tab) loseAnswer(n int) {
	tb.t.Helper()
	servertest.Eventually(tb.t, waitTimeout, "the answer held", func() bool { return len(tb.pausedRequests()) >= n })
	paused := tb.pausedRequests()
	if len(paused) != n {
		tb.t.Fatalf("the browser holds %d answers, want %d", len(paused), n)
	}
	if _, err := chromedp.Call(tb.ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: paused[n-1], ErrorReason: network.ErrorReasonConnectionReset}); err != nil {
		tb.t.Fatalf("lose the answer: %v", err)
	}
}

// createOnPage creates a workshop with the organizer's page's editor from
// its fields (input id → value) and waits until the list says it was
// created.
func (tb *tab) createOnPage(id string, fields map[string]string) {
	tb.t.Helper()
	tb.click("new-workshop")
	tb.until("the editor", `!document.getElementById("editor").hidden`)
	for _, name := range []string{"f-title", "f-id", "f-capacity", "f-max-quantity", "f-max-per-person", "f-location", "f-description", "f-time-zone", "f-starts", "f-ends", "f-opens", "f-closes"} {
		if v, ok := fields[name]; ok {
			tb.setField(name, v)
		}
	}
	if got := tb.field("f-id"); got != id {
		tb.t.Fatalf("the editor's id is %q, want %q", got, id)
	}
	tb.click("save")
	tb.waitKind("status-"+id, "created")
}

// THE organizer's flow: an admin's session creates a workshop on /admin,
// with its date, times, time zone and place, from a browser in New York
// for a workshop in Berlin on the day Berlin's clocks go forward; the
// daemon stores the instants that the wall times name in Berlin on each
// date (a different offset before and after the change), and a time the
// change skips is refused with nothing sent. A person reserves it on the
// person's page and sees its date and place; the organizer sees the
// reservation in the attendee list and downloads the CSV, which the
// browser saves under the daemon's file name with the header row and the
// person's row.
func TestOrganizerCreatesWorkshopPersonReserves(t *testing.T) {
	d := startDaemon(t)
	org := openTab(t, d)
	org.inNewYork()
	org.openAdmin()
	if s := org.text("list-status"); s != "1 workshop" {
		t.Errorf("the list says %q, want the demo workshop alone", s)
	}

	// A wall time that the clock change skips is refused before sending.
	org.click("new-workshop")
	org.setField("f-title", "Spring pottery")
	org.setField("f-capacity", "8")
	org.setField("f-time-zone", "Europe/Berlin")
	org.setField("f-starts", "2030-03-31T02:30")
	org.click("save")
	if msg := org.waitKind("editor-status", "noSuchTime"); !strings.Contains(msg, "does not exist in Europe/Berlin") {
		t.Errorf("a skipped time says %q", msg)
	}
	if n := sum(d.requests(t, "PUT /api/v1/workshops/{id}")); n != 0 {
		t.Fatalf("%d PUTs reached the daemon for a time that does not exist, want none", n)
	}
	org.click("close-editor")

	const id = "spring-pottery"
	org.createOnPage(id, map[string]string{
		"f-title": "Spring pottery", "f-capacity": "8", "f-max-quantity": "2", "f-max-per-person": "3",
		"f-location": "Studio 3, Example Lane 5, Berlin", "f-description": "Clay is provided.",
		"f-time-zone": "Europe/Berlin", "f-starts": "2030-03-31T10:00", "f-ends": "2030-03-31T12:30",
		"f-closes": "2030-03-30T18:00",
	})
	w := d.workshop(t, id)
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if w.Title != "Spring pottery" || w.Capacity != 8 || w.MaxQuantity != 2 || w.MaxPerPerson != 3 || w.TimeZone != "Europe/Berlin" ||
		w.Location != "Studio 3, Example Lane 5, Berlin" || w.Description != "Clay is provided." ||
		!w.StartsAt.Equal(utc("2030-03-31T08:00:00Z")) || !w.EndsAt.Equal(utc("2030-03-31T10:30:00Z")) ||
		!w.RegistrationClosesAt.Equal(utc("2030-03-30T17:00:00Z")) || !w.RegistrationOpensAt.IsZero() {
		t.Fatalf("the daemon stored %+v; want 10:00 to 12:30 CEST (08:00Z-10:30Z) and registration until 18:00 CET (17:00Z)", w)
	}
	item := org.text("item-" + id)
	for _, want := range []string{"Spring pottery", id, "Sun, 31 March 2030, 10:00–12:30 CEST", "Studio 3, Example Lane 5, Berlin", "8 in all: 0 reserved, 0 held, 8 free", "open"} {
		if !strings.Contains(item, want) {
			t.Errorf("the list shows %q, want %q in it", item, want)
		}
	}

	person := openTab(t, d)
	person.signIn("alice")
	if !eval[bool](person, `document.getElementById("to-admin").hidden`) {
		t.Errorf("a person's page offers the organizer's page to a session that is not an admin's")
	}
	person.choose(id, 2)
	if det := person.details(); !strings.Contains(det.When, "31 March 2030") || !strings.Contains(det.When, "10:00") || det.Where != "Studio 3, Example Lane 5, Berlin" {
		t.Errorf("the person sees %+v, want the Berlin date and the place", det)
	}
	person.click("submit")
	person.waitStatus("reserved")
	rid := reservationID.FindString(person.form().Receipt)

	org.click("reload")
	org.until("the list reloaded", fmt.Sprintf(`document.getElementById("item-%s").textContent.includes("2 reserved")`, id))
	org.click("attendees-" + id)
	org.until("alice in the attendee list", fmt.Sprintf(`document.getElementById("attendee-%s") !== null`, rid))
	if a := org.text("attendee-" + rid); !strings.Contains(a, "alice") || !strings.Contains(a, "2 places") || !strings.Contains(a, "active") {
		t.Errorf("the attendee list shows %q, want alice with 2 places, active", a)
	}
	if s := org.text("attendees-summary"); !strings.Contains(s, "2 reserved, 0 held") {
		t.Errorf("the attendee summary says %q", s)
	}

	dir := t.TempDir()
	org.downloadsTo(dir)
	org.click("download-csv")
	org.waitKind("attendees-status", "downloaded")
	file := filepath.Join(dir, id+"-attendees.csv")
	var raw []byte
	servertest.Eventually(t, waitTimeout, "the CSV saved", func() bool {
		var err error
		raw, err = os.ReadFile(file)
		return err == nil && len(raw) > 0
	})
	rows, err := csv.NewReader(strings.NewReader(string(raw))).ReadAll()
	if err != nil {
		t.Fatalf("the downloaded CSV %q: %v", raw, err)
	}
	if len(rows) != 2 || strings.Join(rows[0], ",") != strings.Join(api.AttendeeCSVHeader, ",") {
		t.Fatalf("the downloaded CSV is %q, want the header row and alice's", raw)
	}
	if r := rows[1]; r[0] != rid || r[1] != "alice" || r[4] != "2" || r[5] != "active" {
		t.Errorf("alice's row is %q", r)
	}
}

// A stale edit is shown as such and overwrites nothing: two admins' tabs
// open the same workshop; the first saves a new title; the second saves a
// new capacity and place and is told that the workshop changed meanwhile
// (the title, from what to what), with its own values still in the form
// and nothing saved. Only when the second organizer applies their changes
// to the current version does a save send them — and only them, so the
// first one's title stays.
func TestOrganizerStaleEditShown(t *testing.T) {
	d := startDaemon(t)
	d.putWorkshopJSON(t, "clay", `{"title": "Clay", "capacity": 10, "max_quantity": 2, "location": "Room 1"}`)
	a, b := openTab(t, d), openTab(t, d)
	a.openAdmin()
	b.openAdmin()
	for _, tb := range []*tab{a, b} {
		tb.click("edit-clay")
		tb.until("the editor", `document.getElementById("f-title").value === "Clay"`)
	}
	a.setField("f-title", "Clay for beginners")
	a.click("save")
	a.waitKind("status-clay", "saved")

	b.setField("f-capacity", "12")
	b.setField("f-location", "Room 2")
	b.click("save")
	b.until("the stale-edit view", `!document.getElementById("stale").hidden`)
	stale := b.text("stale")
	if !strings.Contains(stale, "someone else changed this workshop") || !strings.Contains(stale, "Title: was “Clay”, is now “Clay for beginners”") {
		t.Errorf("the stale-edit view says %q, want the title's change", stale)
	}
	if c, l := b.field("f-capacity"), b.field("f-location"); c != "12" || l != "Room 2" {
		t.Errorf("the form holds capacity %q and place %q, want the organizer's unsaved 12 and Room 2", c, l)
	}
	if w := d.workshop(t, "clay"); w.Title != "Clay for beginners" || w.Capacity != 10 || w.Location != "Room 1" {
		t.Fatalf("after the stale save the daemon has %+v, want only the first tab's title", w)
	}
	if got := d.requests(t, patchRoute); got["rejected"] != 1 || sum(got) != 2 {
		t.Errorf("PATCHes by outcome %v, want one saved and one refused as stale", got)
	}

	b.click("stale-rebase")
	b.click("save")
	b.waitKind("status-clay", "saved")
	if w := d.workshop(t, "clay"); w.Title != "Clay for beginners" || w.Capacity != 12 || w.Location != "Room 2" {
		t.Errorf("after keeping the values the daemon has %+v, want the first title with the second capacity and place", w)
	}
}

// A change whose answer is lost is "outcome unclear — retry"; a double
// click on Save sent it once, and the retry sends the same PATCH with the
// same If-Match: the daemon refuses it as stale (the first one was
// saved), the page reads the workshop, finds the values it asked for and
// reports the change as done — one effect. A cancellation of a
// reservation by the organizer, after a confirmation step, whose answer
// is garbled is retried with its Idempotency-Key after a reload: the
// daemon replays it, one cancellation.
func TestOrganizerLostAnswersRetried(t *testing.T) {
	d := startDaemon(t)
	before := d.workshop(t, demo)
	tb := openTab(t, d)
	tb.openAdmin()
	tb.click("edit-" + demo)
	tb.until("the editor", `document.getElementById("f-title").value !== ""`)
	tb.setField("f-capacity", "7")
	tb.setField("f-location", "Hall B")

	stop := tb.holdAnswers("*" + api.WorkshopPath(demo))
	save := tb.node("save")
	tb.do("double click", chromedp.MouseClickNode(save, chromedp.ClickCount(1)), chromedp.MouseClickNode(save, chromedp.ClickCount(2)))
	tb.loseAnswer(1)
	if msg := tb.waitKind("editor-status", "unclear"); !strings.HasPrefix(msg, "Outcome unclear — retry") {
		t.Errorf("after the lost answer the editor says %q", msg)
	}
	stop()
	if n := len(tb.pausedRequests()); n != 1 {
		t.Errorf("the page sent %d PATCHes for a double click, want 1", n)
	}
	if w := d.workshop(t, demo); w.Capacity != 7 || w.Version != before.Version+1 {
		t.Fatalf("the daemon has %+v after the lost answer, want the change saved once (version %d)", w, before.Version+1)
	}
	if tb.field("f-capacity") != "7" || !eval[bool](tb, `document.getElementById("f-capacity").disabled`) || tb.text("save") != "Retry" {
		t.Errorf("while its outcome is unclear the editor must keep the values locked and offer Retry")
	}
	tb.click("save")
	if msg := tb.waitKind("status-"+demo, "savedBefore"); !strings.Contains(msg, "the earlier request had been saved") {
		t.Errorf("the retry says %q", msg)
	}
	if got := d.requests(t, patchRoute); sum(got) != 2 || got["rejected"] != 1 {
		t.Errorf("PATCHes by outcome %v, want the first and its retry (same If-Match, refused as stale)", got)
	}
	if w := d.workshop(t, demo); w.Capacity != 7 || w.Location != "Hall B" || w.Version != before.Version+1 {
		t.Errorf("after the retry the daemon has %+v, want one change (version %d)", w, before.Version+1)
	}

	rid := d.reserveFor(t, d.as(t, "bob"), 2)
	tb.click("attendees-" + demo)
	tb.until("bob in the list", fmt.Sprintf(`document.getElementById("cancel-%s") !== null`, rid))
	tb.click("cancel-" + rid)
	tb.click("keep-" + rid)
	if d.reservation(t, rid).Cancelled() || tb.sentCancels() != 0 {
		t.Fatalf("“Keep it” cancelled the reservation")
	}
	tb.click("cancel-" + rid)
	if c := tb.text("attendee-" + rid); !strings.Contains(c, "Cancel the reservation of 2 places of bob?") {
		t.Errorf("the confirmation step says %q", c)
	}
	d.arm(t, api.FaultGarbleResponse)
	tb.click("cancel-yes-" + rid)
	tb.until("the cancellation unclear", `document.querySelector("#pending [data-kind=unclear]") !== null`)
	if !d.reservation(t, rid).Cancelled() {
		t.Fatalf("the garbled cancellation was not committed")
	}
	tb.do("reload", chromedp.Reload())
	tb.waitAdmin()
	retry := "retry-r-" + rid
	if k := eval[string](tb, fmt.Sprintf(`document.querySelector("#pending-r-%s [data-kind]").dataset.kind`, rid)); k != "resumed" {
		t.Errorf("after a reload the open cancellation says %q, want resumed", k)
	}
	if n := tb.sentCancels(); n != 1 {
		t.Errorf("the page sent %d cancellations by the reload, want the one", n)
	}
	tb.click(retry)
	tb.until("the cancellation settled", `document.getElementById("pending").hidden`)
	if got, n := d.cancels(t); n != 2 || got["replayed"] != 1 {
		t.Errorf("cancellations by outcome %v, want 2 with the retry replayed", got)
	}
	if w := d.workshop(t, demo); w.Reserved != 0 {
		t.Errorf("%d places reserved after the cancellation, want 0", w.Reserved)
	}
}

// deleteRefused deletes workshop id on the organizer's page, whose daemon
// refuses it as in use, and returns what the item says at the step that
// asks to confirm, and the refusal shown.
func (tb *tab) deleteRefused(id string) (confirm, refusal string) {
	tb.t.Helper()
	tb.click("delete-" + id)
	confirm = tb.text("item-" + id)
	tb.click("delete-yes-" + id)
	return confirm, tb.waitKind("status-"+id, "inUse")
}

// Deleting a workshop that has a reservation is refused with the reason
// in words, and nothing changes; one without any is hidden from the page
// for reserving, and then, after a confirmation, deleted.
func TestOrganizerDeletes(t *testing.T) {
	d := startDaemon(t)
	d.reserveFor(t, d.as(t, "bob"), 1)
	d.putWorkshop(t, "spare", 5, 1)
	tb := openTab(t, d)
	tb.openAdmin()

	confirm, msg := tb.deleteRefused(demo)
	if !strings.Contains(confirm, "for good?") {
		t.Errorf("the confirmation step says %q", confirm)
	}
	if !strings.Contains(msg, "still has places reserved or held") {
		t.Errorf("deleting a workshop in use says %q", msg)
	}
	if w := d.workshop(t, demo); w.Reserved != 1 {
		t.Errorf("the workshop in use has %d places reserved, want 1", w.Reserved)
	}
	if got := d.requests(t, deleteRoute); got["rejected"] != 1 {
		t.Errorf("DELETEs by outcome %v, want one refused as in use", got)
	}

	tb.click("hide-spare")
	if msg := tb.waitKind("status-spare", "hiddenDone"); !strings.Contains(msg, "no longer shown on the page for reserving") {
		t.Errorf("hiding says %q", msg)
	}
	if w := d.workshop(t, "spare"); !w.Hidden || tb.text("hide-spare") != "Show" {
		t.Errorf("after hiding the daemon has hidden=%t and the page offers %q, want hidden and Show", w.Hidden, tb.text("hide-spare"))
	}
	tb.click("delete-spare")
	tb.click("delete-yes-spare")
	tb.until("the spare workshop gone", `document.getElementById("item-spare") === null`)
	if s := tb.text("list-status"); !strings.Contains(s, "Deleted: Workshop spare.") {
		t.Errorf("the list says %q, want the deletion", s)
	}
	if _, err := d.socket.Workshop(d.ctx(t), "spare"); err == nil {
		t.Errorf("the deleted workshop is still there")
	}
}

// The organizer's page explains itself to anyone it is not for, and shows
// no data: a signed-out tab, and a tab signed in with a login link that
// is not an admin's, which its person's page does not lead there either.
func TestOrganizerPageNotForOthers(t *testing.T) {
	d := startDaemon(t)
	out := openTab(t, d)
	out.do("open /admin", chromedp.Navigate(d.url+"/admin"))
	out.until("the explanation", `!document.getElementById("signin").hidden`)
	if s := out.text("signin"); !strings.Contains(s, "not signed in") || !strings.Contains(s, "reservectl login-link --admin") {
		t.Errorf("signed out, /admin says %q", s)
	}

	tb := openTab(t, d)
	tb.signIn("")
	if !eval[bool](tb, `document.getElementById("to-admin").hidden`) {
		t.Errorf("the person's page leads a session that is not an admin's to the organizer's page")
	}
	tb.do("open /admin", chromedp.Navigate(d.url+"/admin"))
	tb.until("the explanation", `!document.getElementById("signin").hidden`)
	s := tb.text("signin")
	if !strings.Contains(s, "is not an organizer (admin)") || !strings.Contains(s, "reservectl login-link --admin") {
		t.Errorf("a non-admin's /admin says %q", s)
	}
	for _, tab := range []*tab{out, tb} {
		if shown := eval[bool](tab, `!document.getElementById("workshops").hidden || !document.getElementById("editor").hidden || document.querySelectorAll("#workshop-list li").length > 0`); shown {
			t.Errorf("the organizer's page shows workshops to someone it is not for")
		}
	}
	if got := d.requests(t, "GET /api/v1/workshops"); sum(got) != 1 {
		t.Errorf("workshop list requests %v, want only the person's page's one", got)
	}
}

// organizerPageWithData signs a tab in to the organizer's page with a
// workshop with a schedule and a reservation in it, its attendee list and
// the editor open.
func organizerPageWithData(t *testing.T, d *daemon) *tab {
	t.Helper()
	d.putWorkshopJSON(t, "evening-class", `{"title": "Evening class in Landscape Watercolour Painting", "capacity": 12, "max_quantity": 2,
		"description": "Bring brushes.", "location": "Community Centre, Großer Saal, Example Street 1, Berlin",
		"starts_at": "2030-05-05T16:00:00Z", "ends_at": "2030-05-05T18:00:00Z", "time_zone": "Europe/Berlin", "max_per_person": 2}`)
	d.reserveFor(t, d.as(t, "bob"), 1)
	tb := openTab(t, d)
	tb.openAdmin()
	tb.click("attendees-" + demo)
	tb.until("the attendee list", `document.querySelectorAll("#attendee-list li").length === 1`)
	tb.click("edit-evening-class")
	tb.until("the editor", `document.getElementById("f-title").value !== ""`)
	return tb
}

// The organizer's page has no accessibility violation that axe-core
// finds, signed out and signed in with data (the list, the editor and an
// attendee list with its confirmation step), in light and dark, German and
// English, at 320, 390 and 1440 px.
func TestOrganizerPageAccessibility(t *testing.T) {
	needAxe(t)
	d := startDaemon(t)
	out := openTab(t, d)
	out.do("open /admin", chromedp.Navigate(d.url+"/admin"))
	out.until("the explanation", `!document.getElementById("signin").hidden`)
	out.checkAxeEverywhere("organizer page signed out")

	tb := organizerPageWithData(t, d)
	rid := eval[string](tb, `document.querySelector("#attendee-list li").dataset.id`)
	tb.click("cancel-" + rid)
	tb.checkAxeEverywhere("organizer page with data")
}

// Nothing on the organizer's page is cut off, reaches past the window or
// wraps its header's controls, and every control is at least 48 px, at
// 320, 390 and 1440 px in English and German: signed out, and with the
// list, the editor and an attendee list open; and the person's page that
// leads an admin's session there.
func TestOrganizerPageLayout(t *testing.T) {
	d := startDaemon(t)
	out := openTab(t, d)
	out.do("open /admin", chromedp.Navigate(d.url+"/admin"))
	out.until("the explanation", `!document.getElementById("signin").hidden`)
	out.checkFit("organizer page signed out")

	person := openTab(t, d)
	person.do("sign in as an admin", chromedp.Navigate(d.adminLoginURL(t)))
	person.until("the link to the organizer's page", `!document.getElementById("to-admin").hidden`)
	person.checkFit("person page with the link to the organizer's page")

	tb := organizerPageWithData(t, d)
	tb.checkFit("organizer page with data")
	for _, width := range widths {
		tb.do("viewport", chromedp.EmulateViewport(width, 900))
		small := eval[[]string](tb, `[...document.querySelectorAll("button, select, input, textarea")]
			.filter((e) => e.getClientRects().length > 0)
			.map((e) => [e.id, e.getBoundingClientRect()])
			.filter(([, r]) => r.width < 48 || r.height < 48)
			.map(([id, r]) => id + " " + Math.round(r.width) + "x" + Math.round(r.height))`)
		if len(small) > 0 {
			t.Errorf("at %d px: targets smaller than 48 px: %v", width, small)
		}
		tb.screenshot(fmt.Sprintf("admin-%d", width))
	}
}
