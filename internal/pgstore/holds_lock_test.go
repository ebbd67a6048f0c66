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
// deadline while another daemon's transaction holds the hold's row lock
// (and so, as every transaction that locks a hold does, its workshop's
// row lock first), with real PostgreSQL locks only. The confirmation
// waits for the locks; meanwhile the deadline passes and a reservation,
// which waits for the workshop's lock too, asks for the place the expired
// hold no longer blocks. When the locks are free, whichever decides first,
// the reservation gets the place and the confirmation must answer
// "expired": it reads its clock only once it has its locks, after the
// deadline. Answering "reserved" puts reserved above capacity.
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
	// Wait until the confirmation waits for the locks.
	waitForRowLocks(t, s, "holds", 1)
	later.Add(int64(time.Nanosecond)) // The deadline has come.
	reserved := make(chan result, 1)
	go func() {
		// Bounded, so that a reservation that waits for good fails the
		// test instead of hanging it.
		reserveCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		out, err := otherEng.Reserve(reserveCtx, "bob", "5b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e", engine.Request{Workshop: "go-basics", Quantity: 1})
		reserved <- result{out, err}
	}()
	// Both wait for the workshop's row lock.
	waitForRowLocks(t, s, "workshops", 2)
	unlock()
	if err := <-lockDone; err != nil {
		t.Fatal(err)
	}
	if r := <-reserved; r.err != nil || r.out.Answer.Status != engine.StatusReserved {
		t.Fatalf("reserve at the deadline of the only hold = %+v, %v; want reserved", r.out, r.err)
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

// waitForRowLocks polls, with a deadline, until n statements wait for a
// row lock that a SELECT … FROM table … FOR UPDATE asked for.
func waitForRowLocks(t *testing.T, s *pgstore.Store, table string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting int
		err := s.Pool().QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE '%FROM '||$1||'%FOR UPDATE%'`, table).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d statements, not %d, waited for a row lock of %s within 30s", waiting, n, table)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
