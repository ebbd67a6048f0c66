package enginetest

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// This file holds the conformance tests of waiting lists: freed places
// are offered to the people waiting, in the order they joined, each
// exactly once.

var (
	carol = engine.Principal{Actor: "carol"}
	dave  = engine.Principal{Actor: "dave"}
	erin  = engine.Principal{Actor: "erin"}
	frank = engine.Principal{Actor: "frank"}
)

func (h *harness) join(who engine.Principal, key engine.OperationKey, workshop string, quantity int) (engine.Outcome, error) {
	return h.eng.Reserve(h.ctx, who.Actor, key, engine.Request{Workshop: workshop, Quantity: quantity, Waitlist: true})
}

// mustJoin joins who to the waiting list of workshop and wants the
// answer "waiting" at position.
func (h *harness) mustJoin(who engine.Principal, workshop string, quantity, position int) engine.Outcome {
	h.t.Helper()
	out, err := h.join(who, newKey(), workshop, quantity)
	if err != nil || out.Answer.Status != engine.StatusWaiting || out.Answer.Position != position || out.Answer.EntryID == "" {
		h.t.Fatalf("join(%s, %s×%d) = %+v, %v; want waiting at position %d", who.Actor, workshop, quantity, out, err, position)
	}
	return out
}

// entries returns the waiting list of workshop as its organizers see it.
func (h *harness) entries(workshop string) []engine.WaitEntry {
	h.t.Helper()
	es, _, err := h.eng.WorkshopWaitlist(h.ctx, ops, workshop, engine.ListFilter{Limit: engine.MaxListLimit})
	if err != nil {
		h.t.Fatal(err)
	}
	return es
}

// entry returns entry id as the list of workshop shows it.
func (h *harness) entry(workshop, id string) engine.WaitEntry {
	h.t.Helper()
	for _, e := range h.entries(workshop) {
		if e.ID == id {
			return e
		}
	}
	h.t.Fatalf("entry %s is not on the list of %s", id, workshop)
	return engine.WaitEntry{}
}

// wantEntries checks the states and positions of the entries of
// workshop, in the order they joined: "actor:state" or
// "actor:waiting@position".
func (h *harness) wantEntries(workshop string, want ...string) {
	h.t.Helper()
	var got []string
	for _, e := range h.entries(workshop) {
		s := e.Actor + ":" + string(e.State)
		if e.State == engine.WaitWaiting {
			s += fmt.Sprintf("@%d", e.Position)
		}
		got = append(got, s)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		h.t.Fatalf("the waiting list of %s is %v, want %v", workshop, got, want)
	}
}

// offerOf returns the open offer (hold) of entry id.
func (h *harness) offerOf(workshop, id string) engine.WaitEntry {
	h.t.Helper()
	e := h.entry(workshop, id)
	if e.State != engine.WaitOffered || e.HoldID == "" {
		h.t.Fatalf("entry %s is %s, not offered: %+v", id, e.State, e)
	}
	return e
}

