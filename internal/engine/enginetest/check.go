package enginetest

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

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
