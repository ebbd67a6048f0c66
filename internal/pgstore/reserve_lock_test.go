package pgstore_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/pgstore"
)

func TestReserveAfterWorkshopLockWait(t *testing.T) {
	s := mustOpen(t, pgstore.Options{MaxConns: 6})
	ctx := t.Context()
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var later atomic.Int64
	clock := func() time.Time { return start.Add(time.Duration(later.Load())) }
	eng := engine.New(s, engine.WithClock(clock))
	if _, _, err := eng.PutWorkshop(ctx, "go-basics", engine.WorkshopSpec{Capacity: 1, MaxQuantity: 1, Title: "Go"}, nil); err != nil {
		t.Fatal(err)
	}
	held, err := eng.Hold(ctx, "alice", "3f1c2d4e-5a6b-4c7d-8e9f-0a1b2c3d4e5f", engine.HoldRequest{Workshop: "go-basics", Quantity: 1, TTLSeconds: 600})
	if err != nil || held.Answer.Status != engine.StatusHeld {
		t.Fatalf("hold = %+v, %v", held, err)
	}
	later.Store(int64(600*time.Second - time.Nanosecond))
	locked, release, lockDone := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		lockDone <- s.Update(context.WithoutCancel(ctx), func(tx engine.Tx) error {
			if _, _, err := tx.Workshop("go-basics"); err != nil {
				return err
			}
			select {
			case <-locked:
			default:
				close(locked)
			}
			<-release
			return nil
		})
	}()
	<-locked
	done := make(chan engine.Outcome, 1)
	go func() {
		out, err := eng.Reserve(ctx, "bob", "5b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e", engine.Request{Workshop: "go-basics", Quantity: 1})
		if err != nil {
			t.Error(err)
		}
		done <- out
	}()
	waitForRowLocks(t, s, "workshops", 1)
	later.Add(int64(time.Nanosecond)) // the hold's deadline has come
	close(release)
	<-lockDone
	out := <-done
	if out.Answer.Status != engine.StatusReserved {
		t.Errorf("reserve decided after the only hold expired = %s; want reserved", out.Answer.JSON())
	}
}
