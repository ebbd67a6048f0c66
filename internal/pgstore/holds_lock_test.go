package pgstore_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/pgstore"
	"github.com/reserve/reserve/internal/pgstore/pgtest"
)

// TestConfirmAfterRowLockWait confirms a hold 1 ns before its
// deadline while another daemon's transaction holds the hold's row lock, with real
// PostgreSQL locks only. The confirmation reads its clock, then waits for
// the lock; meanwhile the deadline passes and a reservation takes the
// place the expired hold no longer blocks. When the lock is free the
// confirmation must answer "expired": its decision comes after that
// reservation's. Answering "reserved" puts reserved above capacity.
func TestConfirmAfterRowLockWait(t *testing.T) {
	t.Run("three daemons", func(t *testing.T) {
		// One holds the lock, one confirms, one reserves.
		dsn, _ := pgtest.FreshSchema(t)
		confirmAfterRowLockWait(t,
			mustOpenDSN(t, dsn, pgstore.Options{MaxConns: 2}),
			mustOpenDSN(t, dsn, pgstore.Options{MaxConns: 2}),
			mustOpenDSN(t, dsn, pgstore.Options{MaxConns: 2}))
	})
	t.Run("one daemon", func(t *testing.T) {
		// The three transactions of one store: the confirmation's group
		// waits for the lock, the reservation queued behind it runs alone
		// once no write transaction of the store has ended for a while.
		s := mustOpen(t, pgstore.Options{MaxConns: 6})
		confirmAfterRowLockWait(t, s, s, s)
	})
}

// confirmAfterRowLockWait is TestConfirmAfterRowLockWait with the lock
// held through locker, the hold confirmed through s and the reservation
// made through other.
func confirmAfterRowLockWait(t *testing.T, locker, s, other *pgstore.Store) {
	ctx := t.Context()
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var later atomic.Int64
	clock := func() time.Time { return start.Add(time.Duration(later.Load())) }
	eng := engine.New(s, engine.WithClock(clock))
	otherEng := engine.New(other, engine.WithClock(clock))
	alice := engine.Principal{Actor: "alice"}

	if _, _, err := eng.PutWorkshop(ctx, "go-basics", engine.WorkshopSpec{Capacity: 1, MaxQuantity: 1, Title: "Go"}, nil); err != nil {
		t.Fatal(err)
	}
	held, err := eng.Hold(ctx, "alice", "3f1c2d4e-5a6b-4c7d-8e9f-0a1b2c3d4e5f", engine.HoldRequest{Workshop: "go-basics", Quantity: 1, TTLSeconds: 600})
	if err != nil || held.Answer.Status != engine.StatusHeld {
		t.Fatalf("hold = %+v, %v", held, err)
	}
	id := held.Answer.HoldID
	later.Store(int64(600*time.Second - time.Nanosecond))

	// Another transaction holds the hold's row lock (as a concurrent
	// release, confirmation or cleanup of it does) until released.
	locked, release, lockDone := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	unlock := sync.OnceFunc(func() { close(release) })
	defer unlock() // So that a failed test lets its stores close.
	go func() {
		lockDone <- locker.Update(context.WithoutCancel(ctx), func(tx engine.Tx) error {
			if _, _, err := tx.Hold(id); err != nil {
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

	type result struct {
		out engine.Outcome
		err error
	}
	confirmed := make(chan result, 1)
	go func() {
		out, err := eng.Confirm(ctx, alice, "4a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d", id)
		confirmed <- result{out, err}
	}()
	// Wait until the confirmation waits for the hold's row lock.
	waitForRowLock(t, s, "holds")
	later.Add(int64(time.Nanosecond)) // The deadline has come.
	// Bounded, so that a reservation that waits behind the confirmation
	// for good fails the test instead of hanging it.
	reserveCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r, err := otherEng.Reserve(reserveCtx, "bob", "5b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e", engine.Request{Workshop: "go-basics", Quantity: 1})
	if err != nil || r.Answer.Status != engine.StatusReserved {
		t.Fatalf("reserve at the deadline of the only hold = %+v, %v; want reserved", r, err)
	}
	unlock()
	if err := <-lockDone; err != nil {
		t.Fatal(err)
	}
	res := <-confirmed
	if res.err != nil {
		t.Fatal(res.err)
	}
	w, err := eng.Workshop(ctx, "go-basics")
	if err != nil {
		t.Fatal(err)
	}
	if res.out.Answer.Status != engine.StatusExpired {
		t.Errorf("confirm decided after a reservation made at the deadline = %s; want expired (capacity %d, reserved %d)",
			res.out.Answer.JSON(), w.Capacity, w.Reserved)
	}
	findings, err := engine.CheckAt(ctx, s, clock())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		t.Errorf("Check finding: %s", f)
	}
}

// waitForRowLock polls, with a deadline, until a statement of s waits for
// a row lock that a SELECT … FROM table … FOR UPDATE asked for.
func waitForRowLock(t *testing.T, s *pgstore.Store, table string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting int
		err := s.Pool().QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE '%FROM '||$1||'%FOR UPDATE%'`, table).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no statement waited for a row lock of %s within 30s", table)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