// testWaitlistOffersInJoinOrder is the waiting list's black-box bar: a
// full workshop, three people join; one cancellation offers the place to
// the first only; the offer expires and passes to the second; a walk-in
// is refused while people wait; a replayed join returns the same entry;
// leaving is idempotent; capacity raised by 2 makes two offers.
func testWaitlistOffersInJoinOrder(t *testing.T, h *harness) {
	if _, _, err := h.eng.PutWorkshop(h.ctx, "kiln", engine.WorkshopSpec{Capacity: 2, MaxQuantity: 2, OfferTTLSeconds: 3600}, nil); err != nil {
		t.Fatal(err)
	}
	a := h.mustReserve("alice", newKey(), "kiln", 1)
	h.mustReserve("erin", newKey(), "kiln", 1)
	bobKey := newKey()
	bobJoin, err := h.join(bob, bobKey, "kiln", 1)
	if err != nil || bobJoin.Answer.Status != engine.StatusWaiting || bobJoin.Answer.Position != 1 {
		t.Fatalf("bob's join = %+v, %v", bobJoin, err)
	}
	carolJoin := h.mustJoin(carol, "kiln", 1, 2)
	daveJoin := h.mustJoin(dave, "kiln", 1, 3)
	h.wantEntries("kiln", "bob:waiting@1", "carol:waiting@2", "dave:waiting@3")

	// A replayed join returns the same entry, byte for byte.
	again, err := h.join(bob, bobKey, "kiln", 1)
	if err != nil || !again.Replayed || !bytes.Equal(again.Answer.JSON(), bobJoin.Answer.JSON()) {
		t.Fatalf("replayed join = %s (replayed %v), %v; want %s", again.Answer.JSON(), again.Replayed, err, bobJoin.Answer.JSON())
	}
	if w, _ := h.eng.Workshop(h.ctx, "kiln"); w.Waiting != 3 {
		t.Fatalf("workshop view counts %d waiting, want 3", w.Waiting)
	}

	// One cancellation offers the place to the first only.
	h.mustCancel(alice, newKey(), a.Answer.ReservationID)
	offer := h.offerOf("kiln", bobJoin.Answer.EntryID)
	h.wantEntries("kiln", "bob:offered", "carol:waiting@1", "dave:waiting@2")
	if !offer.OfferExpiresAt.Equal(h.now().Truncate(time.Second).Add(time.Hour)) {
		t.Fatalf("offer deadline %s, want an hour from now", offer.OfferExpiresAt)
	}
	h.wantPlaces("kiln", 1, 1)

	// A walk-in is refused while people wait, and so is a hold.
	if out, err := h.reserve("frank", newKey(), "kiln", 1); err != nil || out.Answer.Status != engine.StatusUnavailable {
		t.Fatalf("walk-in = %+v, %v; want unavailable", out, err)
	}

	// The offer expires and passes to the second, at the next decision on
	// the workshop: here a walk-in, which is refused.
	h.advance(time.Hour)
	if out, err := h.reserve("frank", newKey(), "kiln", 1); err != nil || out.Answer.Status != engine.StatusUnavailable {
		t.Fatalf("walk-in after the deadline = %+v, %v; want unavailable", out, err)
	}
	h.wantEntries("kiln", "bob:expired", "carol:offered", "dave:waiting@1")
	if got := h.holdState(offer.HoldID); got != engine.HoldExpired {
		t.Fatalf("bob's offer is %s, want expired", got)
	}
	carolOffer := h.offerOf("kiln", carolJoin.Answer.EntryID)
	if out := h.mustSettle(engine.OperationConfirm, carol, newKey(), carolOffer.HoldID); out.Answer.Status != engine.StatusReserved {
		t.Fatalf("carol's confirmation = %+v", out)
	}
	h.wantEntries("kiln", "bob:expired", "carol:reserved", "dave:waiting@1")
	h.wantPlaces("kiln", 2, 0)

	// Leaving is idempotent.
	leaveKey := newKey()
	left, err := h.eng.LeaveWaitlist(h.ctx, dave, leaveKey, daveJoin.Answer.EntryID)
	if err != nil || left.Answer.Status != engine.StatusLeft || left.Answer.EntryID != daveJoin.Answer.EntryID {
		t.Fatalf("leave = %+v, %v", left, err)
	}
	if again, err := h.eng.LeaveWaitlist(h.ctx, dave, leaveKey, daveJoin.Answer.EntryID); err != nil || !again.Replayed || !bytes.Equal(again.Answer.JSON(), left.Answer.JSON()) {
		t.Fatalf("replayed leave = %+v, %v", again, err)
	}
	if again, err := h.eng.LeaveWaitlist(h.ctx, dave, newKey(), daveJoin.Answer.EntryID); err != nil || again.Answer.Status != engine.StatusAlreadyLeft {
		t.Fatalf("leave under a new key = %+v, %v; want already_left", again, err)
	}
	if w, _ := h.eng.Workshop(h.ctx, "kiln"); w.Waiting != 0 {
		t.Fatalf("workshop view counts %d waiting, want 0", w.Waiting)
	}

	// Capacity raised by 2 makes two offers.
	h.mustJoin(erin, "kiln", 1, 1)
	h.mustJoin(bob, "kiln", 1, 2)
	h.mustJoin(dave, "kiln", 1, 3)
	if _, _, err := h.eng.PutWorkshop(h.ctx, "kiln", engine.WorkshopSpec{Capacity: 4}, nil); err != nil {
		t.Fatal(err)
	}
	h.wantEntries("kiln", "bob:expired", "carol:reserved", "dave:left", "erin:offered", "bob:offered", "dave:waiting@1")
	h.wantPlaces("kiln", 2, 2)
	h.wantOfferEvents(4)
}

// wantOfferEvents checks that the outbox holds n waitlist.offered events.
func (h *harness) wantOfferEvents(n int) {
	h.t.Helper()
	got := 0
	err := h.store.View(h.ctx, func(tx engine.Tx) error {
		return tx.ForEachEvent(func(ev engine.Event) error {
			if ev.Type == engine.EventWaitlistOffered {
				got++
			}
			return nil
		})
	})
	if err != nil || got != n {
		h.t.Fatalf("%d %s events (%v), want %d", got, engine.EventWaitlistOffered, err, n)
	}
}

