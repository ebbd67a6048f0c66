package enginetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// This file holds the conformance tests of holds against the timing of
// their transactions: a decision that waits for the writer, a cleanup
// that meets a decision, races for the last places.

// gatedStore delays the next write transaction, once armed, until the test
// releases it: the wait of a transaction for the writer (a busy bbolt
// writer, a group commit, a PostgreSQL row lock or retry).
type gatedStore struct {
	engine.Store
	armed   atomic.Bool
	entered chan struct{} // Closed when the armed Update is waiting.
	release chan struct{} // Closed by the test to let it run.
}

func newGatedStore(s engine.Store) *gatedStore {
	return &gatedStore{Store: s, entered: make(chan struct{}), release: make(chan struct{})}
}

func (g *gatedStore) Update(ctx context.Context, fn func(engine.Tx) error) error {
	if g.armed.CompareAndSwap(true, false) {
		close(g.entered)
		<-g.release
	}
	return g.Store.Update(ctx, fn)
}

// gatedEngine is an engine over h's store and clock whose write
// transactions pass through g, with ids that never meet h's own.
func (h *harness) gatedEngine(g *gatedStore) *engine.Engine {
	var n atomic.Uint64
	return engine.New(g,
		engine.WithClock(h.now),
		engine.WithIDs(func(time.Time) string { return fmt.Sprintf("%016x%016x", 0xa77ac4, n.Add(1)) }),
	)
}

// testConfirmWaitingForTheWriter confirms a hold 1 ns before its deadline
// from a request whose write transaction only starts once the deadline has
// passed and another request has taken the places the expired hold no
// longer blocks. The confirmation is decided at or after the deadline, so
// it must answer "expired"; a "reserved" answer puts reserved above
// capacity.
func testConfirmWaitingForTheWriter(t *testing.T, h *harness) {
	h.workshop("go-basics", 1, 1)
	id := h.mustHold(alice, "go-basics", 1).Answer.HoldID
	g := newGatedStore(h.store)
	eng := h.gatedEngine(g)
	h.advance(ttl*time.Second - time.Nanosecond)
	g.armed.Store(true)
	type result struct {
		out engine.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := eng.Confirm(h.ctx, alice, newKey(), id)
		done <- result{out, err}
	}()
	<-g.entered
	h.advance(time.Nanosecond) // The deadline has come.
	if r := h.mustReserve("bob", newKey(), "go-basics", 1); r.Answer.Status != engine.StatusReserved {
		t.Fatalf("reserve at the deadline of the only hold = %q, want reserved", r.Answer.Status)
	}
	close(g.release)
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	w, err := h.eng.Workshop(h.ctx, "go-basics")
	if err != nil {
		t.Fatal(err)
	}
	if res.out.Answer.Status != engine.StatusExpired {
		t.Errorf("confirm whose transaction ran at %s, the hold's deadline, = %s; want expired (workshop: capacity %d, reserved %d)",
			h.now().Format(time.RFC3339Nano), res.out.Answer.JSON(), w.Capacity, w.Reserved)
	}
}

// testCheckFindsHoldsSettledOutOfTime rewrites two holds that the engine
// settled in time so that their records say otherwise: one confirmed at its
// deadline (its reservation made then too), one cleaned up a second before
// its deadline. Neither can happen when the promises hold, so Check must
// name both holds.
func testCheckFindsHoldsSettledOutOfTime(t *testing.T, h *harness) {
	h.workshop("go-basics", 5, 5)
	late := h.mustHold(alice, "go-basics", 1).Answer
	early := h.mustHold(bob, "go-basics", 1).Answer
	h.advance(ttl*time.Second - time.Nanosecond)
	resID := h.mustSettle(engine.OperationConfirm, alice, newKey(), late.HoldID).Answer.ReservationID
	h.advance(time.Nanosecond)
	if n, _, err := h.eng.ExpireHolds(h.ctx, 10); err != nil || n != 1 {
		t.Fatalf("ExpireHolds = %d, %v; want 1", n, err)
	}
	h.mustCheckClean()
	if err := h.store.Update(h.ctx, func(tx engine.Tx) error {
		c, _, err := tx.Hold(late.HoldID)
		if err != nil {
			return err
		}
		c.SettledAt = c.ExpiresAt
		r, _, err := tx.Reservation(resID)
		if err != nil {
			return err
		}
		r.CreatedAt = c.ExpiresAt
		e, _, err := tx.Hold(early.HoldID)
		if err != nil {
			return err
		}
		e.SettledAt = e.ExpiresAt.Add(-time.Second)
		return errors.Join(tx.PutHold(c), tx.PutReservation(r), tx.PutHold(e))
	}); err != nil {
		t.Fatal(err)
	}
	findings, err := engine.CheckAt(h.ctx, h.store, h.now())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{late.HoldID, early.HoldID} {
		named := false
		for _, f := range findings {
			named = named || strings.Contains(f.Detail, id)
		}
		if !named {
			t.Errorf("Check findings %v do not name hold %s, settled out of time", findings, id)
		}
	}
}

