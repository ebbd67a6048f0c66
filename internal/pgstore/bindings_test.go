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

// TestGroupBindingsSeeEachOther decides three bindings in one group: the
// second decision finds the first one's binding (not yet sent) both by
// subject and by actor, and binds the next name; the third, which binds
// the first one's actor again, fails with a unique violation at the flush,
// and only it is rolled back.
func TestGroupBindingsSeeEachOther(t *testing.T) {
	var c commits
	s := mustOpen(t, pgstore.Options{MaxConns: 1, MaxAttempts: 1, OnCommit: c.record})
	binding := func(uid, actor string) engine.Binding {
		return engine.Binding{Kind: engine.SubjectUID, Subject: uid, Actor: actor, CreatedAt: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	}
	errs := inOneGroup(t, s,
		func(tx engine.Tx) error { return tx.AddBinding(binding("1000", "unix-alice")) },
		func(tx engine.Tx) error {
			if b, ok, err := tx.Binding(engine.SubjectUID, "1000"); err != nil || !ok || b.Actor != "unix-alice" {
				return fmt.Errorf("Binding(uid 1000) in the group = %+v, %t, %v", b, ok, err)
			}
			if b, ok, err := tx.BindingOfActor("unix-alice"); err != nil || !ok || b.Subject != "1000" {
				return fmt.Errorf("BindingOfActor(unix-alice) in the group = %+v, %t, %v", b, ok, err)
			}
			return tx.AddBinding(binding("1001", "unix-alice-2"))
		},
		func(tx engine.Tx) error { return tx.AddBinding(binding("1002", "unix-alice")) },
	)
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("the first two bindings: %v, %v", errs[0], errs[1])
	}
	if errs[2] == nil || !strings.Contains(errs[2].Error(), "23505") {
		t.Fatalf("a second binding of unix-alice = %v, want a unique violation", errs[2])
	}
	var got []string
	err := s.View(t.Context(), func(tx engine.Tx) error {
		return tx.ForEachBinding(func(b engine.Binding) error { got = append(got, b.Subject+" "+b.Actor); return nil })
	})
	if want := []string{"1000 unix-alice", "1001 unix-alice-2"}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("bindings = %q, %v; want %q", got, err, want)
	}
	if sizes := c.get(); !slices.Equal(sizes, []int{1, 2}) {
		t.Fatalf("commits of %v Updates, want the leader's and one of the 2 bindings", sizes)
	}
}

// TestTwoDaemonsBindAtOnce lets two stores (two daemons) on one database,
// each with engines that share nothing, bind uids at once: every engine
// that binds one new uid gets one actor, uids that want one name get
// distinct actors, and each uid has exactly one row.
func TestTwoDaemonsBindAtOnce(t *testing.T) {
	dsn, _ := pgtest.FreshSchema(t)
	stores := [2]*pgstore.Store{
		mustOpenDSN(t, dsn, pgstore.Options{MaxConns: 2, MaxAttempts: 50}),
		mustOpenDSN(t, dsn, pgstore.Options{MaxConns: 2, MaxAttempts: 50}),
	}
	const uids, sends = 12, 4
	actors := make([][sends]string, uids)
	errs := make([]error, uids*sends)
	var wg sync.WaitGroup
	for u := range uids {
		for send := range sends {
			wg.Go(func() {
				// Every uid wants the same name: the first bound gets it, the
				// others the numbered ones.
				eng := engine.New(stores[(u+send)%2])
				actors[u][send], errs[u*sends+send] = eng.ActorOf(t.Context(), engine.UIDSubject(uint32(7000+u)), func() (string, error) { return "unix-shared", nil })
			})
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for u := range uids {
		for send := range sends {
			if actors[u][send] != actors[u][0] {
				t.Errorf("uid %d was bound to %s and to %s", 7000+u, actors[u][0], actors[u][send])
			}
		}
		if prev, taken := seen[actors[u][0]]; taken {
			t.Errorf("uids %d and %d share actor %s", 7000+prev, 7000+u, actors[u][0])
		}
		seen[actors[u][0]] = u
	}
	var rows int
	if err := stores[0].Pool().QueryRow(t.Context(), `SELECT count(*) FROM actor_bindings`).Scan(&rows); err != nil || rows != uids {
		t.Fatalf("actor_bindings holds %d rows, %v; want %d", rows, err, uids)
	}
	if findings, err := stores[1].Check(t.Context()); err != nil || len(findings) != 0 {
		t.Fatalf("check: %v, %v", findings, err)
	}
}
