package pgstore_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/engine/enginetest"
	"github.com/reserve/reserve/internal/pgstore"
)

// TestGroupFailedDecisionIsInvisibleToTheNext decides, in one group, a
// function that overwrites a workshop it did not read, then scans (which
// sends that write to the server) and then fails, followed by a decision
// that reads the workshop only after another read (so the group did not
// read it ahead) and updates it. The failed function stores nothing: the
// next decision sees the workshop as it was, and what commits is built on
// that, not on the failed function's write.
func TestGroupFailedDecisionIsInvisibleToTheNext(t *testing.T) {
	s := mustOpen(t, pgstore.Options{MaxConns: 1})
	if err := s.Update(t.Context(), func(tx engine.Tx) error {
		if err := putWorkshop("gate", "")(tx); err != nil {
			return err
		}
		return putWorkshop("ws", "original")(tx)
	}); err != nil {
		t.Fatal(err)
	}
	refused := errors.New("refused by the function")
	saw := ""
	errs := inOneGroup(t, s,
		func(tx engine.Tx) error {
			if err := putWorkshop("ws", "written by a failed decision")(tx); err != nil {
				return err
			}
			if err := tx.ForEachWorkshop(func(engine.Workshop) error { return nil }); err != nil {
				return err
			}
			return refused
		},
		func(tx engine.Tx) error {
			if _, ok, err := tx.Workshop("gate"); err != nil || !ok {
				return err // The group's first run, which finds nothing.
			}
			w, ok, err := tx.Workshop("ws")
			if err != nil || !ok {
				return fmt.Errorf("workshop ws: found %v, %v", ok, err)
			}
			saw = w.Title
			w.Version++
			return tx.PutWorkshop(w)
		},
	)
	if !errors.Is(errs[0], refused) {
		t.Errorf("the failing function's Update = %v, want its error", errs[0])
	}
	if errs[1] != nil {
		t.Errorf("the next Update: %v", errs[1])
	}
	if saw != "original" {
		t.Errorf("the next decision saw workshop ws titled %q, want %q: it saw the write of a failed decision", saw, "original")
	}
	if got := workshopIDs(t, s)["ws"]; got.Title != "original" || got.Version != 2 {
		t.Fatalf("stored workshop ws %+v, want title %q at version 2", got, "original")
	}
}

// TestGroupMarkDeliveredKeepsTheFirstTime marks one event delivered twice,
// at two times, by two decisions of one group that each read the event
// first, as the engine's MarkDelivered does: the second finds it delivered
// and leaves it, so the first time stays.
func TestGroupMarkDeliveredKeepsTheFirstTime(t *testing.T) {
	s := mustOpen(t, pgstore.Options{MaxConns: 1})
	ev := engine.Event{ID: "ev-1", Type: engine.EventReserved, ReservationID: "r-1", Actor: "alice",
		OperationKey: "f47ac10b-58cc-4372-a567-0e02b2c3d479", CreatedAt: enginetest.Now}
	if err := s.Update(t.Context(), func(tx engine.Tx) error { return tx.AddEvent(ev) }); err != nil {
		t.Fatal(err)
	}
	first, second := enginetest.Now.Add(time.Minute), enginetest.Now.Add(2*time.Minute)
	mark := func(at time.Time) func(engine.Tx) error {
		return func(tx engine.Tx) error {
			e, ok, err := tx.Event(ev.ID)
			if err != nil || !ok || e.Delivered() {
				return err
			}
			return tx.MarkEventDelivered(ev.ID, at)
		}
	}
	for i, err := range inOneGroup(t, s, mark(first), mark(second)) {
		if err != nil {
			t.Errorf("Update %d: %v", i, err)
		}
	}
	var got engine.Event
	if err := s.View(t.Context(), func(tx engine.Tx) error {
		var err error
		got, _, err = tx.Event(ev.ID)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if !got.DeliveredAt.Equal(first) {
		t.Fatalf("event delivered at %v, want the first time %v", got.DeliveredAt, first)
	}
}

// TestGroupPanicAfterAScanStoresNothing decides, in one group, a function
// that writes, scans (which sends its write) and then panics, between two
// that succeed: the panic is that Update's error, its write is not stored,
// and the decisions around it commit.
func TestGroupPanicAfterAScanStoresNothing(t *testing.T) {
	s := mustOpen(t, pgstore.Options{MaxConns: 1})
	errs := inOneGroup(t, s,
		putWorkshop("before", ""),
		func(tx engine.Tx) error {
			if err := putWorkshop("panics", "")(tx); err != nil {
				return err
			}
			if err := tx.ForEachWorkshop(func(engine.Workshop) error { return nil }); err != nil {
				return err
			}
			panic("a bug in the function")
		},
		func(tx engine.Tx) error {
			if _, ok, err := tx.Workshop("before"); err != nil || !ok {
				return err // The group's first run, which finds nothing.
			}
			// Read from the server: the group did not read it ahead.
			if _, ok, err := tx.Workshop("panics"); err != nil || ok {
				return fmt.Errorf("workshop panics of a failed decision: found %v, %v", ok, err)
			}
			return putWorkshop("after", "")(tx)
		},
	)
	if errs[0] != nil || errs[2] != nil {
		t.Errorf("the succeeding Updates: %v, %v", errs[0], errs[2])
	}
	if errs[1] == nil || !strings.Contains(errs[1].Error(), "panic") {
		t.Errorf("the panicking Update = %v, want the panic as its error", errs[1])
	}
	if got := workshopIDs(t, s); len(got) != 2 || got["before"].ID == "" || got["after"].ID == "" {
		t.Fatalf("stored workshops %v, want before and after", got)
	}
}