// testExpireHoldsSaysWhatIsLeft runs ExpireHolds with a limit of 2 over three
// expired holds while one of the two it found is settled by a confirmation
// between its read and its write. The janitor calls ExpireHolds until it
// says more may be left, so "no more" must mean that no expired open hold
// is left.
func testExpireHoldsSaysWhatIsLeft(t *testing.T, h *harness) {
	h.workshop("go-basics", 5, 5)
	ids := []string{
		h.mustHold(alice, "go-basics", 1).Answer.HoldID,
		h.mustHold(alice, "go-basics", 1).Answer.HoldID,
		h.mustHold(alice, "go-basics", 1).Answer.HoldID,
	}
	h.advance(ttl * time.Second)
	g := newGatedStore(h.store)
	eng := h.gatedEngine(g)
	g.armed.Store(true)
	type result struct {
		n    int
		more bool
		err  error
	}
	done := make(chan result, 1)
	go func() {
		n, more, err := eng.ExpireHolds(h.ctx, 2)
		done <- result{n, more, err}
	}()
	<-g.entered
	if out := h.mustSettle(engine.OperationConfirm, alice, newKey(), ids[0]); out.Answer.Status != engine.StatusExpired {
		t.Fatalf("confirm after the deadline = %q", out.Answer.Status)
	}
	close(g.release)
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	var left []string
	for _, id := range ids {
		hd, _, err := func() (engine.Hold, bool, error) {
			var hd engine.Hold
			var ok bool
			err := h.store.View(h.ctx, func(tx engine.Tx) error {
				var err error
				hd, ok, err = tx.Hold(id)
				return err
			})
			return hd, ok, err
		}()
		if err != nil {
			t.Fatal(err)
		}
		if hd.Open() {
			left = append(left, id)
		}
	}
	if !res.more && len(left) > 0 {
		t.Errorf("ExpireHolds(limit 2) = %d, more=false, which tells the janitor to stop, but expired holds %v are still open", res.n, left)
	}
}

// testConcurrentLastPlacesPastDeadlines races, on a workshop whose places
// are all in holds past their deadline, confirmations of those holds (all
// expired), new holds and reservations (exactly capacity of them win) and
// cleanups.
func testConcurrentLastPlacesPastDeadlines(t *testing.T, h *harness) {
	h.workshop("go-basics", 10, 1)
	ids := make([]string, 10)
	for i := range ids {
		ids[i] = h.mustHold(alice, "go-basics", 1).Answer.HoldID
	}
	h.advance(ttl * time.Second)
	const n = 50
	outs, errs := make([]engine.Outcome, n), make([]error, n)
	concurrently(n, func(i int) {
		switch {
		case i < 10:
			outs[i], errs[i] = h.eng.Confirm(h.ctx, alice, newKey(), ids[i])
		case i < 25:
			outs[i], errs[i] = h.hold(bob, newKey(), "go-basics", 1, ttl)
		case i < 45:
			outs[i], errs[i] = h.reserve("carol", newKey(), "go-basics", 1)
		default:
			_, _, errs[i] = h.eng.ExpireHolds(h.ctx, 64)
		}
	})
	won := 0
	for i, err := range errs {
		if err != nil {
			t.Fatalf("goroutine %d: %v", i, err)
		}
		switch s := outs[i].Answer.Status; {
		case i < 10 && s != engine.StatusExpired:
			t.Errorf("confirm of a hold past its deadline = %q", s)
		case s == engine.StatusHeld || s == engine.StatusReserved:
			won++
		}
	}
	if won != 10 {
		t.Errorf("%d holds and reservations won 10 places", won)
	}
}
