package enginetest

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// This file holds the conformance tests of cancellation.

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
