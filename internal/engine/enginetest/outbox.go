package enginetest

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/reserve/reserve/internal/engine"
)

// This file holds the conformance tests of the outbox of confirmation
// events.

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
	if _, err := h.eng.ReserveBatch(h.ctx, []engine.BatchItem{
		{Actor: "carol", Key: newKey(), Request: engine.Request{Workshop: "big", Quantity: 1}},
		{Actor: "dave", Key: newKey(), Request: engine.Request{Workshop: "big", Quantity: 1}},
	}); err != nil {
		t.Fatal(err)
	}
	if got := h.eventTypes(); got[engine.EventReserved] != 3 || got[engine.EventCancelled] != 1 {
		t.Fatalf("events after a batch = %v", got)
	}
}
