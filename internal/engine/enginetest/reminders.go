package enginetest

import (
	"strings"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// This file holds the conformance tests of the reminders of holds: a mail
// shortly before a new hold's or an offer's deadline, while it is open.

// reminderLead is how long before a deadline the suite's reminders are
// due.
const reminderLead = 10 * time.Minute

// routeWithReminders routes every event with mail and reminders.
func (h *harness) routeWithReminders() int {
	h.t.Helper()
	n, more, err := h.eng.RouteEvents(h.ctx, 1000, engine.RouteOptions{Mail: true, HoldReminder: reminderLead})
	if err != nil || more {
		h.t.Fatalf("RouteEvents = %d, more %v, %v", n, more, err)
	}
	return n
}

// holdFor makes a hold of one place of workshop for who, lasting seconds.
func (h *harness) holdFor(who engine.Principal, workshop string, seconds int) engine.Answer {
	h.t.Helper()
	out, err := h.hold(who, newKey(), workshop, 1, seconds)
	if err != nil || out.Answer.Status != engine.StatusHeld {
		h.t.Fatalf("Hold(%s, %s, %d s) = %+v, %v; want held", who.Actor, workshop, seconds, out, err)
	}
	return out.Answer
}

// eventOfHold returns the event of type typ of hold id.
func (h *harness) eventOfHold(typ, id string) engine.Event {
	h.t.Helper()
	for _, ev := range h.events() {
		if ev.Type == typ && ev.HoldID == id {
			return ev
		}
	}
	h.t.Fatalf("no %s event of hold %s", typ, id)
	return engine.Event{}
}

// jobIDs returns the ids of the deliveries of jobs.
func jobIDs(jobs []engine.DeliveryJob) []string {
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.Delivery.ID
	}
	return ids
}

