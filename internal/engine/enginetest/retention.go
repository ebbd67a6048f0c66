package enginetest

import (
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// This file holds the conformance tests of key retention: receipts older
// than the retention period become tombstones.

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