// testWaitlistKeys: joining is a reservation request of its own kind of
// payload: the same key without "waitlist", or with another workshop,
// conflicts; a request that finds places reserves them (201) and replays
// as such; a refusal of the request stores nothing.
func testWaitlistKeys(t *testing.T, h *harness) {
	h.workshop("kiln", 1, 1)
	key := newKey()
	out, err := h.join(alice, key, "kiln", 1)
	if err != nil || out.Answer.Status != engine.StatusReserved {
		t.Fatalf("join with a place free = %+v, %v; want reserved", out, err)
	}
	if _, err := h.reserve("alice", key, "kiln", 1); engine.ErrorCode(err) != engine.CodeOperationConflict {
		t.Fatalf("the key again without waitlist: %v; want a conflict", err)
	}
	plain := newKey()
	h.mustReserve("bob", plain, "kiln", 1) // unavailable
	if _, err := h.join(bob, plain, "kiln", 1); engine.ErrorCode(err) != engine.CodeOperationConflict {
		t.Fatalf("an unavailable key again with waitlist: %v; want a conflict", err)
	}
	if again, err := h.join(alice, key, "kiln", 1); err != nil || !again.Replayed || again.Answer.Status != engine.StatusReserved {
		t.Fatalf("replayed join = %+v, %v", again, err)
	}
	before, _ := h.counts()
	if _, err := h.join(bob, newKey(), "nowhere", 1); engine.ErrorCode(err) != engine.CodeUnknownWorkshop {
		t.Fatalf("join of an unknown workshop: %v", err)
	}
	if _, err := h.join(bob, newKey(), "kiln", 2); engine.ErrorCode(err) != engine.CodeRequestContract {
		t.Fatalf("join above max_quantity: %v", err)
	}
	if after, _ := h.counts(); after != before || len(h.entries("kiln")) != 0 {
		t.Fatalf("refused joins stored something: %d reservations, entries %v", after, h.entries("kiln"))
	}
	// An atomic batch is all reserved or nothing: it refuses an item that
	// may wait; a batch that is not atomic lets it join.
	res, err := h.eng.Batch(h.ctx, "carol", []engine.BatchEntry{{Key: newKey(), Request: engine.Request{Workshop: "kiln", Quantity: 1, Waitlist: true}}}, true)
	if err != nil || !res.Refused || engine.ErrorCode(res.Items[0].Refusal) != engine.CodeRequestContract {
		t.Fatalf("atomic batch with a waiting item = %+v, %v", res, err)
	}
	res, err = h.eng.Batch(h.ctx, "carol", []engine.BatchEntry{{Key: newKey(), Request: engine.Request{Workshop: "kiln", Quantity: 1, Waitlist: true}}}, false)
	if err != nil || res.Items[0].Outcome.Answer.Status != engine.StatusWaiting {
		t.Fatalf("batch with a waiting item = %+v, %v", res, err)
	}
	h.wantEntries("kiln", "carol:waiting@1")
}

// testWaitlistWalkInsWaitBehind: while anyone waits, places go to the
// waiting list even when the ones free do not fit the first entry: a
// walk-in and a hold are refused, and an entry that joins and fits is
// offered the places at once, ahead of one that does not fit.
func testWaitlistWalkInsWaitBehind(t *testing.T, h *harness) {
	h.workshop("kiln", 3, 3)
	r := h.mustReserve("alice", newKey(), "kiln", 3)
	h.mustJoin(bob, "kiln", 2, 1)
	// One place frees: too few for bob.
	if _, _, err := h.eng.PutWorkshop(h.ctx, "kiln", engine.WorkshopSpec{Capacity: 4}, nil); err != nil {
		t.Fatal(err)
	}
	h.wantEntries("kiln", "bob:waiting@1")
	if out, err := h.reserve("erin", newKey(), "kiln", 1); err != nil || out.Answer.Status != engine.StatusUnavailable {
		t.Fatalf("walk-in = %+v, %v; want unavailable", out, err)
	}
	if out, err := h.hold(erin, newKey(), "kiln", 1, ttl); err != nil || out.Answer.Status != engine.StatusUnavailable {
		t.Fatalf("walk-in hold = %+v, %v; want unavailable", out, err)
	}
	carolJoin := h.mustJoin(carol, "kiln", 1, 2)
	h.wantEntries("kiln", "bob:waiting@1", "carol:offered")
	h.wantPlaces("kiln", 3, 1)
	// Carol declines: her place is free again, and bob still does not fit.
	if out, err := h.eng.LeaveWaitlist(h.ctx, carol, newKey(), carolJoin.Answer.EntryID); err != nil || out.Answer.Status != engine.StatusLeft {
		t.Fatalf("carol leaves = %+v, %v", out, err)
	}
	h.wantEntries("kiln", "bob:waiting@1", "carol:left")
	h.wantPlaces("kiln", 3, 0)
	// A cancellation of one place makes two free: bob's turn.
	h.mustCancel(alice, newKey(), r.Answer.ReservationID)
	h.wantEntries("kiln", "bob:offered", "carol:left")
	h.wantPlaces("kiln", 0, 2)
}

