package enginetest

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// This file holds the conformance tests of holds: two-phase reservations
// with a deadline.

// ttl is the time to live of the suite's holds.
const ttl = 600

func (h *harness) hold(who engine.Principal, key engine.OperationKey, workshop string, quantity, ttlSeconds int) (engine.Outcome, error) {
	return h.eng.Hold(h.ctx, who.Actor, key, engine.HoldRequest{Workshop: workshop, Quantity: quantity, TTLSeconds: ttlSeconds})
}

func (h *harness) mustHold(who engine.Principal, workshop string, quantity int) engine.Outcome {
	h.t.Helper()
	out, err := h.hold(who, newKey(), workshop, quantity, ttl)
	if err != nil || out.Answer.Status != engine.StatusHeld {
		h.t.Fatalf("Hold(%s, %s×%d) = %+v, %v; want held", who.Actor, workshop, quantity, out, err)
	}
	return out
}

func (h *harness) mustSettle(kind engine.OperationKind, who engine.Principal, key engine.OperationKey, id string) engine.Outcome {
	h.t.Helper()
	settle := h.eng.Confirm
	if kind == engine.OperationRelease {
		settle = h.eng.Release
	}
	out, err := settle(h.ctx, who, key, id)
	if err != nil {
		h.t.Fatalf("%s(%s, hold %s): %v", kind, who.Actor, id, err)
	}
	return out
}

// wantPlaces checks a workshop's view: reserved, held and available.
func (h *harness) wantPlaces(id string, reserved, held int) {
	h.t.Helper()
	w, err := h.eng.Workshop(h.ctx, id)
	if err != nil {
		h.t.Fatal(err)
	}
	if w.Reserved != reserved || w.Held != held || w.Available != w.Capacity-reserved-held {
		h.t.Fatalf("workshop %s: reserved=%d held=%d available=%d capacity=%d, want reserved=%d held=%d",
			id, w.Reserved, w.Held, w.Available, w.Capacity, reserved, held)
	}
	ws, err := h.eng.Workshops(h.ctx, false)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, v := range ws {
		if v.ID == id && v != w {
			h.t.Fatalf("workshop list shows %+v, the workshop view %+v", v, w)
		}
	}
}

func (h *harness) holdState(id string) engine.HoldState {
	h.t.Helper()
	hd, err := h.eng.HoldOf(h.ctx, ops, id)
	if err != nil {
		h.t.Fatal(err)
	}
	return hd.State
}

