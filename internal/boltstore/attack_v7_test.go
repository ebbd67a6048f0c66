package boltstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/engine/memstore"
)

// TestNameWithOnlyTimeOrderedRefusalsIsNotRebound: an actor whose only
// history is the receipt of a refusal under a UUIDv7 key (no reservation,
// no hold) keeps its name against a new subject, before and after the
// receipt turns into a tombstone, and after a reopen.
func TestNameWithOnlyTimeOrderedRefusalsIsNotRebound(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bind.db")
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	clock := engine.WithClock(func() time.Time { return now })
	s := mustOpenPath(t, path)
	eng := engine.New(s, clock)
	if _, _, err := eng.PutWorkshop(ctx, "full", engine.WorkshopSpec{Capacity: 1, MaxQuantity: 1}, nil); err != nil {
		t.Fatal(err)
	}
	if out, err := eng.Reserve(ctx, "zed", v7Key(t), engine.Request{Workshop: "full", Quantity: 1}); err != nil || out.Answer.Status != engine.StatusReserved {
		t.Fatalf("zed = %+v, %v", out, err)
	}
	for _, actor := range []string{"frank", "gina"} {
		if out, err := eng.Reserve(ctx, actor, v7Key(t), engine.Request{Workshop: "full", Quantity: 1}); err != nil || out.Answer.Status != engine.StatusUnavailable {
			t.Fatalf("%s = %+v, %v", actor, out, err)
		}
	}
	bindAs := func(eng *engine.Engine, id, name string) string {
		t.Helper()
		actor, err := eng.ActorOf(ctx, engine.Subject{Kind: "oidc", ID: id}, func() (string, error) { return name, nil })
		if err != nil {
			t.Fatal(err)
		}
		return actor
	}
	if got := bindAs(eng, "s1", "frank"); got != "frank-2" {
		t.Errorf("a new subject wanting frank got %s, want frank-2", got)
	}
	now = now.Add(48 * time.Hour)
	if n, err := eng.ExpireReceipts(ctx, time.Hour, 100); err != nil || n != 3 {
		t.Fatalf("ExpireReceipts = %d, %v", n, err)
	}
	if got := bindAs(eng, "s2", "gina"); got != "gina-2" {
		t.Errorf("after the expiry a new subject wanting gina got %s, want gina-2", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpenPath(t, path)
	defer s.Close()
	eng = engine.New(s, clock)
	if got := bindAs(eng, "s3", "gina"); got != "gina-2" && got != "gina-3" {
		t.Errorf("after a reopen a new subject wanting gina got %s", got)
	}
	if got := bindAs(eng, "s4", "free"); got != "free" {
		t.Errorf("a free name: got %s", got)
	}
	checkClean(t, s, "after the bindings")
}

// TestOperationsMatchMemstoreAtOneInstant: the same operations decided on
// bbolt and on the memory store at one instant, by actors whose names are
// prefixes of each other, under both kinds of key, some of them expired,
// page the same: with every limit, with and without an actor filter.
func TestOperationsMatchMemstoreAtOneInstant(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	clock := engine.WithClock(func() time.Time { return now })
	bs := mustOpenPath(t, filepath.Join(t.TempDir(), "ops.db"))
	defer bs.Close()
	stores := map[string]engine.Store{"bolt": bs, "mem": memstore.New(memstore.Options{})}
	engines := map[string]*engine.Engine{}
	for name, s := range stores {
		engines[name] = engine.New(s, clock)
		if _, _, err := engines[name].PutWorkshop(ctx, "go", engine.WorkshopSpec{Capacity: 1000, MaxQuantity: 1}, nil); err != nil {
			t.Fatal(err)
		}
	}
	actors := []string{"al", "al-b", "al-bc", "alb", "al_b", "zz", "a0"}
	var keys []engine.OperationKey
	for i := range 40 {
		if i%3 == 0 {
			keys = append(keys, engine.OperationKey(uuid.NewString()))
		} else {
			keys = append(keys, v7Key(t))
		}
	}
	decide := func() {
		for i, k := range keys {
			actor := actors[i%len(actors)]
			for name, eng := range engines {
				if _, err := eng.Reserve(ctx, actor, k, engine.Request{Workshop: "go", Quantity: 1}); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
			}
		}
	}
	decide()
	// An hour later the same keys again (replays), and new ones.
	now = now.Add(time.Hour)
	decide()
	keys = keys[:0]
	for i := range 30 {
		if i%2 == 0 {
			keys = append(keys, engine.OperationKey(uuid.NewString()))
		} else {
			keys = append(keys, v7Key(t))
		}
	}
	decide()
	// The first instant's 40 receipts expire.
	now = now.Add(2 * time.Hour)
	for name, eng := range engines {
		if n, err := eng.ExpireReceipts(ctx, 150*time.Minute, 100); err != nil || n != 40 {
			t.Fatalf("%s: ExpireReceipts = %d, %v", name, n, err)
		}
	}
	list := func(name string, f engine.OperationFilter) []string {
		return allOperations(t, engines[name], f, func(op engine.OperationRecord) string {
			return fmt.Sprintf("%s %s %s expired=%v", op.CreatedAt.Format(time.RFC3339), op.Actor, op.Operation, op.Expired)
		})
	}
	for _, limit := range []int{1, 2, 3, 7, 50} {
		for _, actor := range append([]string{""}, actors...) {
			f := engine.OperationFilter{Limit: limit, Actor: actor}
			b, m := list("bolt", f), list("mem", f)
			if !slices.Equal(b, m) {
				t.Fatalf("limit %d actor %q: bolt lists\n%q\nmemstore\n%q", limit, actor, b, m)
			}
			if actor == "" && len(b) != 70 {
				t.Fatalf("limit %d: %d operations, want 70", limit, len(b))
			}
		}
	}
	checkClean(t, bs, "after the listing")
	if findings, err := engine.CheckAt(ctx, bs, now); err != nil || len(findings) != 0 {
		t.Fatalf("engine check = %v, %v", findings, err)
	}
}

// TestReadOnlyOpenOfSchema12File: a file with receipts of UUIDv7 keys,
// opened read-only, replays them and finds their actors.
func TestReadOnlyOpenOfSchema12File(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ro.db")
	s := mustOpenPath(t, path)
	eng := engine.New(s)
	if _, _, err := eng.PutWorkshop(ctx, "go", engine.WorkshopSpec{Capacity: 1, MaxQuantity: 1}, nil); err != nil {
		t.Fatal(err)
	}
	k1, k2 := v7Key(t), v7Key(t)
	a1, err := eng.Reserve(ctx, "hank", k1, engine.Request{Workshop: "go", Quantity: 1})
	if err != nil {
		t.Fatal(err)
	}
	a2, err := eng.Reserve(ctx, "ivy", k2, engine.Request{Workshop: "go", Quantity: 1})
	if err != nil || a2.Answer.Status != engine.StatusUnavailable {
		t.Fatal(a2, err)
	}
	s.Close()
	ro, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	eng = engine.New(ro)
	for _, c := range []struct {
		actor string
		key   engine.OperationKey
		want  engine.Outcome
	}{{"hank", k1, a1}, {"ivy", k2, a2}} {
		out, err := eng.Reserve(ctx, c.actor, c.key, engine.Request{Workshop: "go", Quantity: 1})
		if err != nil || !out.Replayed || string(out.Answer.JSON()) != string(c.want.Answer.JSON()) {
			t.Errorf("read-only replay of %s: %s, %v", c.actor, out.Answer.JSON(), err)
		}
		if !hasReceiptsOf(t, ro, c.actor) {
			t.Errorf("read-only HasReceiptsOf(%s) = false", c.actor)
		}
	}
	checkClean(t, ro, "read-only")
}

// TestOperationsMixReceiptsAndTombstonesAtOneInstant: at one instant some
// receipts of both kinds of key have turned into tombstones and others have
// not; every page size lists every record once, in position order, as the
// records themselves say.
func TestOperationsMixReceiptsAndTombstonesAtOneInstant(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	clock := engine.WithClock(func() time.Time { return now })
	s := mustOpenPath(t, filepath.Join(t.TempDir(), "mix.db"))
	defer s.Close()
	eng := engine.New(s, clock)
	if _, _, err := eng.PutWorkshop(ctx, "go", engine.WorkshopSpec{Capacity: 1000, MaxQuantity: 1}, nil); err != nil {
		t.Fatal(err)
	}
	actors := []string{"al", "al-b", "alb", "al_b", "zz"}
	for i := range 45 {
		k := v7Key(t)
		if i%3 == 0 {
			k = engine.OperationKey(uuid.NewString())
		}
		if _, err := eng.Reserve(ctx, actors[i%len(actors)], k, engine.Request{Workshop: "go", Quantity: 1}); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(2 * time.Hour)
	if n, err := eng.ExpireReceipts(ctx, time.Hour, 17); err != nil || n != 17 {
		t.Fatalf("ExpireReceipts = %d, %v", n, err)
	}
	type rec struct {
		p       engine.TimePosition
		expired bool
	}
	var all []rec
	err := s.View(ctx, func(tx engine.Tx) error {
		if err := tx.ForEachReceipt(func(r engine.Receipt) error { all = append(all, rec{engine.ReceiptPosition(r), false}); return nil }); err != nil {
			return err
		}
		return tx.ForEachTombstone(func(ts engine.Tombstone) error {
			all = append(all, rec{engine.TombstonePosition(ts), true})
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(all, func(a, b rec) int { return a.p.Compare(b.p) })
	var want []string
	for _, r := range all {
		want = append(want, fmt.Sprintf("%s %s %v", r.p.Actor, r.p.Key, r.expired))
	}
	for _, actor := range append([]string{""}, actors...) {
		for _, limit := range []int{1, 2, 5, 16, 100} {
			got := allOperations(t, eng, engine.OperationFilter{Limit: limit, Actor: actor}, func(op engine.OperationRecord) string {
				return fmt.Sprintf("%s %s %v", op.Actor, op.Operation, op.Expired)
			})
			var w []string
			for i, r := range all {
				if actor == "" || r.p.Actor == actor {
					w = append(w, want[i])
				}
			}
			if !slices.Equal(got, w) {
				t.Fatalf("actor %q limit %d:\n%q\nwant\n%q", actor, limit, got, w)
			}
		}
	}
	checkClean(t, s, "mixed")
}

// allOperations pages through the operations view of eng from the start
// of f and returns every record, each as show writes it.
func allOperations(t *testing.T, eng *engine.Engine, f engine.OperationFilter, show func(engine.OperationRecord) string) []string {
	t.Helper()
	var got []string
	for page := 0; ; page++ {
		if page > 1000 {
			t.Fatal("the pages do not end")
		}
		ops, next, err := eng.Operations(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range ops {
			got = append(got, show(op))
		}
		if next == "" {
			return got
		}
		f.After = next
	}
}