// testWaitlistLeave: leaving answers by the entry's state, and only its
// owner may leave it; an unknown entry stores nothing.
func testWaitlistLeave(t *testing.T, h *harness) {
	if _, _, err := h.eng.PutWorkshop(h.ctx, "kiln", engine.WorkshopSpec{Capacity: 1, OfferTTLSeconds: 60}, nil); err != nil {
		t.Fatal(err)
	}
	r := h.mustReserve("alice", newKey(), "kiln", 1)
	b := h.mustJoin(bob, "kiln", 1, 1)
	c := h.mustJoin(carol, "kiln", 1, 2)
	d := h.mustJoin(dave, "kiln", 1, 3)
	_, receipts := h.counts()
	if _, err := h.eng.LeaveWaitlist(h.ctx, alice, newKey(), b.Answer.EntryID); engine.ErrorCode(err) != engine.CodeUnknownEntry {
		t.Fatalf("alice leaves bob's entry: %v", err)
	}
	if _, err := h.eng.LeaveWaitlist(h.ctx, ops, newKey(), "nope"); engine.ErrorCode(err) != engine.CodeUnknownEntry {
		t.Fatalf("leave of a malformed id: %v", err)
	}
	if _, err := h.eng.LeaveWaitlist(h.ctx, bob, "not-a-key", b.Answer.EntryID); engine.ErrorCode(err) != engine.CodeInvalidIdempotencyKey {
		t.Fatalf("leave with a bad key: %v", err)
	}
	if _, now := h.counts(); now != receipts {
		t.Fatalf("refused leavings stored %d receipts", now-receipts)
	}
	// Bob is offered the place and confirms it; he cannot leave then.
	h.mustCancel(alice, newKey(), r.Answer.ReservationID)
	offer := h.offerOf("kiln", b.Answer.EntryID)
	h.mustSettle(engine.OperationConfirm, bob, newKey(), offer.HoldID)
	if out, err := h.eng.LeaveWaitlist(h.ctx, bob, newKey(), b.Answer.EntryID); err != nil || out.Answer.Status != engine.StatusAlreadyReserved {
		t.Fatalf("bob leaves after confirming = %+v, %v", out, err)
	}
	// Bob cancels; carol's offer runs out, and her leaving says so and
	// passes the place to dave.
	list, _, err := h.eng.Reservations(h.ctx, bob, engine.ListFilter{})
	if err != nil || len(list) != 1 {
		t.Fatalf("bob's reservations = %+v, %v", list, err)
	}
	h.mustCancel(bob, newKey(), list[0].ID)
	h.offerOf("kiln", c.Answer.EntryID)
	h.advance(time.Minute)
	if out, err := h.eng.LeaveWaitlist(h.ctx, carol, newKey(), c.Answer.EntryID); err != nil || out.Answer.Status != engine.StatusExpired {
		t.Fatalf("carol leaves after her deadline = %+v, %v", out, err)
	}
	daveOffer := h.offerOf("kiln", d.Answer.EntryID)
	// A release of the offer passes it on too: nobody is left, so the
	// place is free for anyone.
	if out := h.mustSettle(engine.OperationRelease, dave, newKey(), daveOffer.HoldID); out.Answer.Status != engine.StatusReleased {
		t.Fatalf("dave releases his offer = %+v", out)
	}
	h.wantEntries("kiln", "bob:reserved", "carol:expired", "dave:left")
	if out := h.mustReserve("erin", newKey(), "kiln", 1); out.Answer.Status != engine.StatusReserved {
		t.Fatalf("walk-in with nobody waiting = %+v", out)
	}
	// Their own list, newest first, each with its state.
	es, _, err := h.eng.Waitlist(h.ctx, dave, engine.ListFilter{})
	if err != nil || len(es) != 1 || es[0].State != engine.WaitLeft || es[0].HoldID != daveOffer.HoldID {
		t.Fatalf("dave's list = %+v, %v", es, err)
	}
	if _, _, err := h.eng.Waitlist(h.ctx, dave, engine.ListFilter{Actor: "bob"}); engine.ErrorCode(err) != engine.CodeForbidden {
		t.Fatalf("dave lists bob's entries: %v", err)
	}
	if _, _, err := h.eng.WorkshopWaitlist(h.ctx, dave, "kiln", engine.ListFilter{}); engine.ErrorCode(err) != engine.CodeForbidden {
		t.Fatalf("dave reads the workshop's list: %v", err)
	}
	if _, _, err := h.eng.WorkshopWaitlist(h.ctx, ops, "nowhere", engine.ListFilter{}); engine.ErrorCode(err) != engine.CodeUnknownWorkshop {
		t.Fatalf("the list of an unknown workshop: %v", err)
	}
}

