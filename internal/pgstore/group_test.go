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

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/engine/enginetest"
	"github.com/reserve/reserve/internal/pgstore"
	"github.com/reserve/reserve/internal/pgstore/pgtest"
)

// commits records the sizes of the commits a store reports.
type commits struct {
	mu    sync.Mutex
	sizes []int
}

func (c *commits) record(calls, _ int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sizes = append(c.sizes, calls)
}

func (c *commits) get() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.sizes)
}

// inOneGroup runs fns as concurrent Updates of s, a store with one
// connection, queued in their order behind an Update that holds the
// connection until all of them wait, so that they run as one group. It
// returns each one's error.
func inOneGroup(t *testing.T, s *pgstore.Store, fns ...func(engine.Tx) error) []error {
	t.Helper()
	release, wait := queueGroup(t, s, fns...)
	release()
	return wait()
}

// queueGroup queues fns as inOneGroup does and returns a function that
// lets the group run and one that waits for their errors.
func queueGroup(t *testing.T, s *pgstore.Store, fns ...func(engine.Tx) error) (release func(), wait func() []error) {
	t.Helper()
	return queueGroupIn(t, s, nil, fns...)
}

// queueGroupIn is queueGroup with ctxs[i] the context of the Update of
// fns[i], or with the test's context when ctxs is nil.
func queueGroupIn(t *testing.T, s *pgstore.Store, ctxs []context.Context, fns ...func(engine.Tx) error) (release func(), wait func() []error) {
	t.Helper()
	released := make(chan struct{})
	held := make(chan struct{})
	leader := make(chan error, 1)
	go func() {
		leader <- s.Update(t.Context(), func(engine.Tx) error {
			close(held)
			<-released
			return nil
		})
	}()
	<-held
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		ctx := t.Context()
		if ctxs != nil {
			ctx = ctxs[i]
		}
		wg.Go(func() { errs[i] = s.Update(ctx, fn) })
		// Queued one after the other, the group decides them in this order.
		pollUntil(t, 30*time.Second, fmt.Sprintf("Update %d queued", i), func() (bool, error) { return s.Queued() == i+1, nil })
	}
	return sync.OnceFunc(func() { close(released) }), func() []error {
		if err := <-leader; err != nil {
			t.Error(err)
		}
		wg.Wait()
		return errs
	}
}

func putWorkshop(id, title string) func(engine.Tx) error {
	return func(tx engine.Tx) error {
		return tx.PutWorkshop(engine.Workshop{ID: id, Title: title, Capacity: 10, MaxQuantity: 5, Version: 1})
	}
}

