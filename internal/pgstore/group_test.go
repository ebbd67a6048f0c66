package pgstore_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
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
	release := make(chan struct{})
	held := make(chan struct{})
	leader := make(chan error, 1)
	go func() {
		leader <- s.Update(t.Context(), func(engine.Tx) error {
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Go(func() { errs[i] = s.Update(t.Context(), fn) })
		// Queued one after the other, the group decides them in this order.
		pollUntil(t, 30*time.Second, fmt.Sprintf("Update %d queued", i), func() (bool, error) { return s.Queued() == i+1, nil })
	}
	close(release)
	if err := <-leader; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	return errs
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
		putWorkshop("second", ""),
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
	pgtest.Exec(t, dsn, `CREATE FUNCTION fail_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'the connection is gone' USING ERRCODE = '08006';
END $$`)
	pgtest.Exec(t, dsn, `CREATE CONSTRAINT TRIGGER fail_at_commit AFTER INSERT ON workshops DEFERRABLE INITIALLY DEFERRED
FOR EACH ROW WHEN (NEW.title = 'fail at commit') EXECUTE FUNCTION fail_at_commit()`)
	errs := inOneGroup(t, s, putWorkshop("a", ""), putWorkshop("b", "fail at commit"), putWorkshop("c", ""))
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