// testWaitlistJanitorPassesOffers: an offer whose deadline passes with no
// decision on its workshop passes on at the janitor's next step, and a
// workshop with people waiting cannot be deleted.
func testWaitlistJanitorPassesOffers(t *testing.T, h *harness) {
	if _, _, err := h.eng.PutWorkshop(h.ctx, "kiln", engine.WorkshopSpec{Capacity: 1, OfferTTLSeconds: 60}, nil); err != nil {
		t.Fatal(err)
	}
	r := h.mustReserve("alice", newKey(), "kiln", 1)
	b := h.mustJoin(bob, "kiln", 1, 1)
	h.mustJoin(carol, "kiln", 1, 2)
	if err := h.eng.DeleteWorkshop(h.ctx, "kiln", nil); engine.ErrorCode(err) != engine.CodeWorkshopInUse {
		t.Fatalf("delete with people waiting: %v", err)
	}
	h.mustCancel(alice, newKey(), r.Answer.ReservationID)
	h.offerOf("kiln", b.Answer.EntryID)
	h.advance(2 * time.Minute)
	// The list shows bob's offer expired at once; it passes on when the
	// janitor cleans it.
	h.wantEntries("kiln", "bob:expired", "carol:waiting@1")
	cleaned, _, err := h.eng.ExpireHolds(h.ctx, 100)
	if err != nil || cleaned != 1 {
		t.Fatalf("ExpireHolds = %d, %v", cleaned, err)
	}
	h.wantEntries("kiln", "bob:expired", "carol:offered")
	h.wantOfferEvents(2)
}

// testConcurrentWaitlist: people join, cancel, leave and confirm at once;
// every freed place is offered once (the check finds no place free that
// fits someone waiting, and no entry offered twice), and capacity holds.
func testConcurrentWaitlist(t *testing.T, h *harness) {
	h.workshop("kiln", 5, 1)
	var res []string
	for i := range 5 {
		res = append(res, h.mustReserve(fmt.Sprintf("early-%d", i), newKey(), "kiln", 1).Answer.ReservationID)
	}
	var mu sync.Mutex
	var entries []engine.Principal
	concurrently(20, func(i int) {
		who := engine.Principal{Actor: fmt.Sprintf("late-%d", i)}
		_, err := h.join(who, newKey(), "kiln", 1)
		if err != nil {
			t.Errorf("join %d: %v", i, err)
			return
		}
		mu.Lock()
		entries = append(entries, who)
		mu.Unlock()
		if i < len(res) {
			h.mustCancel(engine.Principal{Actor: fmt.Sprintf("early-%d", i)}, newKey(), res[i])
		}
	})
	h.mustCheckClean()
	offered := 0
	for _, e := range h.entries("kiln") {
		if e.State == engine.WaitOffered {
			offered++
		}
	}
	if offered != 5 {
		t.Fatalf("%d entries offered places, want the 5 freed", offered)
	}
	// Each offer taken or declined, at once.
	concurrently(len(entries), func(i int) {
		es, _, err := h.eng.Waitlist(h.ctx, entries[i], engine.ListFilter{})
		if err != nil || len(es) != 1 {
			t.Errorf("list of %s = %+v, %v", entries[i].Actor, es, err)
			return
		}
		if es[0].State != engine.WaitOffered {
			return
		}
		if i%2 == 0 {
			h.mustSettle(engine.OperationConfirm, entries[i], newKey(), es[0].HoldID)
		} else if _, err := h.eng.LeaveWaitlist(h.ctx, entries[i], newKey(), es[0].ID); err != nil {
			t.Errorf("leave: %v", err)
		}
	})
	// The places declined went on to the entries behind, and the
	// workshop is full: three confirmed, two offered again.
	h.mustCheckClean()
	if w, err := h.eng.Workshop(h.ctx, "kiln"); err != nil || w.Reserved+w.Holding != 5 {
		t.Errorf("kiln after the offers were taken or declined: %d reserved, %d held; want 5 in all (%v)", w.Reserved, w.Holding, err)
	}
}

