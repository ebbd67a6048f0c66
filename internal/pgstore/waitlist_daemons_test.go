package pgstore_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/pgstore"
	"github.com/reserve/reserve/internal/pgstore/pgtest"
)

// TestTwoDaemonsServeOneWaitingList lets two stores (two daemons) on one
// database serve the waiting list of one full workshop at once: people
// join it (some leave again at once) while the reservations are
// cancelled and walk-ins ask for places, and then, round after round,
// the people offered places confirm or decline them, each through
// either daemon. After every round the check of the store finds nothing
// broken: no freed place was offered twice, or left free while someone it
// fits waits, and every entry has at most one offer; the workshop is
// never overbooked.
func TestTwoDaemonsServeOneWaitingList(t *testing.T) {
	dsn, _ := pgtest.FreshSchema(t)
	var c commits
	var r retries
	var stores [2]*pgstore.Store
	var engines [2]*engine.Engine
	for i := range stores {
		stores[i] = mustOpenDSN(t, dsn, pgstore.Options{MaxConns: 2, MaxAttempts: 50, OnCommit: c.record, OnRetry: r.record})
		engines[i] = engine.New(stores[i])
	}
	ctx := t.Context()
	root := engine.Principal{Actor: "root", Admin: true}
	const capacity, joiners = 6, 30
	if _, _, err := engines[0].PutWorkshop(ctx, "hot", engine.WorkshopSpec{Capacity: capacity, MaxQuantity: 2, OfferTTLSeconds: 3600}, nil); err != nil {
		t.Fatal(err)
	}
	var early []string
	for i := range capacity {
		out, err := engines[i%2].Reserve(ctx, fmt.Sprint("early-", i), newKey(t), engine.Request{Workshop: "hot", Quantity: 1})
		if err != nil || out.Answer.Status != engine.StatusReserved {
			t.Fatalf("early reservation %d = %+v, %v", i, out, err)
		}
		early = append(early, out.Answer.ReservationID)
	}
	check := func(when string) {
		t.Helper()
		findings, err := stores[1].Check(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range findings {
			t.Errorf("%s: %s", when, f)
		}
		var twice []string
		rows, err := stores[0].Pool().Query(ctx, "SELECT entry_id FROM holds WHERE entry_id IS NOT NULL GROUP BY entry_id HAVING count(*) > 1")
		if err == nil {
			for rows.Next() {
				var id string
				err = rows.Scan(&id)
				twice = append(twice, id)
			}
			rows.Close()
		}
		if err != nil || len(twice) > 0 {
			t.Errorf("%s: entries offered more than once: %v, %v", when, twice, err)
		}
		w, err := engines[0].Workshop(ctx, "hot")
		if err != nil || w.Reserved+w.Held > w.Capacity {
			t.Fatalf("%s: workshop %+v overbooked, %v", when, w, err)
		}
		if t.Failed() {
			t.FailNow()
		}
	}

	var wg sync.WaitGroup
	for i := range joiners {
		wg.Go(func() {
			who := engine.Principal{Actor: fmt.Sprint("late-", i)}
			out, err := engines[i%2].Reserve(ctx, who.Actor, newKey(t), engine.Request{Workshop: "hot", Quantity: 1 + i%3/2, Waitlist: true})
			if err != nil {
				t.Errorf("join %d: %v", i, err)
				return
			}
			if i%4 == 3 && out.Answer.Status == engine.StatusWaiting {
				if _, err := engines[1-i%2].LeaveWaitlist(ctx, who, newKey(t), out.Answer.EntryID); err != nil {
					t.Errorf("leave %d: %v", i, err)
				}
			}
		})
	}
	for i, id := range early {
		wg.Go(func() {
			if _, err := engines[1-i%2].Cancel(ctx, engine.Principal{Actor: fmt.Sprint("early-", i)}, newKey(t), id); err != nil {
				t.Errorf("cancel %s: %v", id, err)
			}
		})
	}
	for i := range capacity {
		wg.Go(func() {
			if _, err := engines[i%2].Reserve(ctx, fmt.Sprint("walk-in-", i), newKey(t), engine.Request{Workshop: "hot", Quantity: 1}); err != nil {
				t.Errorf("walk-in %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	check("after the joins and cancellations")

	// Each round, everyone offered places takes them (even) or declines
	// them (odd), which offers them to the next ones.
	for round := 0; ; round++ {
		es, _, err := engines[round%2].WorkshopWaitlist(ctx, root, "hot", engine.ListFilter{Status: string(engine.WaitOffered), Limit: engine.MaxListLimit})
		if err != nil {
			t.Fatal(err)
		}
		if len(es) == 0 {
			break
		}
		if round == joiners {
			t.Fatalf("entries still offered after %d rounds: %+v", round, es)
		}
		for i, e := range es {
			wg.Go(func() {
				who := engine.Principal{Actor: e.Actor}
				var err error
				if i%2 == 0 {
					_, err = engines[i%2].Confirm(ctx, who, newKey(t), e.HoldID)
				} else {
					_, err = engines[(i+round)%2].LeaveWaitlist(ctx, who, newKey(t), e.ID)
				}
				if err != nil {
					t.Errorf("round %d, entry %s: %v", round, e.ID, err)
				}
			})
		}
		wg.Wait()
		check(fmt.Sprint("after round ", round))
	}
	// Every decision about the list locks the workshop's row before any
	// entry or hold of it, so none waits for a row lock that a transaction
	// waiting for the workshop holds.
	if slices.Contains(r.codes, "40P01") {
		t.Errorf("deadlocks among the decisions about one waiting list: retries %v", r.codes)
	}
	if !slices.ContainsFunc(c.get(), func(calls int) bool { return calls > 1 }) {
		t.Errorf("commits of %v Updates: no group formed", c.get())
	}
	t.Logf("%d commits; retries %v", len(c.get()), r.codes)
}

// TestLeavingLocksTheWorkshopFirst: leaving a waiting list reads its entry
// before the entry's workshop, while every other decision about the list
// locks the workshop first and then writes the entries. With real
// PostgreSQL locks only: one daemon's transaction holds the workshop's
// row lock while another daemon's leaving starts; it then updates the
// entry and commits. Had the leaving locked the entry before waiting for
// the workshop, the two would deadlock (and one be retried); it locks
// the workshop first, so neither waits for the other, and the leaving
// then reads the entry as the first transaction left it. The leaving is
// decided alone, and in a group, which reads its entry ahead.
func TestLeavingLocksTheWorkshopFirst(t *testing.T) {
	t.Run("alone", func(t *testing.T) {
		leavingLocksTheWorkshopFirst(t, func(s *pgstore.Store) engine.Store { return s })
	})
	t.Run("in a group", func(t *testing.T) {
		leavingLocksTheWorkshopFirst(t, func(s *pgstore.Store) engine.Store { return &inGroups{Store: s} })
	})
}

// leavingLocksTheWorkshopFirst is TestLeavingLocksTheWorkshopFirst with
// the leaving decided by the store that wrap makes of its daemon's.
func leavingLocksTheWorkshopFirst(t *testing.T, wrap func(*pgstore.Store) engine.Store) {
	dsn, _ := pgtest.FreshSchema(t)
	var r retries
	locker := mustOpenDSN(t, dsn, pgstore.Options{MaxConns: 2, OnRetry: r.record})
	s := mustOpenDSN(t, dsn, pgstore.Options{MaxConns: 1, OnRetry: r.record})
	ctx := t.Context()
	eng := engine.New(wrap(s))
	bob := engine.Principal{Actor: "bob"}
	if _, _, err := eng.PutWorkshop(ctx, "kiln", engine.WorkshopSpec{Capacity: 1, MaxQuantity: 1}, nil); err != nil {
		t.Fatal(err)
	}
	if out, err := eng.Reserve(ctx, "alice", newKey(t), engine.Request{Workshop: "kiln", Quantity: 1}); err != nil || out.Answer.Status != engine.StatusReserved {
		t.Fatalf("reserve = %+v, %v", out, err)
	}
	joined, err := eng.Reserve(ctx, "bob", newKey(t), engine.Request{Workshop: "kiln", Quantity: 1, Waitlist: true})
	if err != nil || joined.Answer.Status != engine.StatusWaiting {
		t.Fatalf("join = %+v, %v", joined, err)
	}
	id := joined.Answer.EntryID

	locked, release := make(chan struct{}), make(chan struct{})
	unlock := sync.OnceFunc(func() { close(release) })
	defer unlock() // So that a failed test lets its stores close.
	lockDone := make(chan error, 1)
	go func() {
		var once sync.Once
		lockDone <- locker.Update(context.WithoutCancel(ctx), func(tx engine.Tx) error {
			if _, _, err := tx.Workshop("kiln"); err != nil {
				return err
			}
			once.Do(func() { close(locked) })
			<-release
			e, _, err := tx.WaitEntry(id)
			if err != nil {
				return err
			}
			return tx.PutWaitEntry(e)
		})
	}()
	<-locked
	type result struct {
		out engine.Outcome
		err error
	}
	left := make(chan result, 1)
	go func() {
		out, err := eng.LeaveWaitlist(ctx, bob, newKey(t), id)
		left <- result{out, err}
	}()
	waitForRowLocks(t, locker, "workshops", 1)
	unlock()
	if err := <-lockDone; err != nil {
		t.Fatal(err)
	}
	if res := <-left; res.err != nil || res.out.Answer.Status != engine.StatusLeft {
		t.Fatalf("leave = %+v, %v", res.out, res.err)
	}
	if len(r.codes) > 0 {
		t.Errorf("retries with SQLSTATE %v, want none", r.codes)
	}
	if findings, err := s.Check(ctx); err != nil || len(findings) != 0 {
		t.Errorf("check: %v, %v", findings, err)
	}
}
