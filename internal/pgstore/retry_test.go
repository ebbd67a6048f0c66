package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/engine/enginetest"
	"github.com/reserve/reserve/internal/pgstore"
	"github.com/reserve/reserve/internal/pgstore/pgtest"
)

// retries records the SQLSTATE of every retry a store reports.
type retries struct {
	mu    sync.Mutex
	codes []string
}

func (r *retries) record(_ int, err error) {
	var pgErr *pgconn.PgError
	code := "not a PostgreSQL error: " + err.Error()
	if errors.As(err, &pgErr) {
		code = pgErr.Code
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.codes = append(r.codes, code)
}

func (r *retries) want(t *testing.T, codes ...string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if strings.Join(r.codes, ",") != strings.Join(codes, ",") {
		t.Fatalf("retries with SQLSTATE %v, want %v", r.codes, codes)
	}
}

func mustWorkshops(t *testing.T, eng *engine.Engine, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if _, _, err := eng.PutWorkshop(t.Context(), id, engine.WorkshopSpec{Capacity: 10, MaxQuantity: 5}, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// TestUniqueViolationIsRetried lets a second transaction store the receipt
// a first one has just read as absent: the first one's INSERT of it fails
// with a unique violation, Update runs its function again, and the second
// run finds the receipt instead of overwriting it.
func TestUniqueViolationIsRetried(t *testing.T) {
	var r retries
	s := mustOpen(t, pgstore.Options{OnRetry: r.record})
	ctx := t.Context()
	rec := engine.Receipt{
		Actor: "alice", OperationKey: "f47ac10b-58cc-4372-a567-0e02b2c3d479",
		FingerprintVersion: 1, Request: engine.Request{Workshop: "go", Quantity: 1},
		CreatedAt: enginetest.Now,
	}
	rec.Answer = engine.StoredAnswer(engine.OperationReserve, engine.StatusUnavailable, []byte(`first`))
	runs, found := 0, false
	err := s.Update(ctx, func(tx engine.Tx) error {
		runs++
		_, ok, err := tx.Receipt(rec.Actor, rec.OperationKey)
		if err != nil || ok {
			found = ok
			return err
		}
		if runs == 1 {
			// The concurrent writer commits between our read and our write.
			if err := s.Update(ctx, func(tx engine.Tx) error { return tx.PutReceipt(rec) }); err != nil {
				return err
			}
		}
		second := rec
		second.Answer = engine.StoredAnswer(engine.OperationReserve, engine.StatusUnavailable, []byte(`second`))
		return tx.PutReceipt(second)
	})
	if err != nil {
		t.Fatal(err)
	}
	if runs != 2 || !found {
		t.Fatalf("function ran %d times, found the receipt: %v; want 2 runs, the second finding it", runs, found)
	}
	r.want(t, "23505")
	err = s.View(ctx, func(tx engine.Tx) error {
		got, _, err := tx.Receipt(rec.Actor, rec.OperationKey)
		if string(got.Answer.JSON()) != "first" {
			t.Errorf("stored body %q, want the first writer's", got.Answer.JSON())
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDeadlockIsRetried makes two transactions lock two workshops in
// opposite order. PostgreSQL aborts one with a deadlock, Update runs it
// again, and both complete.
func TestDeadlockIsRetried(t *testing.T) {
	var r retries
	s := mustOpen(t, pgstore.Options{OnRetry: r.record})
	mustWorkshops(t, engine.New(s), "ws-a", "ws-b")
	aLocked, bLocked := make(chan struct{}), make(chan struct{})
	lockBoth := func(first, second string, mine, theirs chan struct{}) error {
		runs := 0
		return s.Update(t.Context(), func(tx engine.Tx) error {
			runs++
			_, _, err := tx.Workshop(first)
			if runs == 1 {
				close(mine)
				<-theirs
			}
			if err != nil {
				return err
			}
			w, _, err := tx.Workshop(second)
			if err != nil {
				return err
			}
			w.Version++
			return tx.PutWorkshop(w)
		})
	}
	errs := make(chan error, 2)
	go func() { errs <- lockBoth("ws-a", "ws-b", aLocked, bLocked) }()
	go func() { errs <- lockBoth("ws-b", "ws-a", bLocked, aLocked) }()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// PostgreSQL aborts one of the two, and now and then, when both detect
	// the deadlock at once, both: each abort must be retried.
	r.mu.Lock()
	codes := slices.Clone(r.codes)
	r.mu.Unlock()
	if len(codes) < 1 || len(codes) > 2 || slices.ContainsFunc(codes, func(c string) bool { return c != "40P01" }) {
		t.Fatalf("retries with SQLSTATE %v, want one or two 40P01", codes)
	}
	ws, err := engine.New(s).Workshops(t.Context(), false)
	if err != nil {
		t.Fatal(err)
	}
	if ws[0].Version != 2 || ws[1].Version != 2 {
		t.Fatalf("workshops %+v: want each updated once after its creation", ws)
	}
}

func TestRetryIsBounded(t *testing.T) {
	var r retries
	s := mustOpen(t, pgstore.Options{MaxAttempts: 3, OnRetry: r.record})
	runs := 0
	// PostgreSQL reports a serialization failure only at SERIALIZABLE or
	// REPEATABLE READ, which Update does not use, so the function reports
	// one itself.
	conflict := &pgconn.PgError{Code: "40001", Message: "could not serialize access"}
	err := s.Update(t.Context(), func(tx engine.Tx) error {
		runs++
		if _, _, err := tx.Workshop("ws-a"); err != nil {
			return err
		}
		return conflict
	})
	if !errors.Is(err, conflict) || !strings.Contains(err.Error(), "gave up after 3 attempts") || runs != 3 {
		t.Fatalf("Update = %v after %d runs, want the serialization failure after 3", err, runs)
	}
	r.want(t, "40001", "40001")

	runs = 0
	other := errors.New("not a collision")
	if err := s.Update(t.Context(), func(engine.Tx) error { runs++; return other }); !errors.Is(err, other) || runs != 1 {
		t.Fatalf("Update = %v after %d runs, want the error after 1", err, runs)
	}
}

// TestFailedStatementIsNotCommitted swallows the error of a failed statement:
// the transaction is aborted all the same, Update reports the statement's
// error, and nothing of fn is committed.
func TestFailedStatementIsNotCommitted(t *testing.T) {
	s := mustOpen(t, pgstore.Options{})
	ctx := t.Context()
	var later error
	err := s.Update(ctx, func(tx engine.Tx) error {
		if err := tx.PutWorkshop(engine.Workshop{ID: "good", Capacity: 1, MaxQuantity: 1, Version: 1}); err != nil {
			return err
		}
		// PostgreSQL text cannot hold a NUL byte.
		_ = tx.PutWorkshop(engine.Workshop{ID: "bad", Title: "nul\x00byte", Capacity: 1, MaxQuantity: 1, Version: 1})
		_, _, later = tx.Workshop("good")
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), `write workshops "bad"`) {
		t.Fatalf("Update = %v, want the failed write", err)
	}
	if later == nil || !strings.Contains(later.Error(), "transaction aborted by an earlier error") {
		t.Fatalf("statement after the failed one: %v", later)
	}
	wantNoWorkshop(t, s, "good")
}

func wantNoWorkshop(t *testing.T, s *pgstore.Store, id string) {
	t.Helper()
	if _, err := engine.New(s).Workshop(t.Context(), id); engine.ErrorCode(err) != engine.CodeUnknownWorkshop {
		t.Fatalf("workshop %s after a rolled back transaction: %v", id, err)
	}
}

// TestCancelDuringUpdate shows both sides of the Store contract: a context
// cancelled while fn still runs statements rolls everything back, and one
// cancelled after fn's last statement does not stop the commit.
func TestCancelDuringUpdate(t *testing.T) {
	s := mustOpen(t, pgstore.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	err := s.Update(ctx, func(tx engine.Tx) error {
		if err := tx.PutWorkshop(engine.Workshop{ID: "early", Capacity: 1, MaxQuantity: 1, Version: 1}); err != nil {
			return err
		}
		cancel()
		_, _, err := tx.Workshop("early")
		return err
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Update cancelled mid-transaction = %v, want context.Canceled", err)
	}
	wantNoWorkshop(t, s, "early")

	ctx, cancel = context.WithCancel(t.Context())
	err = s.Update(ctx, func(tx engine.Tx) error {
		defer cancel()
		return tx.PutWorkshop(engine.Workshop{ID: "late", Capacity: 1, MaxQuantity: 1, Version: 1})
	})
	if err != nil {
		t.Fatalf("Update cancelled before the commit = %v, want the commit", err)
	}
	if _, err := engine.New(s).Workshop(t.Context(), "late"); err != nil {
		t.Fatal(err)
	}
}

// TestWorkshopsDoNotBlockEachOther holds a write transaction on workshop a
// and shows that a reservation of workshop b completes meanwhile, while one
// of workshop a waits for the lock.
func TestWorkshopsDoNotBlockEachOther(t *testing.T) {
	dsn, schema := pgtest.FreshSchema(t)
	dsn = pgtest.WithParams(t, dsn, map[string]string{"application_name": schema})
	// Connections: the holder, the waiting reservation, the reservation of
	// b and the poll.
	s := mustOpenDSN(t, dsn, pgstore.Options{MaxConns: 4})
	eng := engine.New(s)
	mustWorkshops(t, eng, "ws-a", "ws-b")
	ctx := t.Context()

	held, release := make(chan struct{}), make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	// A failing test must release the lock too, or closing the store would
	// wait for the holder forever.
	defer releaseOnce()
	holder := make(chan error, 1)
	go func() {
		once := sync.OnceFunc(func() { close(held) })
		holder <- s.Update(ctx, func(tx engine.Tx) error {
			_, _, err := tx.Workshop("ws-a")
			once()
			<-release
			return err
		})
	}()
	<-held

	waiter := make(chan error, 1)
	go func() {
		_, err := eng.Reserve(ctx, "alice", "f47ac10b-58cc-4372-a567-0e02b2c3d479", engine.Request{Workshop: "ws-a", Quantity: 1})
		waiter <- err
	}()
	// The control: the reservation of a is seen waiting for a row lock.
	pollUntil(t, 30*time.Second, "a reservation of workshop a waits for the lock", func() (bool, error) {
		var waiting int
		err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, schema).Scan(&waiting)
		return waiting == 1, err
	})

	bctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := eng.Reserve(bctx, "bob", "0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d3", engine.Request{Workshop: "ws-b", Quantity: 1})
	if err != nil || out.Answer.Status != engine.StatusReserved {
		t.Fatalf("reservation of b while a is locked = %+v, %v; want 201 without waiting for a", out, err)
	}
	select {
	case err := <-waiter:
		t.Fatalf("the reservation of a finished (%v) while a was locked", err)
	default:
	}
	releaseOnce()
	if err := <-holder; err != nil {
		t.Fatal(err)
	}
	if err := <-waiter; err != nil {
		t.Fatalf("reservation of a after the lock was released: %v", err)
	}
}

// pollUntil polls cond until it holds, failing the test after timeout.
func pollUntil(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not so after %v", what, timeout)
		}
		<-tick.C
	}
}

// TestConcurrentCreatesOfOneWorkshop lets several transactions read the
// same workshop as absent before any of them creates it: one creates it,
// the others' inserts collide, are retried and then update it, so no write
// is lost.
func TestConcurrentCreatesOfOneWorkshop(t *testing.T) {
	const admins = 4
	s := mustOpen(t, pgstore.Options{MaxConns: admins})
	var allRead sync.WaitGroup
	allRead.Add(admins)
	created := make([]bool, admins)
	errs := make([]error, admins)
	var wg sync.WaitGroup
	for i := range admins {
		wg.Go(func() {
			runs := 0
			errs[i] = s.Update(t.Context(), func(tx engine.Tx) error {
				runs++
				w, ok, err := tx.Workshop("go-basics")
				if runs == 1 {
					allRead.Done()
					allRead.Wait()
				}
				if err != nil {
					return err
				}
				created[i] = !ok
				w.ID, w.Capacity, w.Version = "go-basics", 10, w.Version+1
				return tx.PutWorkshop(w)
			})
		})
	}
	wg.Wait()
	creators := 0
	for i := range admins {
		if errs[i] != nil {
			t.Fatalf("admin %d: %v", i, errs[i])
		}
		if created[i] {
			creators++
		}
	}
	w, err := engine.New(s).Workshop(t.Context(), "go-basics")
	if err != nil {
		t.Fatal(err)
	}
	if creators != 1 || w.Version != admins {
		t.Fatalf("%d admins created the workshop, version %d; want 1 and %d", creators, w.Version, admins)
	}
}

// pausingStore pauses each of the first two write transactions after its
// first workshop read, which on PostgreSQL locks the row, until the other
// has read one too or half a second has passed.
type pausingStore struct {
	*pgstore.Store
	mu     sync.Mutex
	n      int
	locked [2]chan struct{} // Closed by the first and the second transaction.
}

func (s *pausingStore) Update(ctx context.Context, fn func(engine.Tx) error) error {
	s.mu.Lock()
	me := s.n
	s.n++
	s.mu.Unlock()
	first := me < 2
	return s.Store.Update(ctx, func(tx engine.Tx) error {
		return fn(&pausingTx{Tx: tx, s: s, me: me, first: &first})
	})
}

type pausingTx struct {
	engine.Tx
	s     *pausingStore
	me    int
	first *bool
}

func (t *pausingTx) Workshop(id string) (engine.Workshop, bool, error) {
	w, ok, err := t.Tx.Workshop(id)
	if *t.first {
		*t.first = false
		close(t.s.locked[t.me])
		select {
		case <-t.s.locked[1-t.me]:
		case <-time.After(500 * time.Millisecond):
		}
	}
	return w, ok, err
}

// TestCrossingBatchesDoNotDeadlock sends two batches over the same two
// workshops in opposite orders at once, each paused after its first row
// lock until the other has one: a batch takes its workshops in id order
// before deciding any item, so the second waits for the first instead of
// locking the other row, and PostgreSQL never has a deadlock to break.
func TestCrossingBatchesDoNotDeadlock(t *testing.T) {
	var r retries
	s := mustOpen(t, pgstore.Options{OnRetry: r.record})
	mustWorkshops(t, engine.New(s), "ws-a", "ws-b")
	eng := engine.New(&pausingStore{Store: s, locked: [2]chan struct{}{make(chan struct{}), make(chan struct{})}})
	batch := func(workshops ...string) []engine.BatchEntry {
		var entries []engine.BatchEntry
		for _, w := range workshops {
			entries = append(entries, engine.BatchEntry{Key: engine.OperationKey(uuid.NewString()), Request: engine.Request{Workshop: w, Quantity: 1}})
		}
		return entries
	}
	errs := make(chan error, 2)
	for _, order := range [][]string{{"ws-a", "ws-b"}, {"ws-b", "ws-a"}} {
		go func() {
			res, err := eng.Batch(t.Context(), "alice", batch(order...), false)
			if err == nil && (res.Items[0].Refusal != nil || res.Items[1].Refusal != nil) {
				err = fmt.Errorf("items: %v, %v", res.Items[0].Refusal, res.Items[1].Refusal)
			}
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.codes) != 0 {
		t.Errorf("retries with SQLSTATE %v, want none", r.codes)
	}
}