// testCheckFindsBrokenWaitlists: the check reports a waiting counter that
// is not the entries', an entry waiting with an offer, an entry no answer
// made, and places free that fit someone waiting.
func testCheckFindsBrokenWaitlists(t *testing.T, h *harness) {
	h.workshop("kiln", 1, 1)
	h.mustReserve("alice", newKey(), "kiln", 1)
	b := h.mustJoin(bob, "kiln", 1, 1)
	h.mustCheckClean()
	err := h.store.Update(h.ctx, func(tx engine.Tx) error {
		w, _, err := tx.Workshop("kiln")
		if err != nil {
			return err
		}
		w.Waiting, w.Capacity = 5, 2
		if err := tx.PutWorkshop(w); err != nil {
			return err
		}
		e, _, err := tx.WaitEntry(b.Answer.EntryID)
		if err != nil {
			return err
		}
		e.HoldID = fmt.Sprintf("%032x", 999)
		if err := tx.PutWaitEntry(e); err != nil {
			return err
		}
		return tx.PutWaitEntry(engine.WaitEntry{ID: fmt.Sprintf("%032x", 998), Actor: "carol", OperationKey: newKey(), Workshop: "kiln",
			Quantity: 1, State: engine.WaitLeft, CreatedAt: Now, SettledAt: Now})
	})
	if err != nil {
		t.Fatal(err)
	}
	findings, err := engine.CheckAt(h.ctx, h.store, h.now())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"counts 5 people waiting", "is waiting and offered", "named by 0 waiting answers", "which entry " + b.Answer.EntryID}
	for _, w := range want {
		found := false
		for _, f := range findings {
			found = found || (f.Kind == engine.FindingWaitlist && bytes.Contains([]byte(f.Detail), []byte(w)))
		}
		if !found {
			t.Errorf("no %s finding saying %q in %v", engine.FindingWaitlist, w, findings)
		}
	}
}

// storedEntryState returns the state entry id is stored in, which an offer
// past its deadline keeps until a decision or the janitor cleans it up.
func (h *harness) storedEntryState(id string) engine.WaitState {
	h.t.Helper()
	var e engine.WaitEntry
	var ok bool
	err := h.store.View(h.ctx, func(tx engine.Tx) error {
		var err error
		e, ok, err = tx.WaitEntry(id)
		return err
	})
	if err != nil || !ok {
		h.t.Fatalf("entry %s: found %v, %v", id, ok, err)
	}
	return e.State
}

// testWaitlistSettlementsPassExpiredOffers: an offer whose deadline passed
// goes on at the next decision on its workshop, whichever it is: also the
// confirmation of another hold, and an entry leaving the queue.
func testWaitlistSettlementsPassExpiredOffers(t *testing.T, h *harness) {
	if _, _, err := h.eng.PutWorkshop(h.ctx, "kiln", engine.WorkshopSpec{Capacity: 2, MaxQuantity: 1, OfferTTLSeconds: 60}, nil); err != nil {
		t.Fatal(err)
	}
	r := h.mustReserve("alice", newKey(), "kiln", 1)
	held := h.mustHold(erin, "kiln", 1)
	b := h.mustJoin(bob, "kiln", 1, 1)
	c := h.mustJoin(carol, "kiln", 1, 2)
	d := h.mustJoin(dave, "kiln", 1, 3)
	h.mustCancel(alice, newKey(), r.Answer.ReservationID)
	h.offerOf("kiln", b.Answer.EntryID)
	h.advance(2 * time.Minute) // Bob's offer passes its deadline; erin's hold lasts.
	if out := h.mustSettle(engine.OperationConfirm, erin, newKey(), held.Answer.HoldID); out.Answer.Status != engine.StatusReserved {
		t.Fatalf("erin's confirmation = %+v", out)
	}
	if got := h.storedEntryState(c.Answer.EntryID); got != engine.WaitOffered {
		t.Fatalf("after a confirmation past bob's deadline carol's entry is stored %s, want offered", got)
	}
	e := h.mustJoin(frank, "kiln", 1, 2)
	h.advance(2 * time.Minute) // Carol's offer passes its deadline too.
	if out, err := h.eng.LeaveWaitlist(h.ctx, frank, newKey(), e.Answer.EntryID); err != nil || out.Answer.Status != engine.StatusLeft {
		t.Fatalf("frank leaves = %+v, %v", out, err)
	}
	if got := h.storedEntryState(d.Answer.EntryID); got != engine.WaitOffered {
		t.Fatalf("after a leaving past carol's deadline dave's entry is stored %s, want offered", got)
	}
	h.wantEntries("kiln", "bob:expired", "carol:expired", "dave:offered", "frank:left")
	h.wantOfferEvents(3)
}

