package pgstore_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/reserve/reserve/internal/engine"
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
