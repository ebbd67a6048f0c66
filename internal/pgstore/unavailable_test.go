package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/pgstore"
	"github.com/reserve/reserve/internal/pgstore/pgtest"
)

// wantUnavailable fails the test unless err is marked store_unavailable.
func wantUnavailable(t *testing.T, what string, err error) {
	t.Helper()
	if engine.ErrorCode(err) != engine.CodeStoreUnavailable {
		t.Fatalf("%s = %v, want store_unavailable", what, err)
	}
	t.Logf("%s: %v", what, err)
}

// backendPID returns the server process of the only connection of s's pool.
func backendPID(t *testing.T, s *pgstore.Store) uint32 {
	t.Helper()
	var pid uint32
	if err := s.Pool().QueryRow(t.Context(), "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	return pid
}

// TestTerminatedBackendIsUnavailable ends the store's connection with
// pg_terminate_backend from another connection in the middle of a
// transaction, as a restart or an administrator does: the transaction
// fails as store_unavailable, and the next one runs on a new connection.
func TestTerminatedBackendIsUnavailable(t *testing.T) {
	server := pgtest.ServerDSN(t)
	s := mustOpen(t, pgstore.Options{MaxConns: 1})
	eng := engine.New(s)
	mustWorkshops(t, eng, "ws-a")
	for name, run := range map[string]func(context.Context, func(engine.Tx) error) error{"Update": s.Update, "View": s.View} {
		pid := backendPID(t, s)
		err := run(t.Context(), func(tx engine.Tx) error {
			// Waits until the backend has exited (PostgreSQL 14 or newer).
			pgtest.Exec(t, server, "SELECT pg_terminate_backend($1, 10000)", pid)
			_, _, err := tx.Workshop("ws-a")
			return err
		})
		wantUnavailable(t, name+" whose backend was terminated", err)
		if _, err := eng.Workshop(t.Context(), "ws-a"); err != nil {
			t.Fatalf("after %s's backend was terminated: %v", name, err)
		}
		if backendPID(t, s) == pid {
			t.Fatalf("%s: the pool still uses the terminated backend %d", name, pid)
		}
	}
}

// TestReadOnlyIsUnavailable writes through a connection whose transactions
// are read-only, as on a standby during a failover: 25006 is
// store_unavailable, not an internal error.
func TestReadOnlyIsUnavailable(t *testing.T) {
	dsn, _ := pgtest.FreshSchema(t)
	mustOpenDSN(t, dsn, pgstore.Options{}) // Creates the tables.
	ro := mustOpenDSN(t, pgtest.WithParams(t, dsn, map[string]string{"default_transaction_read_only": "on"}), pgstore.Options{NoMigrate: true})
	_, _, err := engine.New(ro).PutWorkshop(t.Context(), "ws-a", engine.WorkshopSpec{Capacity: 1, MaxQuantity: 1}, nil)
	wantUnavailable(t, "a write on a read-only server", err)
}

// TestUnreachableIsUnavailable cuts the store off its database (its
// connections reset, new ones refused), then lets it hang (connections
// accepted, never answered): every operation is store_unavailable, also a
// connection attempt that runs into the caller's deadline. Restored, the
// store reconnects by itself and decides the intent that was refused
// meanwhile, for the first time.
func TestUnreachableIsUnavailable(t *testing.T) {
	dsn, _ := pgtest.FreshSchema(t)
	proxy, via := pgtest.NewProxy(t, dsn)
	s := mustOpenDSN(t, via, pgstore.Options{MaxConns: 2})
	eng := engine.New(s)
	mustWorkshops(t, eng, "ws-a")
	if _, err := eng.Reserve(t.Context(), "alice", engine.OperationKey(uuid.NewString()), engine.Request{Workshop: "ws-a", Quantity: 1}); err != nil {
		t.Fatal(err)
	}

	key := engine.OperationKey(uuid.NewString())
	req := engine.Request{Workshop: "ws-a", Quantity: 2}
	proxy.Cut()
	refused := false
	// The pool's connections fail first, then new ones are refused.
	for i := 0; i < 4 && !refused; i++ {
		_, err := eng.Reserve(t.Context(), "alice", key, req)
		wantUnavailable(t, "reserve while the database is cut off", err)
		refused = errors.Is(err, syscall.ECONNREFUSED)
	}
	if !refused {
		t.Fatal("no connection attempt was refused while the database was cut off")
	}

	proxy.Stall()
	timedOut := false
	for i := 0; i < 4 && !timedOut; i++ {
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		_, err := eng.Workshops(ctx, false)
		cancel()
		wantUnavailable(t, "a read while the database hangs", err)
		timedOut = errors.Is(err, context.DeadlineExceeded)
	}
	if !timedOut {
		t.Fatal("no operation ran into its deadline while the database hung")
	}

	proxy.Restore()
	out, err := eng.Reserve(t.Context(), "alice", key, req)
	if err != nil || out.Replayed || out.Answer.Status != engine.StatusReserved {
		t.Fatalf("reserve after the outage = %+v, %v; want a first 201", out, err)
	}
}

// TestPoolWaitIsUnavailable holds the only connection of the pool in a
// transaction: another one that cannot get a connection before its
// deadline is store_unavailable.
func TestPoolWaitIsUnavailable(t *testing.T) {
	s := mustOpen(t, pgstore.Options{MaxConns: 1})
	mustWorkshops(t, engine.New(s), "ws-a")
	held, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.Update(t.Context(), func(tx engine.Tx) error {
			_, _, err := tx.Workshop("ws-a")
			close(held)
			<-release
			return err
		})
	}()
	<-held
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	err := s.View(ctx, func(tx engine.Tx) error { _, _, err := tx.Workshop("ws-a"); return err })
	cancel()
	close(release)
	wantUnavailable(t, "a transaction waiting for the pool past its deadline", err)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the cause %v is not the deadline", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestClosedStoreIsUnavailable: a store closed while the daemon stops
// answers store_unavailable, and ErrClosed stays visible.
func TestClosedStoreIsUnavailable(t *testing.T) {
	s := mustOpen(t, pgstore.Options{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	err := s.Update(t.Context(), func(engine.Tx) error { return nil })
	wantUnavailable(t, "Update on a closed store", err)
	if !errors.Is(err, pgstore.ErrClosed) {
		t.Errorf("Update on a closed store = %v, want ErrClosed in it", err)
	}
}

// TestHungCommitIsBounded lets the server hang (nothing passes on the
// connection any more, and no reset comes) just before the COMMIT of an
// Update whose context has no deadline, as a janitor's has: Update must
// give up within a generous deadline with store_unavailable, because the
// outcome is unknown, instead of keeping the connection for ever.
func TestHungCommitIsBounded(t *testing.T) {
	t.Parallel() // It waits for its bound most of its time.
	dsn, _ := pgtest.FreshSchema(t)
	proxy, via := pgtest.NewProxy(t, dsn)
	s := mustOpenDSN(t, via, pgstore.Options{MaxConns: 1})
	eng := engine.New(s)
	mustWorkshops(t, eng, "ws-a")
	done := make(chan error, 1)
	go func() {
		done <- s.Update(context.Background(), func(tx engine.Tx) error {
			_, _, err := tx.Workshop("ws-a")
			proxy.Freeze()
			return err
		})
	}()
	select {
	case err := <-done:
		wantUnavailable(t, "an Update whose COMMIT hung", err)
		proxy.Cut() // Resets the hung connection, which the store's Close would wait for.
	case <-time.After(time.Minute):
		proxy.Cut() // Ends the COMMIT, so that the store can close.
		t.Fatal("Update still waits for the COMMIT on a hung connection after a minute")
	}
}

// TestHungGroupCommitIsBounded is TestHungCommitIsBounded for a group:
// the server hangs while a group of Updates decides, before the batch with
// its COMMIT is sent (after the group's read-ahead, which found ws-a).
// Every Update of the group must give up within a
// generous deadline with store_unavailable.
func TestHungGroupCommitIsBounded(t *testing.T) {
	t.Parallel() // It waits for its bound most of its time.
	dsn, _ := pgtest.FreshSchema(t)
	proxy, via := pgtest.NewProxy(t, dsn)
	// One connection: a queued Update cannot run alone, however slowly
	// the group forms.
	s := mustOpenDSN(t, via, pgstore.Options{MaxConns: 1})
	mustWorkshops(t, engine.New(s), "ws-a")
	release, wait := queueGroup(t, s,
		putWorkshop("ws-b", ""),
		func(tx engine.Tx) error {
			// The probe run, which finds nothing, must not freeze: the
			// group's BEGIN is sent on the caller's context.
			_, ok, err := tx.Workshop("ws-a")
			if ok {
				proxy.Freeze()
			}
			if err != nil {
				return err
			}
			return putWorkshop("ws-c", "")(tx)
		})
	release()
	done := make(chan []error, 1)
	go func() { done <- wait() }()
	select {
	case errs := <-done:
		for i, err := range errs {
			wantUnavailable(t, fmt.Sprintf("Update %d of a group whose COMMIT hung", i), err)
		}
		proxy.Cut() // Resets the hung connection, which the store's Close would wait for.
	case <-time.After(time.Minute):
		proxy.Cut() // Ends the COMMIT, so that the store can close.
		t.Fatal("a group still waits for its COMMIT on a hung connection after a minute")
	}
}
