package boltstore_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
)

func v7Key(t testing.TB) engine.OperationKey {
	t.Helper()
	k, err := engine.NewOperationKey()
	if err != nil || !k.IsTimeOrdered() {
		t.Fatalf("NewOperationKey = %q, %v", k, err)
	}
	return k
}

func hasReceiptsOf(t *testing.T, s *boltstore.Store, actor string) bool {
	t.Helper()
	var has bool
	err := s.View(context.Background(), func(tx engine.Tx) (err error) {
		has, err = tx.HasReceiptsOf(actor)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return has
}

// checksClean fails t, naming when, unless the engine's check at now and
// the store's own check find nothing.
func checksClean(t *testing.T, s *boltstore.Store, now time.Time, when string) {
	t.Helper()
	if findings, err := engine.CheckAt(context.Background(), s, now); err != nil || len(findings) != 0 {
		t.Errorf("%s: engine check: %v, %v", when, findings, err)
	}
	if findings, err := s.Check(context.Background()); err != nil || len(findings) != 0 {
		t.Errorf("%s: check: %v, %v", when, findings, err)
	}
}

func checkClean(t *testing.T, s *boltstore.Store, when string) {
	t.Helper()
	if findings, err := s.Check(context.Background()); err != nil || len(findings) != 0 {
		t.Fatalf("%s: check = %v, %v", when, findings, err)
	}
}

// TestTimeOrderedKeysAreStoredByKey: the receipt of a UUIDv7 key is stored
// under 0x00 key actor and that of a UUIDv4 key under actor 0x00 key; both
// replay byte for byte, also after a reopen and after they turn into
// tombstones (stored the same way), and an actor known only by receipts of
// UUIDv7 keys is found by HasReceiptsOf.
func TestTimeOrderedKeysAreStoredByKey(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "keys.db")
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	clock := engine.WithClock(func() time.Time { return now })
	s := mustOpenPath(t, path)
	eng := engine.New(s, clock)
	if _, _, err := eng.PutWorkshop(ctx, "go", engine.WorkshopSpec{Capacity: 10, MaxQuantity: 2}, nil); err != nil {
		t.Fatal(err)
	}
	random, ordered := engine.OperationKey(uuid.NewString()), v7Key(t)
	req := engine.Request{Workshop: "go", Quantity: 1}
	first := map[engine.OperationKey]string{}
	for _, k := range []engine.OperationKey{random, ordered} {
		out, err := eng.Reserve(ctx, "alice", k, req)
		if err != nil || out.Answer.Status != engine.StatusReserved {
			t.Fatalf("reserve under %s = %+v, %v", k, out, err)
		}
		first[k] = string(out.Answer.JSON())
	}
	if hasReceiptsOf(t, s, "bob") {
		t.Fatal("bob has receipts before he reserved")
	}
	bobKey := v7Key(t)
	if _, err := eng.Reserve(ctx, "bob", bobKey, req); err != nil {
		t.Fatal(err)
	}
	if !hasReceiptsOf(t, s, "bob") {
		t.Fatal("HasReceiptsOf(bob) = false after bob reserved under a UUIDv7 key")
	}
	checkClean(t, s, "after the reservations")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	receipts := bucketOf(t, path, "receipts")
	for _, want := range []string{"alice\x00" + string(random), "\x00" + string(ordered) + "alice", "\x00" + string(bobKey) + "bob"} {
		if _, ok := receipts[want]; !ok {
			t.Errorf("no receipt stored under %q; the receipts are under %q", want, slices.Sorted(mapKeys(receipts)))
		}
	}
	if got := bucketOf(t, path, "actors_time_keyed"); len(got) != 2 || got["alice"] != "" || got["bob"] != "" {
		t.Errorf("actors_time_keyed = %q, want alice and bob", got)
	}

	s = mustOpenPath(t, path)
	eng = engine.New(s, clock)
	for k, want := range first {
		out, err := eng.Reserve(ctx, "alice", k, req)
		if err != nil || !out.Replayed || string(out.Answer.JSON()) != want {
			t.Errorf("replay of %s = %s (replayed %v), %v; want %s", k, out.Answer.JSON(), out.Replayed, err, want)
		}
	}

	// A day later every receipt turns into a tombstone, under the same key.
	now = now.Add(24 * time.Hour)
	if n, err := eng.ExpireReceipts(ctx, time.Hour, 100); err != nil || n != 3 {
		t.Fatalf("ExpireReceipts = %d, %v; want 3", n, err)
	}
	for _, k := range []engine.OperationKey{random, ordered} {
		if _, err := eng.Reserve(ctx, "alice", k, req); engine.ErrorCode(err) != engine.CodeOperationExpired {
			t.Errorf("retry of %s after expiry: %v, want %s", k, err, engine.CodeOperationExpired)
		}
	}
	if !hasReceiptsOf(t, s, "bob") || !hasReceiptsOf(t, s, "alice") {
		t.Error("HasReceiptsOf is false for an actor with tombstones")
	}
	checkClean(t, s, "after the expiry")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	tombstones := bucketOf(t, path, "tombstones")
	for _, want := range []string{"alice\x00" + string(random), "\x00" + string(ordered) + "alice", "\x00" + string(bobKey) + "bob"} {
		if _, ok := tombstones[want]; !ok {
			t.Errorf("no tombstone stored under %q; the tombstones are under %q", want, slices.Sorted(mapKeys(tombstones)))
		}
	}
	if got := bucketOf(t, path, "receipts"); len(got) != 0 {
		t.Errorf("receipts after the expiry = %q, want none", got)
	}
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestOperationsAtOneInstantKeepTheirOrder: receipts of both kinds of key
// decided at the same instant are listed, page by page, in the order of
// their position (actor, then key), each once, as the time index orders
// the entries of one time whatever the form of the record's key.
func TestOperationsAtOneInstantKeepTheirOrder(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	s := mustOpenPath(t, filepath.Join(t.TempDir(), "ops.db"))
	eng := engine.New(s, engine.WithClock(func() time.Time { return now }))
	if _, _, err := eng.PutWorkshop(ctx, "go", engine.WorkshopSpec{Capacity: 1000, MaxQuantity: 1}, nil); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, actor := range []string{"dave", "alice", "carol", "bob"} {
		for i := range 10 {
			k := engine.OperationKey(uuid.NewString())
			if i%2 == 0 {
				k = v7Key(t)
			}
			if _, err := eng.Reserve(ctx, actor, k, engine.Request{Workshop: "go", Quantity: 1}); err != nil {
				t.Fatal(err)
			}
			want = append(want, actor+" "+string(k))
		}
	}
	slices.Sort(want)
	var got []string
	after := ""
	for page := 0; ; page++ {
		if page > len(want) {
			t.Fatal("the pages do not end")
		}
		ops, next, err := eng.Operations(ctx, engine.OperationFilter{Limit: 7, After: after})
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range ops {
			got = append(got, op.Actor+" "+string(op.Operation))
		}
		if next == "" {
			break
		}
		after = next
	}
	if !slices.Equal(got, want) {
		t.Errorf("the operations at one instant, page by page =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCheckFindsAnActorMissingFromTheKeyedActors: an actor whose receipt
// of a UUIDv7 key is not listed among the actors with such receipts is a
// finding, since HasReceiptsOf would not see it.
func TestCheckFindsAnActorMissingFromTheKeyedActors(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "marks.db")
	s := mustOpenPath(t, path)
	eng := engine.New(s)
	if _, _, err := eng.PutWorkshop(ctx, "go", engine.WorkshopSpec{Capacity: 10, MaxQuantity: 1}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Reserve(ctx, "erin", v7Key(t), engine.Request{Workshop: "go", Quantity: 1}); err != nil {
		t.Fatal(err)
	}
	checkClean(t, s, "before")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("actors_time_keyed")).Delete([]byte("erin")) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s = mustOpenPath(t, path)
	findings, err := s.Check(ctx)
	if err != nil || len(findings) != 1 || !strings.Contains(findings[0].Detail, "actor erin is missing") {
		t.Fatalf("check = %v, %v; want erin's receipt named", findings, err)
	}
	if hasReceiptsOf(t, s, "erin") {
		t.Fatal("HasReceiptsOf(erin) without her mark: the test does not remove what it means to")
	}
}
