package daemon_test

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/daemon"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/engine/memstore"
	"github.com/reserve/reserve/internal/server/servertest"
)

// movingClock is an engine clock that moves only when the test moves it.
type movingClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *movingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *movingClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestHoldJanitor runs the hold janitor against an engine whose clock the
// test moves: its first round cleans up every hold past its deadline, more
// than one ExpireHolds batch, and leaves the others; a later round cleans
// up a hold whose deadline passed after the start; it counts and logs what
// it cleaned, and it stops when its context ends.
func TestHoldJanitor(t *testing.T) {
	store := memstore.New(memstore.Options{})
	clock := &movingClock{now: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	eng := engine.New(store, engine.WithClock(clock.Now))
	ctx := context.Background()
	if _, _, err := eng.PutWorkshop(ctx, "w-1", engine.WorkshopSpec{Capacity: 5000, MaxQuantity: 5}, nil); err != nil {
		t.Fatal(err)
	}
	hold := func(ttl int) string {
		t.Helper()
		out, err := eng.Hold(ctx, "alice", engine.OperationKey(uuid.NewString()), engine.HoldRequest{Workshop: "w-1", Quantity: 1, TTLSeconds: ttl})
		if err != nil || out.Answer.Status != engine.StatusHeld {
			t.Fatalf("hold: %+v, %v", out, err)
		}
		return out.Answer.HoldID
	}
	const short = 1001 // More than one batch of the janitor.
	for range short {
		hold(engine.MinHoldTTLSeconds)
	}
	later := hold(120)
	kept := hold(3600)
	clock.Advance(time.Minute)

	logs := &servertest.LogBuffer{}
	var expired atomic.Int64
	jctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		daemon.HoldJanitor(jctx, eng, 5*time.Millisecond, func(n int) { expired.Add(int64(n)) }, slog.New(slog.NewJSONHandler(logs, nil)))
	}()
	stored := func(id string) engine.HoldState {
		var h engine.Hold
		if err := store.View(ctx, func(tx engine.Tx) (err error) { h, _, err = tx.Hold(id); return err }); err != nil {
			t.Fatal(err)
		}
		return h.State
	}
	servertest.Eventually(t, 30*time.Second, "the first round", func() bool { return expired.Load() >= short })
	if r := logs.Find("holds past their deadline cleaned up"); r == nil || r["count"] != float64(short) {
		t.Errorf("the first round logged %v, want count %d", r, short)
	}
	if s := stored(later); s != engine.HoldHeld {
		t.Fatalf("a hold before its deadline is stored %s", s)
	}
	clock.Advance(time.Minute)
	servertest.Eventually(t, 30*time.Second, "a later round", func() bool { return stored(later) == engine.HoldExpired })
	servertest.Eventually(t, 30*time.Second, "the later round's count", func() bool { return expired.Load() == short+1 })
	if s := stored(kept); s != engine.HoldHeld {
		t.Errorf("the hold of an hour is stored %s", s)
	}
	w, err := eng.Workshop(ctx, "w-1")
	if err != nil || w.Held != 1 || w.Holding != 1 {
		t.Errorf("workshop after the janitor = %+v, %v", w, err)
	}
	findings, err := engine.CheckAt(ctx, store, clock.Now())
	if err != nil || len(findings) != 0 {
		t.Errorf("check: %v, %v", findings, err)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the janitor did not stop when its context ended")
	}
}