func testHoldLifecycle(t *testing.T, h *harness) {
	h.workshop("go-basics", 5, 3)
	key := newKey()
	out, err := h.hold(alice, key, "go-basics", 3, ttl)
	if err != nil {
		t.Fatal(err)
	}
	id := out.Answer.HoldID
	wantBody := fmt.Sprintf(`{"status":"held","hold_id":%q,"workshop":"go-basics","quantity":3,"expires_at":"2026-11-29T12:10:00Z"}`, id)
	if out.Answer.Status != engine.StatusHeld || out.Replayed || string(out.Answer.JSON()) != wantBody {
		t.Fatalf("hold = %+v body %s, want %s", out, out.Answer.JSON(), wantBody)
	}
	h.wantPlaces("go-basics", 0, 3)
	// Held places count against capacity.
	if r := h.mustReserve("bob", newKey(), "go-basics", 3); r.Answer.Status != engine.StatusUnavailable {
		t.Fatalf("reserve beside a hold = %q, want unavailable", r.Answer.Status)
	}
	h.advance(time.Minute)
	if again, err := h.hold(alice, key, "go-basics", 3, ttl); err != nil || !again.Replayed || string(again.Answer.JSON()) != wantBody {
		t.Fatalf("hold replay = %+v %s, %v", again, again.Answer.JSON(), err)
	}
	hd, err := h.eng.HoldOf(h.ctx, alice, id)
	if err != nil || hd.State != engine.HoldHeld || hd.Quantity != 3 || !hd.ExpiresAt.Equal(Now.Add(10*time.Minute)) || hd.OperationKey != key {
		t.Fatalf("HoldOf = %+v, %v", hd, err)
	}
	ckey := newKey()
	c := h.mustSettle(engine.OperationConfirm, alice, ckey, id)
	resID := c.Answer.ReservationID
	wantConfirm := fmt.Sprintf(`{"status":"reserved","reservation_id":%q,"hold_id":%q,"workshop":"go-basics","quantity":3}`, resID, id)
	if c.Answer.Status != engine.StatusReserved || c.Replayed || string(c.Answer.JSON()) != wantConfirm {
		t.Fatalf("confirm = %+v %s, want %s", c, c.Answer.JSON(), wantConfirm)
	}
	h.wantPlaces("go-basics", 3, 0)
	if r := h.reservation(resID); r.Actor != "alice" || r.OperationKey != ckey || r.Quantity != 3 || r.Workshop != "go-basics" {
		t.Fatalf("reservation of the confirmed hold = %+v", r)
	}
	if got := h.eventTypes(); got[engine.EventReserved] != 1 {
		t.Fatalf("events after a confirmation = %v, want one %s", got, engine.EventReserved)
	}
	// A replay gives the same bytes, even after the reservation is
	// cancelled; the reservation cancels like any other.
	h.mustCancel(alice, newKey(), resID)
	h.wantPlaces("go-basics", 0, 0)
	if again := h.mustSettle(engine.OperationConfirm, alice, ckey, id); !again.Replayed || string(again.Answer.JSON()) != wantConfirm {
		t.Fatalf("confirm replay = %+v %s", again, again.Answer.JSON())
	}
	if hd, _ := h.eng.HoldOf(h.ctx, alice, id); hd.State != engine.HoldConfirmed || hd.ReservationID != resID || hd.SettleOperation != ckey {
		t.Fatalf("confirmed hold = %+v", hd)
	}
	// Another key: already confirmed, stored, and no second reservation.
	second := newKey()
	want := fmt.Sprintf(`{"status":"already_confirmed","hold_id":%q,"workshop":"go-basics","quantity":3}`, id)
	for range 2 {
		if out := h.mustSettle(engine.OperationConfirm, alice, second, id); out.Answer.Status != engine.StatusAlreadyConfirmed || string(out.Answer.JSON()) != want {
			t.Fatalf("second confirmation = %+v %s, want %s", out, out.Answer.JSON(), want)
		}
	}
	if out := h.mustSettle(engine.OperationRelease, alice, newKey(), id); out.Answer.Status != engine.StatusAlreadyConfirmed {
		t.Fatalf("release of a confirmed hold = %q", out.Answer.Status)
	}
	res, _ := h.counts()
	if res != 1 {
		t.Fatalf("%d reservations, want 1", res)
	}
}

func testHoldRelease(t *testing.T, h *harness) {
	h.workshop("go-basics", 4, 4)
	id := h.mustHold(alice, "go-basics", 4).Answer.HoldID
	key := newKey()
	out := h.mustSettle(engine.OperationRelease, alice, key, id)
	want := fmt.Sprintf(`{"status":"released","hold_id":%q,"workshop":"go-basics","quantity":4}`, id)
	if out.Answer.Status != engine.StatusReleased || string(out.Answer.JSON()) != want {
		t.Fatalf("release = %+v %s, want %s", out, out.Answer.JSON(), want)
	}
	h.wantPlaces("go-basics", 0, 0)
	if again := h.mustSettle(engine.OperationRelease, alice, key, id); !again.Replayed || string(again.Answer.JSON()) != want {
		t.Fatalf("release replay = %+v", again)
	}
	if out := h.mustSettle(engine.OperationRelease, alice, newKey(), id); out.Answer.Status != engine.StatusAlreadyReleased {
		t.Fatalf("second release = %q, want already_released", out.Answer.Status)
	}
	if out := h.mustSettle(engine.OperationConfirm, alice, newKey(), id); out.Answer.Status != engine.StatusReleased || out.Answer.ReservationID != "" {
		t.Fatalf("confirm after release = %+v, want released", out)
	}
	if r := h.mustReserve("bob", newKey(), "go-basics", 4); r.Answer.Status != engine.StatusReserved {
		t.Fatalf("reserve after a release = %q", r.Answer.Status)
	}
	if h.holdState(id) != engine.HoldReleased {
		t.Fatalf("released hold reads %s", h.holdState(id))
	}
}