// testHoldReminders: routing a new hold's event makes, besides its mail,
// a reminder due the lead before the deadline, under an id of its own,
// for a person with an address and a hold at least twice the lead; an
// offer gets one too. Each is made once, waits (counted as scheduled, not
// pending) until its time, and is then claimed with its open hold; the
// reminder of a hold confirmed, released or past its deadline by then is
// skipped, saying why, and not claimed, also when an operator sends it
// again.
func testHoldReminders(t *testing.T, h *harness) {
	h.workshop("kiln", 20, 5)
	carol := engine.Principal{Actor: "carol"}
	for _, who := range []string{"alice", "carol"} {
		if err := h.eng.KeepVerifiedEmail(h.ctx, who, who+"@example.org"); err != nil {
			t.Fatal(err)
		}
	}
	// Deadlines an hour on, but lapsed's in 40 minutes and half's in 20,
	// twice the lead; short's a second sooner.
	open := h.holdFor(alice, "kiln", 3600)
	confirmed := h.holdFor(alice, "kiln", 3600)
	released := h.holdFor(carol, "kiln", 3600)
	lapsed := h.holdFor(alice, "kiln", 2400)
	half := h.holdFor(alice, "kiln", int(2*reminderLead/time.Second))
	short := h.holdFor(alice, "kiln", int(2*reminderLead/time.Second)-1)
	h.holdFor(bob, "kiln", 3600) // No address: no mail at all.
	if _, _, err := h.eng.PutWorkshop(h.ctx, "loom", engine.WorkshopSpec{Capacity: 1, OfferTTLSeconds: 7200}, nil); err != nil {
		t.Fatal(err)
	}
	taken := h.mustReserve("dan", newKey(), "loom", 1)
	h.mustJoin(alice, "loom", 1, 1)
	h.mustCancel(engine.Principal{Actor: "dan"}, newKey(), taken.Answer.ReservationID)
	offer := h.entries("loom")[0].HoldID
	if offer == "" {
		t.Fatalf("no offer on loom: %+v", h.entries("loom"))
	}

	h.routeWithReminders()
	if n := h.routeWithReminders(); n != 0 {
		t.Fatalf("routed %d events again", n)
	}
	want := map[string]engine.Event{}
	for _, id := range []string{open.HoldID, confirmed.HoldID, released.HoldID, lapsed.HoldID, half.HoldID} {
		ev := h.eventOfHold(engine.EventHoldCreated, id)
		want[engine.DeliveryIDOf(ev.ID, engine.ChannelReminder)] = ev
	}
	offered := h.eventOfHold(engine.EventWaitlistOffered, offer)
	want[engine.DeliveryIDOf(offered.ID, engine.ChannelReminder)] = offered
	mails := 0
	for _, d := range h.deliveries(engine.DeliveryPending) {
		if d.Channel == engine.ChannelMail {
			mails++
			continue
		}
		ev, ok := want[d.ID]
		if !ok {
			t.Errorf("unexpected delivery %+v", d)
			continue
		}
		delete(want, d.ID)
		due := ev.HoldExpiresAt.Add(-reminderLead)
		if d.Channel != engine.ChannelReminder || d.EventID != ev.ID || d.EventType != ev.Type || d.Recipient != ev.Owner+"@example.org" ||
			!d.NextAttemptAt.Equal(due) || !d.Since.Equal(due) || !d.CreatedAt.Equal(ev.CreatedAt) || d.Attempts != 0 {
			t.Errorf("reminder %+v of event %+v; want it due at %s, the lead before the deadline", d, ev, due)
		}
	}
	if len(want) != 0 {
		t.Fatalf("missing reminders %v", want)
	}
	if ev := h.eventOfHold(engine.EventHoldCreated, short.HoldID); !ev.HoldExpiresAt.Equal(h.now().Add(time.Duration(2*reminderLead/time.Second-1) * time.Second)) {
		t.Fatalf("the event of a new hold names the deadline %s: %+v", ev.HoldExpiresAt, ev)
	}
	// The mails of the 6 holds of people with an address and of the
	// offer; dan, whose reservation and cancellation loom saw, has none.
	if mails != 7 {
		t.Errorf("%d mails pending, want 7", mails)
	}
	stats, err := h.eng.CountDeliveries(h.ctx)
	if err != nil || stats.Scheduled != 6 || stats.Pending != mails || !stats.OldestPending.Equal(h.now()) {
		t.Fatalf("CountDeliveries = %+v, %v; want 6 scheduled and the %d mails pending since %s", stats, err, mails, h.now())
	}

	// The mails are due now, the reminders later.
	jobs, err := h.eng.ClaimDueDeliveries(h.ctx, 100, time.Minute)
	if err != nil || len(jobs) != mails {
		t.Fatalf("ClaimDueDeliveries = %d jobs, %v; want the %d mails", len(jobs), err, mails)
	}
	for _, j := range jobs {
		if err := h.eng.FinishDelivery(h.ctx, j.Delivery, engine.Attempt{State: engine.DeliveryDelivered}); err != nil {
			t.Fatal(err)
		}
	}
	h.mustSettle(engine.OperationConfirm, alice, newKey(), confirmed.HoldID)
	h.mustSettle(engine.OperationRelease, carol, newKey(), released.HoldID)

	// At the time of the hour's reminders, lapsed and half are past
	// their deadlines (no janitor ran): only open's reminder is sent.
	h.advance(time.Hour - reminderLead)
	jobs, err = h.eng.ClaimDueDeliveries(h.ctx, 100, time.Minute)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("ClaimDueDeliveries = %v, %v; want one job", jobIDs(jobs), err)
	}
	if j := jobs[0]; j.Delivery.Channel != engine.ChannelReminder || j.Event.HoldID != open.HoldID || j.Hold.ID != open.HoldID || !j.Hold.Open() ||
		j.Delivery.Attempts != 1 || j.Profile.Email != "alice@example.org" {
		t.Fatalf("job %+v; want the reminder of the open hold %s, with the hold and alice's profile", j, open.HoldID)
	}
	if err := h.eng.FinishDelivery(h.ctx, jobs[0].Delivery, engine.Attempt{State: engine.DeliveryDelivered}); err != nil {
		t.Fatal(err)
	}
	skipped := map[string]string{}
	for _, d := range h.deliveries(engine.DeliverySkipped) {
		var ev engine.Event
		for _, e := range h.events() {
			if e.ID == d.EventID {
				ev = e
			}
		}
		if d.Channel != engine.ChannelReminder || d.DoneAt.IsZero() || !strings.HasPrefix(d.LastError, "not needed: hold "+ev.HoldID+" ") {
			t.Errorf("skipped delivery %+v of event %+v", d, ev)
		}
		skipped[ev.HoldID] = d.LastError
	}
	for id, word := range map[string]string{confirmed.HoldID: "was confirmed", released.HoldID: "was released", lapsed.HoldID: "expired", half.HoldID: "expired"} {
		if !strings.Contains(skipped[id], word) {
			t.Errorf("the reminder of hold %s: %q, want it skipped as %s", id, skipped[id], word)
		}
	}
	if len(skipped) != 4 {
		t.Errorf("skipped reminders %v, want 4", skipped)
	}
	// The offer's reminder is due an hour later; it is still scheduled.
	stats, err = h.eng.CountDeliveries(h.ctx)
	if err != nil || stats.Scheduled != 1 || stats.Pending != 0 {
		t.Fatalf("CountDeliveries = %+v, %v; want the offer's reminder scheduled and none pending", stats, err)
	}
	h.advance(time.Hour)
	jobs, err = h.eng.ClaimDueDeliveries(h.ctx, 100, time.Minute)
	if err != nil || len(jobs) != 1 || jobs[0].Event.ID != offered.ID || jobs[0].Hold.WaitEntry == "" {
		t.Fatalf("ClaimDueDeliveries = %v, %v; want the offer's reminder", jobIDs(jobs), err)
	}
	// An operator may send a skipped reminder again: it is judged again
	// when it is claimed, and skipped again.
	for _, d := range h.deliveries(engine.DeliverySkipped) {
		if out, err := h.eng.RetryDelivery(h.ctx, admin, newKey(), d.ID); err != nil || out.Answer.Status != engine.StatusRequeued {
			t.Fatalf("RetryDelivery(%s) = %+v, %v", d.ID, out, err)
		}
	}
	if jobs, err := h.eng.ClaimDueDeliveries(h.ctx, 100, time.Minute); err != nil || len(jobs) != 0 {
		t.Fatalf("claiming the reminders sent again = %v, %v; want none sent", jobIDs(jobs), err)
	}
	if got := h.deliveries(engine.DeliverySkipped); len(got) != 4 {
		t.Fatalf("skipped after the retries: %+v", got)
	}
}

