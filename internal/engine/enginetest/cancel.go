package enginetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// This file holds the conformance tests of cancellation, the
// outbox of confirmation events and key retention with tombstones.

func (h *harness) cancel(who engine.Principal, key engine.OperationKey, id string) (engine.Outcome, error) {
	return h.eng.Cancel(h.ctx, who, key, id)
}

func (h *harness) mustCancel(who engine.Principal, key engine.OperationKey, id string) engine.Outcome {
	h.t.Helper()
	out, err := h.cancel(who, key, id)
	if err != nil {
		h.t.Fatalf("Cancel(%s, %s, %s): %v", who.Actor, key, id, err)
	}
	return out
}

// events returns every event in the outbox.
func (h *harness) events() []engine.Event {
	h.t.Helper()
	var evs []engine.Event
	err := h.store.View(h.ctx, func(tx engine.Tx) error {
		evs = evs[:0]
		return tx.ForEachEvent(func(e engine.Event) error { evs = append(evs, e); return nil })
	})
	if err != nil {
		h.t.Fatalf("events: %v", err)
	}
	return evs
}

// eventTypes counts the outbox events by type.
func (h *harness) eventTypes() map[string]int {
	h.t.Helper()
	n := map[string]int{}
	for _, e := range h.events() {
		n[e.Type]++
	}
	return n
}