// testHoldDeadline confirms at the last instant before the deadline and at
// the deadline itself: the first reserves, the second is expired, and the
// expired answer is stored, so later replays (and the clock) never change
// it.
func testHoldDeadline(t *testing.T, h *harness) {
	h.workshop("go-basics", 2, 2)
	early := h.mustHold(alice, "go-basics", 1).Answer
	late := h.mustHold(alice, "go-basics", 1).Answer
	h.advance(ttl*time.Second - time.Nanosecond)
	if out := h.mustSettle(engine.OperationConfirm, alice, newKey(), early.HoldID); out.Answer.Status != engine.StatusReserved {
		t.Fatalf("confirm 1 ns before the deadline = %q, want reserved", out.Answer.Status)
	}
	h.advance(time.Nanosecond)
	key := newKey()
	out := h.mustSettle(engine.OperationConfirm, alice, key, late.HoldID)
	want := fmt.Sprintf(`{"status":"expired","hold_id":%q,"workshop":"go-basics","quantity":1}`, late.HoldID)
	if out.Answer.Status != engine.StatusExpired || string(out.Answer.JSON()) != want {
		t.Fatalf("confirm at the deadline = %+v %s, want %s", out, out.Answer.JSON(), want)
	}
	h.advance(-time.Hour) // Even a clock that steps back replays the stored answer.
	if again := h.mustSettle(engine.OperationConfirm, alice, key, late.HoldID); !again.Replayed || again.Answer.Status != engine.StatusExpired {
		t.Fatalf("replay of an expired confirmation = %+v", again)
	}
	h.advance(time.Hour)
	if out := h.mustSettle(engine.OperationRelease, alice, newKey(), late.HoldID); out.Answer.Status != engine.StatusExpired {
		t.Fatalf("release after the deadline = %q, want expired", out.Answer.Status)
	}
	if h.holdState(late.HoldID) != engine.HoldExpired {
		t.Fatalf("hold past its deadline reads %s", h.holdState(late.HoldID))
	}
	h.wantPlaces("go-basics", 1, 0)
}

// testHoldExpiryFreesPlaces shows that a hold past its deadline stops
// counting at once, before and without any cleanup, and that the cleanup
// then gives back exactly its places.
func testHoldExpiryFreesPlaces(t *testing.T, h *harness) {
	h.workshop("go-basics", 10, 10)
	h.workshop("rust", 10, 10)
	short, err := h.hold(alice, newKey(), "go-basics", 4, 60)
	if err != nil || short.Answer.Status != engine.StatusHeld {
		t.Fatalf("hold = %+v, %v", short, err)
	}
	long := h.mustHold(bob, "go-basics", 3)
	other := h.mustHold(bob, "rust", 2)
	h.wantPlaces("go-basics", 0, 7)
	if r := h.mustReserve("carol", newKey(), "go-basics", 4); r.Answer.Status != engine.StatusUnavailable {
		t.Fatalf("reserve of 4 beside 7 held of 10 = %q", r.Answer.Status)
	}
	h.advance(time.Minute)
	h.wantPlaces("go-basics", 0, 3)
	// Capacity may now go down to reserved + held, not below.
	if _, _, err := h.eng.PutWorkshop(h.ctx, "go-basics", engine.WorkshopSpec{Capacity: 2}, nil); engine.ErrorCode(err) != engine.CodeCapacityBelowReserved {
		t.Fatalf("capacity below the held places: %v", err)
	}
	// The reservation needed the places of the expired hold, so it
	// cleaned it up itself, and the janitor finds nothing left.
	if r := h.mustReserve("carol", newKey(), "go-basics", 7); r.Answer.Status != engine.StatusReserved || r.ExpiredHolds != 1 {
		t.Fatalf("reserve of the places of an expired hold = %q, cleaning %d holds; want reserved, cleaning 1", r.Answer.Status, r.ExpiredHolds)
	}
	h.wantPlaces("go-basics", 7, 3)
	h.mustCheckClean()
	if n, more, err := h.eng.ExpireHolds(h.ctx, 100); err != nil || n != 0 || more {
		t.Fatalf("ExpireHolds = %d, %v; want 0", n, err)
	}
	h.wantPlaces("go-basics", 7, 3)
	h.wantPlaces("rust", 0, 2)
	if h.holdState(short.Answer.HoldID) != engine.HoldExpired || h.holdState(long.Answer.HoldID) != engine.HoldHeld || h.holdState(other.Answer.HoldID) != engine.HoldHeld {
		t.Fatal("ExpireHolds settled the wrong holds")
	}
	if out := h.mustSettle(engine.OperationConfirm, alice, newKey(), short.Answer.HoldID); out.Answer.Status != engine.StatusExpired {
		t.Fatalf("confirm of a cleaned-up hold = %q", out.Answer.Status)
	}
	// Many expired holds are cleaned in bounded steps, all of them.
	for i := range 150 {
		if _, err := h.hold(engine.Principal{Actor: fmt.Sprintf("user%d", i%5)}, newKey(), "rust", 1, 30); err != nil {
			t.Fatal(err)
		}
	}
	h.wantPlaces("rust", 0, 2+8) // Only 8 places were left for 150 requests of one.
	h.advance(30 * time.Second)
	h.wantPlaces("rust", 0, 2)
	total := 0
	for {
		n, more, err := h.eng.ExpireHolds(h.ctx, 3)
		if err != nil {
			t.Fatal(err)
		}
		total += n
		if !more {
			break
		}
	}
	if total != 8 {
		t.Fatalf("ExpireHolds cleaned %d holds in total, want 8", total)
	}
	h.wantPlaces("rust", 0, 2)
}

