package pgstore_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/engine/enginetest"
	"github.com/reserve/reserve/internal/pgstore"
)

// TestGroupScansOfAWorkshopSeeEarlierDecisions decides, in one group, a
// reservation and a hold of alice and then a scan of her records in the
// workshop (what the limit per person reads): the scan sees both, though
// the group has not sent them yet when the scan's decision starts.
func TestGroupScansOfAWorkshopSeeEarlierDecisions(t *testing.T) {
	s := mustOpen(t, pgstore.Options{MaxConns: 1})
	at := enginetest.Now
	res := engine.Reservation{ID: fmt.Sprintf("%032x", 1), Actor: "alice", OperationKey: newKey(t), Workshop: "ws", Quantity: 2, CreatedAt: at}
	hold := engine.Hold{ID: fmt.Sprintf("%032x", 2), Actor: "alice", OperationKey: newKey(t), Workshop: "ws", Quantity: 1,
		State: engine.HoldHeld, CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
	var seen []string
	errs := inOneGroup(t, s,
		putWorkshop("ws", ""),
		func(tx engine.Tx) error { return tx.PutReservation(res) },
		func(tx engine.Tx) error { return tx.PutHold(hold) },
		func(tx engine.Tx) error {
			seen = nil
			from := engine.PersonPosition{Actor: "alice"}
			if err := tx.ForEachReservationIn("ws", from, func(r engine.Reservation) error { seen = append(seen, r.ID); return nil }); err != nil {
				return err
			}
			return tx.ForEachHoldIn("ws", from, func(h engine.Hold) error { seen = append(seen, h.ID); return nil })
		})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Update %d: %v", i, err)
		}
	}
	if want := []string{res.ID, hold.ID}; !slices.Equal(seen, want) {
		t.Fatalf("the scan in the group saw %v, want %v", seen, want)
	}
}
