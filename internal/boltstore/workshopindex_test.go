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

// TestWorkshopIndex: a file without the indexes by workshop (as a schema 7
// file is) lists a workshop's attendees through a read-only open by
// reading every record, and gets the indexes when it is opened for
// writing; the list and the limit per person then read the index, whose
// damage Check names.
func TestWorkshopIndex(t *testing.T) {
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
	for i := range 4 {
		for _, actor := range []string{fmt.Sprintf("bob%d", i), "alice"} {
			out, err := eng.Reserve(ctx, actor, engine.OperationKey(uuid.NewString()), engine.Request{Workshop: "go-basics", Quantity: 1})
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, actor+"/"+out.Answer.ReservationID)
		}
	}
	slices.Sort(want) // By actor, then id.
	s.Close()
	edit := func(fn func(tx *bolt.Tx) error) { t.Helper(); rawUpdate(t, path, fn) }
	edit(func(tx *bolt.Tx) error {
		for _, b := range []string{"reservations_by_workshop", "holds_by_workshop"} {
			if err := tx.DeleteBucket([]byte(b)); err != nil {
				return err
			}
		}
		return tx.Bucket([]byte("meta")).Put([]byte("schema"), []byte{0, 0, 0, 0, 0, 0, 0, 7})
	})
	admin := engine.Principal{Actor: "ops", Admin: true}
	list := func(st engine.Store) []string {
		t.Helper()
		as, _, err := engine.New(st).Attendees(ctx, admin, "go-basics", engine.AttendeeFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, a := range as {
			got = append(got, a.Actor+"/"+a.ReservationID)
		}
		return got
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

	// Without the entry of alice's first reservation, the list does not
	// show it, and Check names the difference.
	edit(func(tx *bolt.Tx) error {
		id := want[0][len("alice/"):]
		return tx.Bucket([]byte("reservations_by_workshop")).Delete([]byte("go-basics\x00alice\x00" + id))
	})
	s = mustOpenPath(t, path)
	defer s.Close()
	if got := list(s); !slices.Equal(got, want[1:]) {
		t.Errorf("list without an entry = %v, want %v", got, want[1:])
	}
	findings, err := s.Check(ctx)
	if err != nil || len(findings) != 1 || findings[0].Kind != engine.FindingWorkshopIndex {
		t.Errorf("check with an entry missing = %v, %v; want one %s", findings, err, engine.FindingWorkshopIndex)
	}
}