// testHoldReplayAfterCapacityChange shows that stored hold answers, held
// and unavailable, are replayed as they were whatever the capacity does.
func testHoldReplayAfterCapacityChange(t *testing.T, h *harness) {
	h.workshop("go-basics", 2, 2)
	heldKey, fullKey := newKey(), newKey()
	held, err := h.hold(alice, heldKey, "go-basics", 2, ttl)
	if err != nil || held.Answer.Status != engine.StatusHeld {
		t.Fatal(held, err)
	}
	full, err := h.hold(bob, fullKey, "go-basics", 2, ttl)
	want := `{"status":"unavailable","workshop":"go-basics","quantity":2}`
	if err != nil || full.Answer.Status != engine.StatusUnavailable || string(full.Answer.JSON()) != want {
		t.Fatalf("hold of a full workshop = %+v %s, %v", full, full.Answer.JSON(), err)
	}
	if _, _, err := h.eng.PutWorkshop(h.ctx, "go-basics", engine.WorkshopSpec{Capacity: 10}, nil); err != nil {
		t.Fatal(err)
	}
	if again, err := h.hold(bob, fullKey, "go-basics", 2, ttl); err != nil || !again.Replayed || string(again.Answer.JSON()) != want {
		t.Fatalf("unavailable hold after a capacity raise = %+v, %v", again, err)
	}
	if again, err := h.hold(alice, heldKey, "go-basics", 2, ttl); err != nil || !again.Replayed || !bytes.Equal(again.Answer.JSON(), held.Answer.JSON()) {
		t.Fatalf("held replay after a capacity raise = %+v, %v", again, err)
	}
	h.wantPlaces("go-basics", 0, 2)
}

