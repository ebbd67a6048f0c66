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

// TestGroupScansOfDeliveriesSeeEarlierDecisions decides, in one group, an
// event, a due delivery, a scan of both, the event's routing and a scan
// after it: the scans see the earlier decisions' writes, which the group
// has not sent when they start, beside an event and a delivery stored
// before; and a decision that looks up the events of the deliveries it
// found, the one stored before too, decides once.
func TestGroupScansOfDeliveriesSeeEarlierDecisions(t *testing.T) {
	s := mustOpen(t, pgstore.Options{MaxConns: 1})
	at := enginetest.Now
	ev := engine.Event{ID: fmt.Sprintf("%032x", 1), Type: engine.EventReserved, ReservationID: fmt.Sprintf("%032x", 2), Actor: "alice",
		OperationKey: newKey(t), CreatedAt: at, Owner: "alice", Workshop: "ws", Quantity: 1}
	d := engine.Delivery{ID: engine.DeliveryIDOf(ev.ID, "mail"), EventID: ev.ID, EventType: ev.Type, Channel: engine.ChannelMail,
		Recipient: "alice@example.org", State: engine.DeliveryPending, CreatedAt: at, Since: at, NextAttemptAt: at}
	old, oldDelivery := ev, d
	old.ID = fmt.Sprintf("%032x", 0)
	oldDelivery.ID, oldDelivery.EventID = engine.DeliveryIDOf(old.ID, "mail"), old.ID
	err := s.Update(t.Context(), func(tx engine.Tx) error {
		if err := tx.AddEvent(old); err != nil {
			return err
		}
		if err := tx.MarkEventRouted(old.ID); err != nil {
			return err
		}
		return tx.PutDelivery(oldDelivery)
	})
	if err != nil {
		t.Fatal(err)
	}
	scan := func(seen *[]string) func(engine.Tx) error {
		return func(tx engine.Tx) error {
			*seen = nil
			if err := tx.ForEachUnroutedEvent(func(e engine.Event) error { *seen = append(*seen, e.ID); return nil }); err != nil {
				return err
			}
			return tx.ForEachDueDelivery(at, func(d engine.Delivery) error {
				*seen = append(*seen, d.ID)
				if e, ok, err := tx.Event(d.EventID); err != nil || !ok || e.Owner != "alice" {
					return fmt.Errorf("event %s of delivery %s: %+v, found %t, %v", d.EventID, d.ID, e, ok, err)
				}
				return nil
			})
		}
	}
	var before, after []string
	runs := 0
	errs := inOneGroup(t, s,
		func(tx engine.Tx) error { return tx.AddEvent(ev) },
		func(tx engine.Tx) error { return tx.PutDelivery(d) },
		func(tx engine.Tx) error { runs++; return scan(&before)(tx) },
		func(tx engine.Tx) error { return tx.MarkEventRouted(ev.ID) },
		scan(&after),
	)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Update %d: %v", i, err)
		}
	}
	if want := []string{ev.ID, oldDelivery.ID, d.ID}; !slices.Equal(before, want) {
		t.Errorf("the scan before the routing saw %v, want %v", before, want)
	}
	if want := []string{oldDelivery.ID, d.ID}; !slices.Equal(after, want) {
		t.Errorf("the scan after the routing saw %v, want %v", after, want)
	}
	// Probed, then decided.
	if runs != 2 {
		t.Errorf("the scanning decision ran %d times, want 2", runs)
	}
}