func (h *harness) reservation(id string) engine.Reservation {
	h.t.Helper()
	r, err := h.eng.Reservation(h.ctx, engine.Principal{Actor: "root", Admin: true}, id)
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

var (
	alice = engine.Principal{Actor: "alice"}
	bob   = engine.Principal{Actor: "bob"}
	ops   = engine.Principal{Actor: "ops", Admin: true}
)

func cancelledBody(status, id, workshop string, quantity int) string {
	return fmt.Sprintf(`{"status":%q,"reservation_id":%q,"workshop":%q,"quantity":%d}`, status, id, workshop, quantity)
}

func testCancel(t *testing.T, h *harness) {
	h.workshop("go-basics", 3, 2)
	res := h.mustReserve("alice", newKey(), "go-basics", 2)
	full := newKey()
	if out := h.mustReserve("bob", full, "go-basics", 2); out.Answer.Status != engine.StatusUnavailable {
		t.Fatalf("full workshop answered %q", out.Answer.Status)
	}
	h.advance(time.Minute)
	key := newKey()
	out := h.mustCancel(alice, key, res.Answer.ReservationID)
	want := cancelledBody("cancelled", res.Answer.ReservationID, "go-basics", 2)
	if out.Answer.Status != engine.StatusCancelled || out.Replayed || string(out.Answer.JSON()) != want || out.Answer.ReservationID != res.Answer.ReservationID {
		t.Fatalf("cancel = %+v body %s, want cancelled %s", out, out.Answer.JSON(), want)
	}
	h.wantReserved("go-basics", 0)
	r := h.reservation(res.Answer.ReservationID)
	if !r.Cancelled() || !r.CancelledAt.Equal(Now.Add(time.Minute)) || r.CancelledBy != "alice" || r.CancelOperation != key || r.Quantity != 2 {
		t.Fatalf("cancelled reservation = %+v", r)
	}
	rec, err := h.eng.Operation(h.ctx, "alice", key)
	if err != nil || rec.Answer.Status != engine.StatusCancelled || string(rec.Answer.JSON()) != want || rec.Kind() != engine.OperationCancel {
		t.Fatalf("cancel receipt = %+v, %v", rec, err)
	}
	// The freed places serve a new intent at once; the stored
	// "unavailable" of the old one stays.
	if again := h.mustReserve("bob", full, "go-basics", 2); again.Answer.Status != engine.StatusUnavailable || !again.Replayed {
		t.Fatalf("old unavailable intent after a cancellation = %+v", again)
	}
	if fresh := h.mustReserve("bob", newKey(), "go-basics", 2); fresh.Answer.Status != engine.StatusReserved {
		t.Fatalf("new intent after a cancellation = %+v", fresh)
	}
	h.wantReserved("go-basics", 2)
	h.wantCounts(2, 4)
}

func testCancelConflicts(t *testing.T, h *harness) {
	h.workshop("go-basics", 5, 2)
	rkey := newKey()
	a := h.mustReserve("alice", rkey, "go-basics", 1)
	b := h.mustReserve("alice", newKey(), "go-basics", 1)
	key := newKey()
	first := h.mustCancel(alice, key, a.Answer.ReservationID)
	for i := 0; i < 3; i++ {
		again := h.mustCancel(alice, key, a.Answer.ReservationID)
		if !again.Replayed || again.Answer.Status != engine.StatusCancelled || !bytes.Equal(again.Answer.JSON(), first.Answer.JSON()) {
			t.Fatalf("repeat %d = %+v, want a replay of %s", i, again, first.Answer.JSON())
		}
	}
	// The same key for another reservation conflicts and cancels nothing.
	_, err := h.cancel(alice, key, b.Answer.ReservationID)
	wantCode(t, err, engine.CodeOperationConflict)
	if h.reservation(b.Answer.ReservationID).Cancelled() {
		t.Fatal("a conflicting cancel cancelled the other reservation")
	}
	// A cancel key cannot reserve, and a reservation key cannot cancel.
	_, err = h.reserve("alice", key, "go-basics", 1)
	wantCode(t, err, engine.CodeOperationConflict)
	_, err = h.cancel(alice, rkey, a.Answer.ReservationID)
	wantCode(t, err, engine.CodeOperationConflict)
	_, err = h.cancel(alice, rkey, b.Answer.ReservationID)
	wantCode(t, err, engine.CodeOperationConflict)
	// A key that first cancels is bound to that cancellation.
	fresh := newKey()
	h.mustCancel(alice, fresh, b.Answer.ReservationID)
	_, err = h.reserve("alice", fresh, "go-basics", 1)
	wantCode(t, err, engine.CodeOperationConflict)
	h.wantReserved("go-basics", 0)
	h.wantCounts(2, 4)
}

func testCancelAlreadyCancelled(t *testing.T, h *harness) {
	h.workshop("go-basics", 3, 2)
	res := h.mustReserve("alice", newKey(), "go-basics", 2)
	h.mustCancel(alice, newKey(), res.Answer.ReservationID)
	key := newKey()
	out := h.mustCancel(alice, key, res.Answer.ReservationID)
	want := cancelledBody("already_cancelled", res.Answer.ReservationID, "go-basics", 2)
	if out.Answer.Status != engine.StatusAlreadyCancelled || out.Replayed || string(out.Answer.JSON()) != want {
		t.Fatalf("second cancellation = %+v body %s, want already_cancelled or unavailable %s", out, out.Answer.JSON(), want)
	}
	again := h.mustCancel(alice, key, res.Answer.ReservationID)
	if !again.Replayed || again.Answer.Status != engine.StatusAlreadyCancelled || !bytes.Equal(again.Answer.JSON(), out.Answer.JSON()) {
		t.Fatalf("replay of already_cancelled = %+v", again)
	}
	// An admin's cancellation of it is answered the same way.
	if out := h.mustCancel(ops, newKey(), res.Answer.ReservationID); out.Answer.Status != engine.StatusAlreadyCancelled {
		t.Fatalf("admin's late cancel = %+v", out)
	}
	h.wantReserved("go-basics", 0)
	h.wantCounts(1, 4)
	if n := h.eventTypes(); n[engine.EventCancelled] != 1 || n[engine.EventReserved] != 1 {
		t.Fatalf("events = %v, want one of each", n)
	}
}

func testCancelVisibility(t *testing.T, h *harness) {
	h.workshop("go-basics", 3, 2)
	res := h.mustReserve("alice", newKey(), "go-basics", 1)
	key := newKey()
	for _, id := range []string{res.Answer.ReservationID, fmt.Sprintf("%032x", 1<<50), "nope", ""} {
		_, err := h.cancel(bob, key, id)
		wantCode(t, err, engine.CodeUnknownReservation)
	}
	// Nothing was stored: bob's key is still free.
	_, err := h.eng.Operation(h.ctx, "bob", key)
	wantCode(t, err, engine.CodeUnknownOperation)
	_, err = h.cancel(alice, "not-a-key", res.Answer.ReservationID)
	wantCode(t, err, engine.CodeInvalidIdempotencyKey)
	_, err = h.cancel(engine.Principal{Actor: "Alice"}, newKey(), res.Answer.ReservationID)
	wantCode(t, err, engine.CodeUnauthenticated)
	h.wantCounts(1, 1)
	// An admin may cancel anyone's reservation.
	if out := h.mustCancel(ops, newKey(), res.Answer.ReservationID); out.Answer.Status != engine.StatusCancelled {
		t.Fatalf("admin cancel = %+v", out)
	}
	if r := h.reservation(res.Answer.ReservationID); r.CancelledBy != "ops" {
		t.Fatalf("cancelled by %q, want ops", r.CancelledBy)
	}
	h.wantReserved("go-basics", 0)
}

func testCancelFailReceiptWrite(t *testing.T, h *harness) {
	h.workshop("go-basics", 3, 2)
	res := h.mustReserve("alice", newKey(), "go-basics", 2)
	h.failReceiptWrites(1)
	key := newKey()
	_, err := h.cancel(alice, key, res.Answer.ReservationID)
	wantCode(t, err, engine.CodeInternal)
	h.wantReserved("go-basics", 2)
	if h.reservation(res.Answer.ReservationID).Cancelled() {
		t.Fatal("a rolled-back cancellation left the reservation cancelled")
	}
	if n := h.eventTypes(); n[engine.EventCancelled] != 0 {
		t.Fatalf("a rolled-back cancellation left an event: %v", n)
	}
	if out := h.mustCancel(alice, key, res.Answer.ReservationID); out.Answer.Status != engine.StatusCancelled || out.Replayed {
		t.Fatalf("retry after a failed receipt write = %+v", out)
	}
	h.wantReserved("go-basics", 0)
	h.wantCounts(1, 2)
}

func testConcurrentCancels(t *testing.T, h *harness) {
	h.workshop("go-basics", 3, 2)
	res := h.mustReserve("alice", newKey(), "go-basics", 2)
	same := newKey()
	outs, errs := make([]engine.Outcome, 32), make([]error, 32)
	concurrently(32, func(i int) {
		key := same
		if i%2 == 1 {
			key = newKey()
		}
		outs[i], errs[i] = h.cancel(alice, key, res.Answer.ReservationID)
	})
	cancelled, firsts := 0, 0
	for i := range outs {
		if errs[i] != nil {
			t.Fatalf("cancel %d: %v", i, errs[i])
		}
		if outs[i].Answer.Status == engine.StatusCancelled && !outs[i].Replayed {
			cancelled++
		}
		if i%2 == 0 && !outs[i].Replayed {
			firsts++
		}
		if i%2 == 0 && !bytes.Equal(outs[i].Answer.JSON(), outs[0].Answer.JSON()) {
			t.Fatalf("same key, different answers: %s and %s", outs[i].Answer.JSON(), outs[0].Answer.JSON())
		}
	}
	if cancelled != 1 || firsts != 1 {
		t.Fatalf("%d first cancellations and %d first answers for the shared key, want 1 and 1", cancelled, firsts)
	}
	h.wantReserved("go-basics", 0)
	if n := h.eventTypes(); n[engine.EventCancelled] != 1 {
		t.Fatalf("events = %v", n)
	}
}

func testOutbox(t *testing.T, h *harness) {
	h.workshop("go-basics", 2, 2)
	a := h.mustReserve("alice", newKey(), "go-basics", 2)
	h.mustReserve("bob", newKey(), "go-basics", 1) // Unavailable: no event.
	ckey := newKey()
	h.mustCancel(alice, ckey, a.Answer.ReservationID)
	h.mustCancel(alice, ckey, a.Answer.ReservationID)     // Replay: no event.
	h.mustCancel(alice, newKey(), a.Answer.ReservationID) // Already cancelled: no event.
	evs := h.events()
	if len(evs) != 2 {
		t.Fatalf("outbox = %+v, want 2 events", evs)
	}
	ids := map[string]bool{}
	for _, ev := range evs {
		ids[ev.ID] = true
		var p engine.EventPayload
		payload, err := ev.Payload()
		if err != nil {
			t.Fatalf("payload of %s: %v", ev.ID, err)
		}
		if err := json.Unmarshal(payload, &p); err != nil {
			t.Fatalf("payload of %s: %v", ev.ID, err)
		}
		if p.ID != ev.ID || p.Type != ev.Type || p.ReservationID != a.Answer.ReservationID || p.Owner != "alice" || p.Workshop != "go-basics" || p.Quantity != 2 || ev.Delivered() {
			t.Fatalf("event %+v payload %+v", ev, p)
		}
		if ev.Type == engine.EventCancelled && ev.OperationKey != ckey {
			t.Fatalf("cancel event names key %s, want %s", ev.OperationKey, ckey)
		}
	}
	if len(ids) != 2 {
		t.Fatalf("event ids are not distinct: %+v", evs)
	}
	pending, err := h.eng.PendingEvents(h.ctx, 1)
	if err != nil || len(pending) != 1 {
		t.Fatalf("PendingEvents(1) = %+v, %v", pending, err)
	}
	if err := h.eng.MarkDelivered(h.ctx, pending[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := h.eng.MarkDelivered(h.ctx, pending[0].ID); err != nil {
		t.Fatalf("marking twice: %v", err)
	}
	rest, err := h.eng.PendingEvents(h.ctx, 10)
	if err != nil || len(rest) != 1 || rest[0].ID == pending[0].ID {
		t.Fatalf("pending after one delivery = %+v, %v", rest, err)
	}
	if n, err := h.eng.CountPendingEvents(h.ctx); err != nil || n != 1 {
		t.Fatalf("backlog = %d, %v", n, err)
	}
	if err := h.eng.MarkDelivered(h.ctx, fmt.Sprintf("%032x", 1<<60)); err == nil {
		t.Fatal("marking an unknown event succeeded")
	}
	// Rolled-back reservations leave no event.
	h.workshop("big", 100, 1)
	h.failReceiptWrites(1)
	if _, err := h.reserve("alice", newKey(), "big", 1); engine.ErrorCode(err) != engine.CodeInternal {
		t.Fatalf("armed fault: %v", err)
	}
	if got := len(h.events()); got != 2 {
		t.Fatalf("%d events after a rolled-back reservation, want 2", got)
	}
	// Batches write one event per reservation too.
	if _, _, err := h.eng.ReserveBatch(h.ctx, []engine.Intent{
		{Actor: "carol", Key: newKey(), Request: engine.Request{Workshop: "big", Quantity: 1}},
		{Actor: "dave", Key: newKey(), Request: engine.Request{Workshop: "big", Quantity: 1}},
	}); err != nil {
		t.Fatal(err)
	}
	if got := h.eventTypes(); got[engine.EventReserved] != 3 || got[engine.EventCancelled] != 1 {
		t.Fatalf("events after a batch = %v", got)
	}
}

func testRetention(t *testing.T, h *harness) {
	h.workshop("go-basics", 3, 2)
	oldKey, cancelKey, unavailKey := newKey(), newKey(), newKey()
	old := h.mustReserve("alice", oldKey, "go-basics", 2)
	h.mustReserve("bob", unavailKey, "go-basics", 2)
	h.mustCancel(alice, cancelKey, old.Answer.ReservationID)
	h.advance(48 * time.Hour)
	recent := newKey()
	h.mustReserve("alice", recent, "go-basics", 1)
	h.wantReserved("go-basics", 1)

	n, err := h.eng.ExpireReceipts(h.ctx, 24*time.Hour, 2)
	if err != nil || n != 2 {
		t.Fatalf("ExpireReceipts(limit 2) = %d, %v; want 2", n, err)
	}
	n, err = h.eng.ExpireReceipts(h.ctx, 24*time.Hour, 2)
	if err != nil || n != 1 {
		t.Fatalf("second ExpireReceipts = %d, %v; want 1", n, err)
	}
	if n, _ := h.eng.ExpireReceipts(h.ctx, 24*time.Hour, 2); n != 0 {
		t.Fatalf("third ExpireReceipts = %d, want 0", n)
	}
	h.wantCounts(2, 1)
	// Late retries of expired keys are refused without a second effect.
	_, err = h.reserve("alice", oldKey, "go-basics", 2)
	wantCode(t, err, engine.CodeOperationExpired)
	_, err = h.reserve("bob", unavailKey, "go-basics", 2)
	wantCode(t, err, engine.CodeOperationExpired)
	_, err = h.cancel(alice, cancelKey, old.Answer.ReservationID)
	wantCode(t, err, engine.CodeOperationExpired)
	// A different payload under an expired key is still a conflict.
	_, err = h.reserve("alice", oldKey, "go-basics", 1)
	wantCode(t, err, engine.CodeOperationConflict)
	_, err = h.cancel(alice, oldKey, old.Answer.ReservationID)
	wantCode(t, err, engine.CodeOperationConflict)
	_, err = h.reserve("alice", cancelKey, "go-basics", 1)
	wantCode(t, err, engine.CodeOperationConflict)
	// The operation lookup reports the key as expired; other actors and
	// recent keys are unaffected.
	_, err = h.eng.Operation(h.ctx, "alice", oldKey)
	wantCode(t, err, engine.CodeOperationExpired)
	_, err = h.eng.Operation(h.ctx, "carol", oldKey)
	wantCode(t, err, engine.CodeUnknownOperation)
	if out := h.mustReserve("alice", recent, "go-basics", 1); !out.Replayed {
		t.Fatalf("recent key = %+v, want a replay", out)
	}
	h.wantReserved("go-basics", 1)
	h.wantCounts(2, 1)
	var tombs []engine.Tombstone
	err = h.store.View(h.ctx, func(tx engine.Tx) error {
		tombs = tombs[:0]
		return tx.ForEachTombstone(func(ts engine.Tombstone) error { tombs = append(tombs, ts); return nil })
	})
	if err != nil || len(tombs) != 3 {
		t.Fatalf("tombstones = %+v, %v", tombs, err)
	}
	for _, ts := range tombs {
		if !ts.PurgedAt.Equal(Now.Add(48*time.Hour)) || !ts.CreatedAt.Equal(Now) || ts.Answer.Status == "" {
			t.Fatalf("tombstone %+v", ts)
		}
	}
	ts, ok, err := func() (ts engine.Tombstone, ok bool, err error) {
		err = h.store.View(h.ctx, func(tx engine.Tx) error {
			ts, ok, err = tx.Tombstone("alice", oldKey)
			return err
		})
		return ts, ok, err
	}()
	if err != nil || !ok || ts.Answer.Kind != engine.OperationReserve || ts.Answer.Status != engine.StatusReserved || ts.Answer.ReservationID != old.Answer.ReservationID || ts.Answer.Workshop != "go-basics" || ts.Answer.Quantity != 2 {
		t.Fatalf("tombstone of the reservation = %+v ok=%v err=%v", ts, ok, err)
	}
}

// testCheckLifecycleFindings breaks the invariants of cancellations and of
// the outbox and expects Check to report them.
func testCheckLifecycleFindings(t *testing.T, h *harness) {
	h.workshop("go-basics", 3, 2)
	res := h.mustReserve("alice", newKey(), "go-basics", 2)
	h.mustCancel(alice, newKey(), res.Answer.ReservationID)
	h.mustCheckClean()
	r := h.reservation(res.Answer.ReservationID)
	evs := h.events()
	cases := []struct {
		name   string
		break_ func(tx engine.Tx) error
		want   []string
	}{
		{"cancelled reservation counted again", func(tx engine.Tx) error {
			w, _, err := tx.Workshop("go-basics")
			if err != nil {
				return err
			}
			w.Reserved = 2
			return tx.PutWorkshop(w)
		}, []string{engine.FindingCounter}},
		{"cancellation without its receipt", func(tx engine.Tx) error {
			return tx.DeleteReceipt(r.CancelledBy, r.CancelOperation)
		}, []string{engine.FindingOrphanCancel}},
		{"cancel receipt of an active reservation", func(tx engine.Tx) error {
			r2 := r
			r2.CancelledAt, r2.CancelledBy, r2.CancelOperation = time.Time{}, "", ""
			w, _, err := tx.Workshop("go-basics")
			if err != nil {
				return err
			}
			w.Reserved = 2
			if err := tx.PutWorkshop(w); err != nil {
				return err
			}
			return tx.PutReservation(r2)
		}, []string{engine.FindingOrphanReceipt, engine.FindingOrphanEvent}},
		{"event of an unknown reservation", func(tx engine.Tx) error {
			ev := evs[0]
			ev.ID, ev.ReservationID = fmt.Sprintf("%032x", 1<<61), fmt.Sprintf("%032x", 1<<62)
			return tx.AddEvent(ev)
		}, []string{engine.FindingOrphanEvent}},
		{"second event for one reservation", func(tx engine.Tx) error {
			ev := evs[0]
			ev.ID = fmt.Sprintf("%032x", 1<<61)
			return tx.AddEvent(ev)
		}, []string{engine.FindingMissingEvent}},
	}
	for _, c := range cases {
		fresh := h.fresh()
		fresh.workshop("go-basics", 3, 2)
		var moved atomic.Bool
		err := fresh.store.Update(fresh.ctx, func(tx engine.Tx) error {
			// Copy the clean state of h into fresh, then break it.
			err := h.store.View(h.ctx, func(src engine.Tx) error {
				if err := src.ForEachWorkshop(tx.PutWorkshop); err != nil {
					return err
				}
				if err := src.ForEachReservation(tx.PutReservation); err != nil {
					return err
				}
				if err := src.ForEachReceipt(tx.PutReceipt); err != nil {
					return err
				}
				return src.ForEachEvent(tx.AddEvent)
			})
			if err != nil {
				return err
			}
			moved.Store(true)
			return c.break_(tx)
		})
		if err != nil || !moved.Load() {
			t.Fatalf("%s: %v", c.name, err)
		}
		fresh.wantFindings(c.name, c.want)
	}
}