func testHoldConflictsAndVisibility(t *testing.T, h *harness) {
	h.workshop("go-basics", 5, 3)
	key := newKey()
	id := func() string {
		out, err := h.hold(alice, key, "go-basics", 1, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return out.Answer.HoldID
	}()
	// The ttl is part of the hold's payload.
	_, err := h.hold(alice, key, "go-basics", 1, ttl+1)
	wantCode(t, err, engine.CodeOperationConflict)
	// A key is for one kind of operation only.
	_, err = h.reserve("alice", key, "go-basics", 1)
	wantCode(t, err, engine.CodeOperationConflict)
	_, err = h.eng.Confirm(h.ctx, alice, key, id)
	wantCode(t, err, engine.CodeOperationConflict)
	ckey := newKey()
	h.mustSettle(engine.OperationConfirm, alice, ckey, id)
	_, err = h.eng.Release(h.ctx, alice, ckey, id)
	wantCode(t, err, engine.CodeOperationConflict)
	other := h.mustHold(alice, "go-basics", 1).Answer.HoldID
	_, err = h.eng.Confirm(h.ctx, alice, ckey, other)
	wantCode(t, err, engine.CodeOperationConflict)
	// Another actor's hold does not exist for bob, not even for an admin's
	// confirmation; an admin may read it.
	before, beforeRec := h.counts()
	_, err = h.eng.Confirm(h.ctx, bob, newKey(), other)
	wantCode(t, err, engine.CodeUnknownHold)
	_, err = h.eng.Release(h.ctx, ops, newKey(), other)
	wantCode(t, err, engine.CodeUnknownHold)
	_, err = h.eng.HoldOf(h.ctx, bob, other)
	wantCode(t, err, engine.CodeUnknownHold)
	if _, err := h.eng.HoldOf(h.ctx, ops, other); err != nil {
		t.Fatalf("admin HoldOf: %v", err)
	}
	for _, bad := range []string{"", "nothex", fmt.Sprintf("%032x", 999)} {
		_, err = h.eng.Confirm(h.ctx, alice, newKey(), bad)
		wantCode(t, err, engine.CodeUnknownHold)
	}
	// Refused requests store nothing.
	for _, req := range []engine.HoldRequest{
		{Workshop: "go-basics", Quantity: 1, TTLSeconds: 29},
		{Workshop: "go-basics", Quantity: 1, TTLSeconds: 86401},
		{Workshop: "go-basics", Quantity: 0, TTLSeconds: 60},
		{Workshop: "go-basics", Quantity: 4, TTLSeconds: 60},
		{Workshop: "nope", Quantity: 1, TTLSeconds: 60},
	} {
		if _, err := h.eng.Hold(h.ctx, "alice", newKey(), req); err == nil {
			t.Fatalf("Hold(%+v) succeeded", req)
		}
	}
	if after, afterRec := h.counts(); after != before || afterRec != beforeRec {
		t.Fatalf("refusals stored something: %d/%d reservations/receipts, before %d/%d", after, afterRec, before, beforeRec)
	}
	h.wantPlaces("go-basics", 1, 1)
}

// testConcurrentConfirms confirms one hold from 64 goroutines under 64
// keys: exactly one reservation, the rest stored as already confirmed.
func testConcurrentConfirms(t *testing.T, h *harness) {
	h.workshop("go-basics", 3, 3)
	id := h.mustHold(alice, "go-basics", 3).Answer.HoldID
	outs, errs := make([]engine.Outcome, 64), make([]error, 64)
	concurrently(64, func(i int) { outs[i], errs[i] = h.eng.Confirm(h.ctx, alice, newKey(), id) })
	for i, err := range errs {
		if err != nil {
			t.Fatalf("goroutine %d: %v", i, err)
		}
	}
	if got := statusCounts(outs); got[engine.StatusReserved] != 1 || got[engine.StatusAlreadyConfirmed] != 63 {
		t.Fatalf("statuses = %v, want 1 reserved and 63 already_confirmed", got)
	}
	h.wantPlaces("go-basics", 3, 0)
	if res, rec := h.counts(); res != 1 || rec != 65 {
		t.Fatalf("%d reservations and %d receipts, want 1 and 65", res, rec)
	}
}

// testConfirmReleaseRace confirms and releases each of many holds at once:
// each hold ends exactly one way, and the answers say which.
func testConfirmReleaseRace(t *testing.T, h *harness) {
	h.workshop("go-basics", 40, 1)
	ids := make([]string, 20)
	for i := range ids {
		ids[i] = h.mustHold(alice, "go-basics", 1).Answer.HoldID
	}
	outs, errs := make([]engine.Outcome, 2*len(ids)), make([]error, 2*len(ids))
	concurrently(len(outs), func(i int) {
		if i%2 == 0 {
			outs[i], errs[i] = h.eng.Confirm(h.ctx, alice, newKey(), ids[i/2])
		} else {
			outs[i], errs[i] = h.eng.Release(h.ctx, alice, newKey(), ids[i/2])
		}
	})
	confirmed := 0
	for i, id := range ids {
		c, r := outs[2*i], outs[2*i+1]
		if errs[2*i] != nil || errs[2*i+1] != nil {
			t.Fatalf("hold %s: %v, %v", id, errs[2*i], errs[2*i+1])
		}
		switch {
		case c.Answer.Status == engine.StatusReserved && r.Answer.Status == engine.StatusAlreadyConfirmed:
			confirmed++
			if h.holdState(id) != engine.HoldConfirmed {
				t.Fatalf("hold %s answered confirmed but reads %s", id, h.holdState(id))
			}
		case c.Answer.Status == engine.StatusReleased && r.Answer.Status == engine.StatusReleased:
			if h.holdState(id) != engine.HoldReleased {
				t.Fatalf("hold %s answered released but reads %s", id, h.holdState(id))
			}
		default:
			t.Fatalf("hold %s: confirm %q, release %q", id, c.Answer.Status, r.Answer.Status)
		}
	}
	h.wantPlaces("go-basics", confirmed, 0)
}

// testHoldTombstones expires the receipts of holds and their
// settlements: late retries are refused as expired, other payloads under
// the keys conflict.
func testHoldTombstones(t *testing.T, h *harness) {
	h.workshop("go-basics", 5, 3)
	hkey, ckey := newKey(), newKey()
	out, err := h.hold(alice, hkey, "go-basics", 2, ttl)
	if err != nil {
		t.Fatal(err)
	}
	h.mustSettle(engine.OperationConfirm, alice, ckey, out.Answer.HoldID)
	h.advance(48 * time.Hour)
	for {
		n, err := h.eng.ExpireReceipts(h.ctx, 24*time.Hour, 10)
		if err != nil {
			t.Fatal(err)
		}
		if n < 10 {
			break
		}
	}
	_, err = h.hold(alice, hkey, "go-basics", 2, ttl)
	wantCode(t, err, engine.CodeOperationExpired)
	_, err = h.hold(alice, hkey, "go-basics", 1, ttl)
	wantCode(t, err, engine.CodeOperationConflict)
	_, err = h.eng.Confirm(h.ctx, alice, ckey, out.Answer.HoldID)
	wantCode(t, err, engine.CodeOperationExpired)
	_, err = h.eng.Release(h.ctx, alice, ckey, out.Answer.HoldID)
	wantCode(t, err, engine.CodeOperationConflict)
}

// testCheckFindsBrokenHolds breaks the hold invariants one at a time,
// writing the store directly, and expects Check to name each.
func testCheckFindsBrokenHolds(t *testing.T, h *harness) {
	h.workshop("go-basics", 5, 5)
	id := h.mustHold(alice, "go-basics", 2).Answer.HoldID
	h.mustCheckClean()
	put := func(fn func(tx engine.Tx) error) {
		t.Helper()
		if err := h.store.Update(h.ctx, fn); err != nil {
			t.Fatal(err)
		}
	}
	// A hold no answer made, and a holding counter that forgot it.
	put(func(tx engine.Tx) error {
		return tx.PutHold(engine.Hold{ID: fmt.Sprintf("%032x", 777), Actor: "bob", OperationKey: newKey(), Workshop: "go-basics",
			Quantity: 1, State: engine.HoldHeld, CreatedAt: Now, ExpiresAt: Now.Add(time.Hour)})
	})
	// A confirmed hold without its reservation.
	put(func(tx engine.Tx) error {
		hd, _, err := tx.Hold(id)
		if err != nil {
			return err
		}
		hd.State, hd.ReservationID = engine.HoldConfirmed, fmt.Sprintf("%032x", 888)
		return tx.PutHold(hd)
	})
	findings, err := engine.CheckAt(h.ctx, h.store, Now)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, f := range findings {
		kinds = append(kinds, f.Kind)
	}
	want := map[string]bool{engine.FindingCounter: false, engine.FindingHold: false}
	for _, k := range kinds {
		if _, ok := want[k]; ok {
			want[k] = true
		}
	}
	for k, found := range want {
		if !found {
			t.Errorf("Check found %v, not %s", findings, k)
		}
	}
}