// testWaitlistLimitPerPerson: the places a person waits for count
// against the workshop's limit per person, as those they hold do, since
// each entry is offered its places without the limit being checked again.
func testWaitlistLimitPerPerson(t *testing.T, h *harness) {
	if _, _, err := h.eng.PutWorkshop(h.ctx, "kiln", engine.WorkshopSpec{Capacity: 2, MaxQuantity: 2, Schedule: engine.Schedule{MaxPerPerson: 2}}, nil); err != nil {
		t.Fatal(err)
	}
	h.mustReserve("alice", newKey(), "kiln", 2)
	h.mustJoin(bob, "kiln", 1, 1)
	h.mustJoin(bob, "kiln", 1, 2)
	out, err := h.join(bob, newKey(), "kiln", 1)
	if err != nil || out.Answer.Status != engine.StatusLimitReached || out.Answer.Limit != (engine.Limit{MaxPerPerson: 2, Already: 2}) {
		t.Fatalf("bob's third join = %s, %v; want limit_reached with 2 places already", out.Answer.JSON(), err)
	}
	if _, _, err := h.eng.PutWorkshop(h.ctx, "kiln", engine.WorkshopSpec{Capacity: 5}, nil); err != nil {
		t.Fatal(err)
	}
	h.wantEntries("kiln", "bob:offered", "bob:offered")
	// Offered places are held, and count as such.
	if out, err := h.reserve("bob", newKey(), "kiln", 1); err != nil || out.Answer.Status != engine.StatusLimitReached {
		t.Fatalf("bob's reservation beside his offers = %+v, %v; want limit_reached", out, err)
	}
}

// testWaitlistSettledAfterDelete: leaving an entry of a deleted workshop,
// and settling its offer, are answered from their state, as replays of
// earlier answers are: the workshop is deleted only once nobody waits and
// no offer is open.
func testWaitlistSettledAfterDelete(t *testing.T, h *harness) {
	if _, _, err := h.eng.PutWorkshop(h.ctx, "kiln", engine.WorkshopSpec{Capacity: 1, OfferTTLSeconds: 60}, nil); err != nil {
		t.Fatal(err)
	}
	r := h.mustReserve("alice", newKey(), "kiln", 1)
	b := h.mustJoin(bob, "kiln", 1, 1)
	c := h.mustJoin(carol, "kiln", 1, 2)
	h.mustCancel(alice, newKey(), r.Answer.ReservationID)
	if out, err := h.eng.LeaveWaitlist(h.ctx, bob, newKey(), b.Answer.EntryID); err != nil || out.Answer.Status != engine.StatusLeft {
		t.Fatalf("bob declines = %+v, %v", out, err)
	}
	offer := h.offerOf("kiln", c.Answer.EntryID)
	h.advance(2 * time.Minute)
	if err := h.eng.DeleteWorkshop(h.ctx, "kiln", nil); err != nil {
		t.Fatalf("delete once the last offer passed its deadline: %v", err)
	}
	if out, err := h.eng.LeaveWaitlist(h.ctx, bob, newKey(), b.Answer.EntryID); err != nil || out.Answer.Status != engine.StatusAlreadyLeft {
		t.Fatalf("bob leaves again after the deletion = %+v, %v; want already_left", out, err)
	}
	if out, err := h.eng.LeaveWaitlist(h.ctx, carol, newKey(), c.Answer.EntryID); err != nil || out.Answer.Status != engine.StatusExpired {
		t.Fatalf("carol leaves after the deletion = %+v, %v; want expired", out, err)
	}
	if out, err := h.eng.Confirm(h.ctx, carol, newKey(), offer.HoldID); err != nil || out.Answer.Status != engine.StatusExpired {
		t.Fatalf("carol confirms her offer after the deletion = %+v, %v; want expired", out, err)
	}
}

