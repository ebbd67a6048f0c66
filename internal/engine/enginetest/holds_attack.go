package enginetest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// This file holds attacks on the promises of holds: cases built to break
// them at the engine and store level.

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
