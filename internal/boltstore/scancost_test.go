package boltstore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
)

// TestScansStopEarly: a scan of an actor's reservations, holds or waiting
// list entries, of a workshop's open holds past their deadline, queue or
// waiting list entries, of the deliveries in a state or of those due,
// that its function stops after one record allocates
// about as much for a record kind with 5,000 records in its range as with
// 5: it reads the index in chunks, not the whole range before the first
// record. Counted are allocations, not time.
func TestScansStopEarly(t *testing.T) {
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "reserved.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	eng := engine.New(s, engine.WithClock(func() time.Time { return now }))
	const many, few = 5000, 5
	if _, _, err := eng.PutWorkshop(ctx, "sale", engine.WorkshopSpec{Capacity: 2 * (many + few), MaxQuantity: 1}, nil); err != nil {
		t.Fatal(err)
	}
	var items []engine.BatchItem
	for actor, n := range map[string]int{"many": many, "few": few} {
		for range n {
			items = append(items, engine.BatchItem{Actor: actor, Key: engine.OperationKey(uuid.NewString()), Request: engine.Request{Workshop: "sale", Quantity: 1}})
		}
	}
	if _, err := eng.ReserveBatch(ctx, items); err != nil {
		t.Fatal(err)
	}
	// Holds of both actors, open, each actor's in a workshop of its name
	// (for the scan of the open holds past their deadline), stored directly: the scans do not
	// care that nothing else names them.
	err = s.Update(ctx, func(tx engine.Tx) error {
		i := 0
		for actor, n := range map[string]int{"many": many, "few": few} {
			for range n {
				i++
				h := engine.Hold{ID: fmt.Sprintf("%032x", i), Actor: actor, OperationKey: engine.OperationKey(uuid.NewString()),
					Workshop: actor, Quantity: 1, State: engine.HoldHeld, CreatedAt: now, ExpiresAt: now.Add(time.Duration(i) * time.Second)}
				if err := tx.PutHold(h); err != nil {
					return err
				}
			}
		}
		// Deliveries: many delivered and few failed, and as many pending,
		// due one a second.
		for i := range many + few {
			state := engine.DeliveryDelivered
			if i >= many {
				state = engine.DeliveryFailed
			}
			for _, d := range []engine.Delivery{
				{ID: fmt.Sprintf("%032x-done", i), EventID: fmt.Sprintf("%032x", i), State: state, CreatedAt: now},
				{ID: fmt.Sprintf("%032x-due", i), EventID: fmt.Sprintf("%032x", i), State: engine.DeliveryPending, CreatedAt: now,
					NextAttemptAt: now.Add(time.Duration(i) * time.Second)},
			} {
				if err := tx.PutDelivery(d); err != nil {
					return err
				}
			}
		}
		// Waiting list entries of both actors, each actor's in a workshop
		// of its name, all waiting.
		for actor, n := range map[string]int{"many": many, "few": few} {
			for range n {
				i++
				e := engine.WaitEntry{ID: fmt.Sprintf("%032x", i), Actor: actor, OperationKey: engine.OperationKey(uuid.NewString()),
					Workshop: actor, Quantity: 1, State: engine.WaitWaiting, CreatedAt: now}
				if err := tx.PutWaitEntry(e); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	first := func(error) error { return stop }
	scans := map[string]func(tx engine.Tx, actor string) error{
		"reservations of": func(tx engine.Tx, actor string) error {
			return tx.ForEachReservationOf(actor, "", func(engine.Reservation) error { return first(nil) })
		},
		"holds of": func(tx engine.Tx, actor string) error {
			return tx.ForEachHoldOf(actor, "", func(engine.Hold) error { return first(nil) })
		},
		"open holds past their deadline of": func(tx engine.Tx, actor string) error {
			return tx.ForEachOpenHold(actor, now.Add(24*time.Hour), func(engine.Hold) error { return first(nil) })
		},
		"waiting list entries of": func(tx engine.Tx, actor string) error {
			return tx.ForEachWaitEntryOf(actor, "", func(engine.WaitEntry) error { return first(nil) })
		},
		"queue of the workshop of": func(tx engine.Tx, actor string) error {
			return tx.ForEachWaitingEntry(actor, func(engine.WaitEntry) error { return first(nil) })
		},
		"waiting list entries of the workshop of": func(tx engine.Tx, actor string) error {
			return tx.ForEachWaitEntryIn(actor, "", func(engine.WaitEntry) error { return first(nil) })
		},
		"deliveries in the state of": func(tx engine.Tx, actor string) error {
			state := map[string]engine.DeliveryState{"many": engine.DeliveryDelivered, "few": engine.DeliveryFailed}[actor]
			return tx.ForEachDeliveryIn(state, "", func(engine.Delivery) error { return first(nil) })
		},
		"deliveries due by the time of": func(tx engine.Tx, actor string) error {
			through := map[string]time.Time{"many": now.Add(24 * time.Hour), "few": now.Add(few * time.Second)}[actor]
			return tx.ForEachDueDelivery(through, func(engine.Delivery) error { return first(nil) })
		},
	}
	for name, scan := range scans {
		allocs := map[string]float64{}
		err := s.View(ctx, func(tx engine.Tx) error {
			for _, actor := range []string{"many", "few"} {
				var err error
				allocs[actor] = testing.AllocsPerRun(5, func() { err = scan(tx, actor) })
				if !errors.Is(err, stop) {
					return fmt.Errorf("%s %s: %v, want the function's error", name, actor, err)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if allocs["many"] > 2*allocs["few"]+20 {
			t.Errorf("a scan of the %s %q (%d records), stopped after one, allocates %.0f times, against %.0f for %q (%d records)",
				name, "many", many, allocs["many"], allocs["few"], "few", few)
		}
	}
}