// testRoutingWithoutRemindersMakesNone: without a lead, or without mail,
// a hold gets no reminder.
func testRoutingWithoutRemindersMakesNone(t *testing.T, h *harness) {
	h.workshop("kiln", 5, 5)
	if err := h.eng.KeepVerifiedEmail(h.ctx, "alice", "alice@example.org"); err != nil {
		t.Fatal(err)
	}
	h.holdFor(alice, "kiln", 86400)
	if _, _, err := h.eng.RouteEvents(h.ctx, 100, engine.RouteOptions{HoldReminder: reminderLead}); err != nil {
		t.Fatal(err)
	}
	h.holdFor(alice, "kiln", 86400)
	h.mustRoute()
	for _, d := range h.deliveries(engine.DeliveryPending) {
		if d.Channel == engine.ChannelReminder {
			t.Errorf("a reminder without a lead or without mail: %+v", d)
		}
	}
}

// testCheckFindsBrokenReminders: a reminder of an event without a hold,
// and a hold event whose deadline is not its hold's, are findings.
func testCheckFindsBrokenReminders(t *testing.T, h *harness) {
	h.workshop("kiln", 5, 5)
	if err := h.eng.KeepVerifiedEmail(h.ctx, "alice", "alice@example.org"); err != nil {
		t.Fatal(err)
	}
	res := h.mustReserve("alice", newKey(), "kiln", 1)
	held := h.holdFor(alice, "kiln", 3600)
	h.routeWithReminders()
	h.wantFindings("routed", nil)
	var mail engine.Delivery
	for _, d := range h.deliveries(engine.DeliveryPending) {
		if d.Channel == engine.ChannelMail && d.EventType == engine.EventReserved {
			mail = d
		}
	}
	bad := mail
	bad.Channel, bad.ID = engine.ChannelReminder, engine.DeliveryIDOf(mail.EventID, engine.ChannelReminder)
	if err := h.store.Update(h.ctx, func(tx engine.Tx) error { return tx.PutDelivery(bad) }); err != nil {
		t.Fatal(err)
	}
	h.wantFindings("a reminder of reservation "+res.Answer.ReservationID, []string{engine.FindingDelivery})

	fresh := h.fresh()
	fresh.workshop("kiln", 5, 5)
	held = fresh.holdFor(alice, "kiln", 3600)
	ev := fresh.eventOfHold(engine.EventHoldCreated, held.HoldID)
	ev.ID, ev.HoldExpiresAt = "ffffffffffffffffffffffffffffffff", ev.HoldExpiresAt.Add(time.Hour)
	if err := fresh.store.Update(fresh.ctx, func(tx engine.Tx) error { return tx.AddEvent(ev) }); err != nil {
		t.Fatal(err)
	}
	fresh.wantFindings("a hold event with another deadline", []string{engine.FindingOrphanEvent})
}
