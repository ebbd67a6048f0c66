package boltstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/reserve/reserve/internal/engine"
)

// TestPlacesCostNoHistory: reading the places of an actor with 3,000
// cancelled reservations, 3,000 settled holds and 3,000 entries that left
// the waiting list of a workshop, beside one open hold and one active
// reservation, allocates about as much as for an actor with only the
// latter two: the store reads the counts it keeps, not the history.
// Counted are allocations, not time.
func TestPlacesCostNoHistory(t *testing.T) {
	ctx := context.Background()
	s := mustOpenPath(t, filepath.Join(t.TempDir(), "places.db"))
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	const history = 3000
	err := s.Update(ctx, func(tx engine.Tx) error {
		id := 0
		next := func() string { id++; return fmt.Sprintf("%032x", id) }
		for _, actor := range []string{"busy", "fresh"} {
			n := 0
			if actor == "busy" {
				n = history
			}
			for range n {
				r := engine.Reservation{ID: next(), Workshop: "clay", Actor: actor, OperationKey: v7Key(t), Quantity: 1, CreatedAt: now,
					CancelledAt: now, CancelledBy: actor, CancelOperation: v7Key(t)}
				h := engine.Hold{ID: next(), Workshop: "clay", Actor: actor, OperationKey: v7Key(t), Quantity: 1, State: engine.HoldReleased,
					CreatedAt: now, ExpiresAt: now.Add(time.Hour), SettledAt: now}
				e := engine.WaitEntry{ID: next(), Workshop: "clay", Actor: actor, OperationKey: v7Key(t), Quantity: 1, State: engine.WaitLeft,
					CreatedAt: now, SettledAt: now}
				if err := tx.PutReservation(r); err != nil {
					return err
				}
				if err := tx.PutHold(h); err != nil {
					return err
				}
				if err := tx.PutWaitEntry(e); err != nil {
					return err
				}
			}
			if err := tx.PutReservation(engine.Reservation{ID: next(), Workshop: "clay", Actor: actor, OperationKey: v7Key(t), Quantity: 2, CreatedAt: now}); err != nil {
				return err
			}
			if err := tx.PutHold(engine.Hold{ID: next(), Workshop: "clay", Actor: actor, OperationKey: v7Key(t), Quantity: 1, State: engine.HoldHeld,
				CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	allocs := map[string]float64{}
	for _, actor := range []string{"busy", "fresh"} {
		err := s.View(ctx, func(tx engine.Tx) error {
			var got engine.Places
			var err error
			allocs[actor] = testing.AllocsPerRun(20, func() {
				if got, err = tx.PlacesOf("clay", actor, now); err != nil {
					t.Fatal(err)
				}
			})
			if want := (engine.Places{Reserved: 2, Held: 1}); got != want {
				t.Errorf("the places of %s = %+v, want %+v", actor, got, want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if allocs["busy"] > 2*allocs["fresh"]+5 {
		t.Errorf("reading the places of an actor with a history of %d of each record allocates %.0f times, against %.0f without: it reads the history",
			history, allocs["busy"], allocs["fresh"])
	}
}

// TestCheckFindsBrokenPlaces: a count of places or an open hold listed by
// person that the records do not bear out is reported by the store's
// check, and so is one missing.
func TestCheckFindsBrokenPlaces(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "places.db")
	s := mustOpenPath(t, path)
	eng := engine.New(s)
	if _, _, err := eng.PutWorkshop(ctx, "clay", engine.WorkshopSpec{Capacity: 10, MaxQuantity: 2, Schedule: engine.Schedule{MaxPerPerson: 3}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Reserve(ctx, "erin", v7Key(t), engine.Request{Workshop: "clay", Quantity: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Hold(ctx, "erin", v7Key(t), engine.HoldRequest{Workshop: "clay", Quantity: 1, TTLSeconds: 600}); err != nil {
		t.Fatal(err)
	}
	checkClean(t, s, "before")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		places, open := tx.Bucket([]byte("places_by_person")), tx.Bucket([]byte("holds_open_by_person"))
		if err := places.Put([]byte("clay\x00erin"), []byte{1, 1, 0}); err != nil {
			return err
		}
		if err := places.Put([]byte("clay\x00nobody"), []byte{1, 0, 1}); err != nil {
			return err
		}
		k, _ := open.Cursor().First()
		if k == nil {
			return fmt.Errorf("no open hold listed")
		}
		if err := open.Delete(k); err != nil {
			return err
		}
		return open.Put([]byte("clay\x00erin\x00"+strings.Repeat("0", 32)), nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	s = mustOpenPath(t, path)
	findings, err := s.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var details []string
	for _, f := range findings {
		if f.Kind == engine.FindingPlaces {
			details = append(details, f.Detail)
		}
	}
	got := strings.Join(details, "\n")
	for _, want := range []string{
		`counts 1 reserved and 0 waiting, but the records add up to 2 and 0`,
		`"clay\x00nobody" counts 0 reserved and 1 waiting, but the records have no places there`,
		`holds_open_by_person lacks the open hold`,
		`which is not an open hold of that workshop and actor`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("check findings %q lack %q", got, want)
		}
	}
	// The engine's check sees the wrong count through the store's answer.
	findings, err = engine.Check(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) == 0 || findings[0].Kind != engine.FindingPlaces {
		t.Errorf("engine check = %v, want the places of erin", findings)
	}
}