// testWaitlistOrderIsTheJoinOrder: two daemons whose clocks differ by a
// few milliseconds serve one list in the order people joined it: one
// that joins later through the daemon whose clock is behind still waits
// behind the first, and the freed place goes to the first.
func testWaitlistOrderIsTheJoinOrder(t *testing.T, h *harness) {
	h.workshop("kiln", 1, 1)
	r := h.mustReserve("alice", newKey(), "kiln", 1)
	base := time.Now()
	ahead := engine.New(h.store, engine.WithClock(func() time.Time { return base.Add(5 * time.Millisecond) }))
	behind := engine.New(h.store, engine.WithClock(func() time.Time { return base.Add(2 * time.Millisecond) }))
	b, err := ahead.Reserve(h.ctx, "bob", newKey(), engine.Request{Workshop: "kiln", Quantity: 1, Waitlist: true})
	if err != nil || b.Answer.Position != 1 {
		t.Fatalf("bob joins: %+v, %v", b, err)
	}
	c, err := behind.Reserve(h.ctx, "carol", newKey(), engine.Request{Workshop: "kiln", Quantity: 1, Waitlist: true})
	if err != nil || c.Answer.Position != 2 {
		t.Fatalf("carol joins after bob on a clock behind his daemon's: %+v, %v; want position 2", c, err)
	}
	h.wantEntries("kiln", "bob:waiting@1", "carol:waiting@2")
	if _, err := behind.Cancel(h.ctx, alice, newKey(), r.Answer.ReservationID); err != nil {
		t.Fatal(err)
	}
	h.wantEntries("kiln", "bob:offered", "carol:waiting@1")
}

// testWaitlistRefusalsServeTheList: a request refused by the registration
// window is a decision on the workshop too: an offer past its deadline
// passes on there.
func testWaitlistRefusalsServeTheList(t *testing.T, h *harness) {
	if _, _, err := h.eng.PutWorkshop(h.ctx, "kiln", engine.WorkshopSpec{Capacity: 1, OfferTTLSeconds: 60}, nil); err != nil {
		t.Fatal(err)
	}
	r := h.mustReserve("alice", newKey(), "kiln", 1)
	b := h.mustJoin(bob, "kiln", 1, 1)
	h.mustJoin(carol, "kiln", 1, 2)
	h.mustCancel(alice, newKey(), r.Answer.ReservationID)
	h.offerOf("kiln", b.Answer.EntryID)
	closes := h.now().Add(30 * time.Second).Truncate(time.Second)
	if _, err := h.eng.PatchWorkshop(h.ctx, "kiln", engine.WorkshopPatch{ClosesAt: &closes}, nil); err != nil {
		t.Fatal(err)
	}
	h.advance(2 * time.Minute)
	if out, err := h.reserve("dave", newKey(), "kiln", 1); err != nil || out.Answer.Status != engine.StatusRegistrationClosed {
		t.Fatalf("a request after registration closed = %+v, %v", out, err)
	}
	if got := h.holdState(h.entry("kiln", b.Answer.EntryID).HoldID); got != engine.HoldExpired {
		t.Fatalf("bob's offer is stored as %s after the refused request, want expired", got)
	}
	h.wantEntries("kiln", "bob:expired", "carol:offered")
}

// testWaitlistForMoreThanCapacity: a request to wait for more places than
// the workshop has joins its list (a workshop of capacity 0 gathers
// people before it opens); the places free meanwhile go to whoever waits
// behind and fits, a walk-in included once it joins, and the first entry
// is served when the capacity is raised.
func testWaitlistForMoreThanCapacity(t *testing.T, h *harness) {
	h.workshop("kiln", 5, 5)
	zero := 0
	if _, err := h.eng.PatchWorkshop(h.ctx, "kiln", engine.WorkshopPatch{Capacity: &zero}, nil); err != nil {
		t.Fatal(err)
	}
	b := h.mustJoin(bob, "kiln", 3, 1)
	two := 2
	if _, err := h.eng.PatchWorkshop(h.ctx, "kiln", engine.WorkshopPatch{Capacity: &two}, nil); err != nil {
		t.Fatal(err)
	}
	h.wantEntries("kiln", "bob:waiting@1")
	if out, err := h.reserve("carol", newKey(), "kiln", 1); err != nil || out.Answer.Status != engine.StatusUnavailable {
		t.Fatalf("a walk-in while bob waits = %+v, %v; want unavailable", out, err)
	}
	h.mustJoin(carol, "kiln", 1, 2)
	h.wantEntries("kiln", "bob:waiting@1", "carol:offered")
	three := 3
	if _, err := h.eng.PatchWorkshop(h.ctx, "kiln", engine.WorkshopPatch{Capacity: &three}, nil); err != nil {
		t.Fatal(err)
	}
	h.wantEntries("kiln", "bob:waiting@1", "carol:offered")
	five := 5
	if _, err := h.eng.PatchWorkshop(h.ctx, "kiln", engine.WorkshopPatch{Capacity: &five}, nil); err != nil {
		t.Fatal(err)
	}
	h.offerOf("kiln", b.Answer.EntryID)
	h.wantPlaces("kiln", 0, 4)
}