// workshopIDs lists the stored workshops.
func workshopIDs(t *testing.T, s *pgstore.Store) map[string]engine.Workshop {
	t.Helper()
	got := map[string]engine.Workshop{}
	err := s.View(t.Context(), func(tx engine.Tx) error {
		return tx.ForEachWorkshop(func(w engine.Workshop) error { got[w.ID] = w; return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestGroupSharesOneCommit queues eight Updates while the only connection
// is busy: they are decided in one transaction with one COMMIT.
func TestGroupSharesOneCommit(t *testing.T) {
	var c commits
	s := mustOpen(t, pgstore.Options{MaxConns: 1, OnCommit: c.record})
	var fns []func(engine.Tx) error
	for i := range 8 {
		fns = append(fns, putWorkshop(fmt.Sprintf("ws-%d", i), ""))
	}
	for i, err := range inOneGroup(t, s, fns...) {
		if err != nil {
			t.Fatalf("Update %d: %v", i, err)
		}
	}
	if got := c.get(); !slices.Equal(got, []int{1, 8}) {
		t.Fatalf("commits of %v Updates, want the leader's alone and then one of all 8", got)
	}
	if got := workshopIDs(t, s); len(got) != 8 {
		t.Fatalf("stored workshops %v, want 8", got)
	}
}

// TestGroupFailureRollsBackOnlyItsDecision decides, in one group, a
// function that fails after a write, a write that PostgreSQL refuses, and
// a read that it refuses, between decisions that succeed, one of which
// updates a workshop written earlier in the group: only the three failing
// decisions are rolled back, and the others commit together.
func TestGroupFailureRollsBackOnlyItsDecision(t *testing.T) {
	var c commits
	s := mustOpen(t, pgstore.Options{MaxConns: 1, OnCommit: c.record})
	refused := errors.New("refused by the function")
	errs := inOneGroup(t, s,
		putWorkshop("first", ""),
		func(tx engine.Tx) error {
			if err := putWorkshop("fn-fails", "")(tx); err != nil {
				return err
			}
			return refused
		},
		func(tx engine.Tx) error {
			// Decided right after the failed function, whose write it must
			// not see.
			if _, ok, err := tx.Workshop("fn-fails"); err != nil || ok {
				return fmt.Errorf("workshop fn-fails of a failed decision: found %v, %v", ok, err)
			}
			return putWorkshop("second", "")(tx)
		},
		// PostgreSQL text cannot hold a NUL byte.
		putWorkshop("bad-write", "nul\x00byte"),
		func(tx engine.Tx) error {
			// Decided after the refused write, which it must not see
			// (nor the refused function's), on top of the first's.
			for _, id := range []string{"fn-fails", "bad-write"} {
				if _, ok, err := tx.Workshop(id); err != nil || ok {
					return fmt.Errorf("workshop %s of a failed decision: found %v, %v", id, ok, err)
				}
			}
			w, ok, err := tx.Workshop("first")
			if err != nil || !ok {
				return fmt.Errorf("workshop first: found %v, %v", ok, err)
			}
			w.Version++
			return tx.PutWorkshop(w)
		},
		func(tx engine.Tx) error {
			_, _, err := tx.Workshop("nul\x00key")
			return err
		},
		putWorkshop("third", ""),
	)
	for i, err := range errs {
		switch i {
		case 1:
			if !errors.Is(err, refused) {
				t.Errorf("the failing function's Update = %v, want its error", err)
			}
		case 3:
			if err == nil || !strings.Contains(err.Error(), `write workshops "bad-write"`) {
				t.Errorf("the refused write's Update = %v, want the failed write", err)
			}
		case 5:
			if err == nil || !strings.Contains(err.Error(), `read workshops`) {
				t.Errorf("the refused read's Update = %v, want the failed read", err)
			}
		default:
			if err != nil {
				t.Errorf("Update %d: %v", i, err)
			}
		}
	}
	got := workshopIDs(t, s)
	if len(got) != 3 || got["first"].Version != 2 || got["second"].ID == "" || got["third"].ID == "" {
		t.Fatalf("stored workshops %v, want first (updated once), second and third", got)
	}
	if sizes := c.get(); !slices.Equal(sizes, []int{1, 4}) {
		t.Fatalf("commits of %v Updates, want the leader's and one of the 4 decided", sizes)
	}
}

// TestGroupCommitFailureLeavesEveryDecisionUndecided makes the COMMIT of a
// group fail as a lost connection would (a deferred trigger raises 08006 at
// commit time): every Update of the group reports the store unavailable, and
// none of their writes is stored.
func TestGroupCommitFailureLeavesEveryDecisionUndecided(t *testing.T) {
	var c commits
	dsn, _ := pgtest.FreshSchema(t)
	s := mustOpenDSN(t, dsn, pgstore.Options{MaxConns: 1, OnCommit: c.record})
	failCommits(t, dsn)
	errs := inOneGroup(t, s, putWorkshop("a", ""), putWorkshop("b", failingTitle), putWorkshop("c", ""))
	for i, err := range errs {
		if engine.ErrorCode(err) != engine.CodeStoreUnavailable || !strings.Contains(err.Error(), "commit") {
			t.Errorf("Update %d = %v, want the failed commit as store unavailable", i, err)
		}
	}
	if got := workshopIDs(t, s); len(got) != 0 {
		t.Fatalf("stored workshops %v after a failed commit, want none", got)
	}
	if sizes := c.get(); !slices.Equal(sizes, []int{1}) {
		t.Fatalf("commits of %v Updates, want only the leader's", sizes)
	}
}

// failingTitle is the title of a workshop whose insert makes the COMMIT
// fail once failCommits has run.
const failingTitle = "fail at commit"

// failCommits makes the COMMIT of every transaction that inserted a
// workshop titled failingTitle fail as a lost connection would: a deferred
// trigger raises 08006 at commit time.
func failCommits(t *testing.T, dsn string) {
	t.Helper()
	pgtest.Exec(t, dsn, `CREATE FUNCTION fail_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'the connection is gone' USING ERRCODE = '08006';
END $$`)
	pgtest.Exec(t, dsn, `CREATE CONSTRAINT TRIGGER fail_at_commit AFTER INSERT ON workshops DEFERRABLE INITIALLY DEFERRED
FOR EACH ROW WHEN (NEW.title = '`+failingTitle+`') EXECUTE FUNCTION fail_at_commit()`)
}

// TestGroupCommitFailureLeavesARefusalUndecided fails the COMMIT of a
// group in which a decision refused after it had seen an earlier
// decision's write: that refusal rested on a write that never committed
// (as an atomic batch refused for too few places that a reservation of the
// group took), so it is undecided like the write. A refusal decided before
// any write of the group saw only committed rows, and keeps its answer.
func TestGroupCommitFailureLeavesARefusalUndecided(t *testing.T) {
	dsn, _ := pgtest.FreshSchema(t)
	s := mustOpenDSN(t, dsn, pgstore.Options{MaxConns: 1})
	failCommits(t, dsn)
	errTaken := errors.New("refused: workshop a is taken")
	refuseIfTaken := func(tx engine.Tx) error {
		_, ok, err := tx.Workshop("a")
		switch {
		case err != nil:
			return err
		case ok:
			return errTaken
		}
		return errors.New("refused: workshop a is free")
	}
	errs := inOneGroup(t, s, refuseIfTaken, putWorkshop("a", failingTitle), refuseIfTaken)
	if err := errs[0]; err == nil || err.Error() != "refused: workshop a is free" {
		t.Errorf("the refusal before any write = %v, want its own answer", err)
	}
	for i := 1; i < 3; i++ {
		if err := errs[i]; engine.ErrorCode(err) != engine.CodeStoreUnavailable || errors.Is(err, errTaken) {
			t.Errorf("Update %d = %v, want the failed commit as store unavailable", i, err)
		}
	}
	if got := workshopIDs(t, s); len(got) != 0 {
		t.Fatalf("stored workshops %v after a failed commit, want none", got)
	}
}

// TestGroupGuessOfAnExistingRow looks up, in a group, a reservation that the
// group did not read ahead and that exists: the group takes it as absent at
// first, its check of that fails, and the decision runs again, reading the
// row, so that what commits was decided on the row as it is. A decision that
// inserts a row it took as absent fails with the insert, which its Update
// retries.
func TestGroupGuessOfAnExistingRow(t *testing.T) {
	var r retries
	s := mustOpen(t, pgstore.Options{MaxConns: 1, OnRetry: r.record})
	res := engine.Reservation{ID: "r-exists", Actor: "alice", OperationKey: "f47ac10b-58cc-4372-a567-0e02b2c3d479", Workshop: "ws", Quantity: 1, CreatedAt: enginetest.Now}
	if err := s.Update(t.Context(), func(tx engine.Tx) error {
		if err := putWorkshop("ws", "")(tx); err != nil {
			return err
		}
		if err := tx.PutReservation(res); err != nil {
			return err
		}
		other := res
		other.ID = "r-other"
		return tx.PutReservation(other)
	}); err != nil {
		t.Fatal(err)
	}
	// Like the engine, the functions look up the reservation once they have
	// found the workshop, so the group's first run of them, which finds
	// nothing, does not name it to be read ahead.
	afterWorkshop := func(tx engine.Tx) bool {
		_, ok, _ := tx.Workshop("ws")
		return ok
	}
	found := func(id string) func(engine.Tx) error {
		return func(tx engine.Tx) error {
			if !afterWorkshop(tx) {
				return nil
			}
			_, ok, err := tx.Reservation(id)
			if err != nil {
				return err
			}
			return putWorkshop(fmt.Sprintf("%s-found-%v", id, ok), "")(tx)
		}
	}
	runs := 0
	errs := inOneGroup(t, s,
		found("r-exists"),
		found("r-absent"),
		func(tx engine.Tx) error {
			runs++
			if !afterWorkshop(tx) {
				return nil
			}
			_, ok, err := tx.Reservation("r-other")
			if err != nil || ok {
				return err // Found: nothing to insert.
			}
			other := res
			other.ID = "r-other"
			return tx.PutReservation(other)
		},
		putWorkshop("after", ""),
	)
	for i, err := range errs {
		if err != nil {
			t.Errorf("Update %d: %v", i, err)
		}
	}
	got := workshopIDs(t, s)
	if len(got) != 4 || got["r-exists-found-true"].ID == "" || got["r-absent-found-false"].ID == "" || got["after"].ID == "" {
		t.Fatalf("stored workshops %v, want ws, r-exists-found-true, r-absent-found-false and after", got)
	}
	// The inserting decision ran four times: probed, guessed (run again
	// after the first decision's guess failed), guessed again and failed
	// with the insert, then retried alone, reading the row.
	if runs != 4 {
		t.Errorf("the inserting decision ran %d times, want 4", runs)
	}
	r.want(t, "23505")
}

// TestGroupsLockInKeyOrder lets two stores (two daemons) decide a group
// each over the same two workshops, named in opposite orders, each group's
// first decision pausing once it has its workshop until the other group's
// has one too (or half a second passed). A group locks the workshops its
// decisions name in id order before it decides any, so the second group
// waits for the first instead of locking the other row, and PostgreSQL
// never has a deadlock to break.
func TestGroupsLockInKeyOrder(t *testing.T) {
	var r retries
	dsn, _ := pgtest.FreshSchema(t)
	stores := [2]*pgstore.Store{
		mustOpenDSN(t, dsn, pgstore.Options{MaxConns: 1, OnRetry: r.record}),
		mustOpenDSN(t, dsn, pgstore.Options{MaxConns: 1, OnRetry: r.record}),
	}
	mustWorkshops(t, engine.New(stores[0]), "ws-a", "ws-b")
	locked := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
	bump := func(me int, id string, first bool) func(engine.Tx) error {
		once := sync.OnceFunc(func() { close(locked[me]) })
		return func(tx engine.Tx) error {
			w, ok, err := tx.Workshop(id)
			if err != nil || !ok {
				return err // The group's first run, which finds nothing.
			}
			if first {
				once()
				select {
				case <-locked[1-me]:
				case <-time.After(500 * time.Millisecond):
				}
			}
			w.Version++
			return tx.PutWorkshop(w)
		}
	}
	releaseA, waitA := queueGroup(t, stores[0], bump(0, "ws-b", true), bump(0, "ws-a", false))
	releaseB, waitB := queueGroup(t, stores[1], bump(1, "ws-a", true), bump(1, "ws-b", false))
	releaseA()
	releaseB()
	for _, err := range append(waitA(), waitB()...) {
		if err != nil {
			t.Error(err)
		}
	}
	r.want(t)
	if got := workshopIDs(t, stores[0]); got["ws-a"].Version != 3 || got["ws-b"].Version != 3 {
		t.Fatalf("workshops %v, want each updated twice after its creation", got)
	}
}

// TestStalledUpdateRunsAlone holds a store's write transaction for
// several times stallAfter with connections to spare: a queued Update then
// runs alone, in a transaction of its own, instead of waiting for good
// behind a transaction that does not end (a group stuck behind one
// workshop's row lock must not hold up every other workshop's decisions).
func TestStalledUpdateRunsAlone(t *testing.T) {
	var c commits
	s := mustOpen(t, pgstore.Options{MaxConns: 2, OnCommit: c.record})
	release, wait := queueGroup(t, s)
	defer func() { release(); wait() }()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := s.Update(ctx, putWorkshop("a", "")); err != nil {
		t.Fatalf("Update behind a transaction that holds on = %v, want it run alone", err)
	}
	if got := c.get(); !slices.Equal(got, []int{1}) {
		t.Fatalf("commits of %v Updates before the leader ended, want the stalled one's alone", got)
	}
}

// TestQueuedUpdateLeavesWhenItsContextEnds cancels an Update while it waits
// in the queue behind a transaction that holds on, with no connection to
// spare: at once, and after it has stalled (when it stays queued). It
// returns its context's error at once, and its function never runs.
func TestQueuedUpdateLeavesWhenItsContextEnds(t *testing.T) {
	for _, stalled := range []bool{false, true} {
		t.Run(fmt.Sprintf("stalled=%v", stalled), func(t *testing.T) {
			s := mustOpen(t, pgstore.Options{MaxConns: 1})
			release, wait := queueGroup(t, s)
			defer func() { release(); wait() }()
			ctx, cancel := context.WithCancel(t.Context())
			ran := make(chan struct{}, 1)
			done := make(chan error, 1)
			go func() {
				done <- s.Update(ctx, func(tx engine.Tx) error { ran <- struct{}{}; return putWorkshop("late", "")(tx) })
			}()
			pollUntil(t, 30*time.Second, "the Update queued", func() (bool, error) { return s.Queued() == 1, nil })
			if stalled {
				// What is tested is the call after it stalled, so the
				// test has to let that time pass.
				time.Sleep(4 * pgstore.StallAfter)
			}
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("cancelled queued Update = %v, want context.Canceled", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("a cancelled Update still waits in the queue behind a transaction that holds on")
			}
			if n := s.Queued(); n != 0 {
				t.Errorf("%d Updates queued after the cancelled one left, want 0", n)
			}
			select {
			case <-ran:
				t.Error("the cancelled Update's function ran")
			default:
			}
		})
	}
}
