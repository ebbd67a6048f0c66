package boltstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
)

// TestActorIndex: a file without the indexes by actor (as a schema 3 file
// is) lists a person's reservations through a read-only open by reading
// every record, and gets the indexes when it is opened for writing; the
// list is then read through the index, which a missing entry shows.
func TestActorIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reserved.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	eng := engine.New(s)
	if _, _, err := eng.PutWorkshop(ctx, "go-basics", engine.WorkshopSpec{Capacity: 100, MaxQuantity: 1}, nil); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 6 {
		out, err := eng.Reserve(ctx, "alice", engine.OperationKey(uuid.NewString()), engine.Request{Workshop: "go-basics", Quantity: 1})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, out.Answer.ReservationID)
		if _, err := eng.Reserve(ctx, fmt.Sprintf("bob%d", i), engine.OperationKey(uuid.NewString()), engine.Request{Workshop: "go-basics", Quantity: 1}); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(want)
	slices.Reverse(want)
	s.Close()
	edit := func(fn func(tx *bolt.Tx) error) { t.Helper(); rawUpdate(t, path, fn) }
	edit(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket([]byte("reservations_by_actor")); err != nil {
			return err
		}
		if err := tx.DeleteBucket([]byte("holds_by_actor")); err != nil {
			return err
		}
		return tx.Bucket([]byte("meta")).Put([]byte("schema"), []byte{0, 0, 0, 0, 0, 0, 0, 3})
	})
	list := func(st engine.Store) []string {
		t.Helper()
		rs, _, err := engine.New(st).Reservations(ctx, engine.Principal{Actor: "alice"}, engine.ListFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range rs {
			ids = append(ids, r.ID)
		}
		return ids
	}
	ro, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := list(ro); !slices.Equal(got, want) {
		t.Errorf("read-only list without the index = %v, want %v", got, want)
	}
	if findings, err := ro.Check(ctx); err != nil || len(findings) != 0 {
		t.Errorf("read-only check without the index: %v, %v", findings, err)
	}
	ro.Close()

	s = mustOpenPath(t, path)
	if got := list(s); !slices.Equal(got, want) {
		t.Errorf("list after the upgrade = %v, want %v", got, want)
	}
	if findings, err := s.Check(ctx); err != nil || len(findings) != 0 {
		t.Errorf("check after the upgrade: %v, %v", findings, err)
	}
	s.Close()

	// The list reads the index: without the entry of the newest, the list
	// does not show it, and Check names the difference.
	edit(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("reservations_by_actor")).Delete([]byte("alice\x00" + want[0]))
	})
	s = mustOpenPath(t, path)
	if got := list(s); !slices.Equal(got, want[1:]) {
		t.Errorf("list without the newest entry = %v, want %v", got, want[1:])
	}
	wantActorFindings := func(what string) {
		t.Helper()
		findings, err := s.Check(ctx)
		if err != nil || len(findings) == 0 {
			t.Errorf("check with %s = %v, %v", what, findings, err)
		}
		for _, f := range findings {
			if f.Kind != engine.FindingActorIndex {
				t.Errorf("check with %s: %s", what, f)
			}
		}
	}
	wantActorFindings("an entry missing")
	s.Close()

	// An entry that names another actor's reservation never shows it.
	edit(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("reservations_by_actor")).Put([]byte("mallory\x00"+want[1]), []byte{})
	})
	s = mustOpenPath(t, path)
	rs, _, err := engine.New(s).Reservations(ctx, engine.Principal{Actor: "mallory"}, engine.ListFilter{Status: engine.ListAll})
	if err != nil || len(rs) != 0 {
		t.Errorf("mallory's list through a stale entry = %+v, %v; want nothing", rs, err)
	}
	wantActorFindings("an entry of another actor")
}
