package boltstore_test

import (
	"context"
	"encoding/binary"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/engine/enginetest"
)

// mustOpen opens a store on a fresh file in a temporary directory and closes
// it when the test ends.
func mustOpen(tb testing.TB, opts boltstore.Options) *boltstore.Store {
	tb.Helper()
	s, err := boltstore.Open(filepath.Join(tb.TempDir(), "reserved.db"), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Error(err)
		}
	})
	return s
}

func TestConformanceGroupCommit(t *testing.T) {
	enginetest.Run(t, func(tb testing.TB) engine.Store { return mustOpen(tb, boltstore.Options{}) })
}

func TestConformanceNoGroupCommit(t *testing.T) {
	enginetest.Run(t, func(tb testing.TB) engine.Store { return mustOpen(tb, boltstore.Options{NoGroupCommit: true}) })
}

func TestInUseByAnotherProcess(t *testing.T) {
	// bbolt's flock is per open file description, so a second Open in the
	// same process contends exactly like a second daemon would.
	path := filepath.Join(t.TempDir(), "reserved.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = boltstore.Open(path, boltstore.Options{LockTimeout: 50e6})
	if err == nil || err.Error() != "database "+path+" is in use by another reserved" {
		t.Fatalf("second open: %v", err)
	}
}

func TestNewerSchemaIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reserved.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("schema"), []byte{0, 0, 0, 0, 0, 0, 0, 99})
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = boltstore.Open(path, boltstore.Options{})
	if err == nil || !strings.Contains(err.Error(), "schema version 99, newer than this reserved understands (3)") {
		t.Fatalf("open of newer schema: %v", err)
	}
}

// TestSchemaUpgrade: a version 1 file (JSON workshop records) is read by a
// read-only open as it is and marked version 2 by a writing open; its JSON
// workshop still reads and is rewritten in the binary layout.
func TestSchemaUpgrade(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reserved.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	setRaw := func(bucket, key string, value []byte) {
		t.Helper()
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte(bucket)).Put([]byte(key), value) }); err != nil {
			t.Fatal(err)
		}
	}
	schema := func() uint64 {
		t.Helper()
		db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var v uint64
		db.View(func(tx *bolt.Tx) error {
			v = binary.BigEndian.Uint64(tx.Bucket([]byte("meta")).Get([]byte("schema")))
			return nil
		})
		return v
	}
	setRaw("meta", "schema", []byte{0, 0, 0, 0, 0, 0, 0, 1})
	setRaw("workshops", "go-basics", []byte(`{"id":"go-basics","title":"Go","capacity":3,"reserved":0,"max_quantity":2,"version":1}`))
	ctx := context.Background()
	ro, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	ro.Close()
	if v := schema(); v != 1 {
		t.Fatalf("a read-only open changed the schema version to %d", v)
	}
	s, err = boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out, err := engine.New(s).Reserve(ctx, "alice", engine.OperationKey(uuid.NewString()), engine.Request{Workshop: "go-basics", Quantity: 2})
	if err != nil || out.HTTPStatus != 201 {
		t.Fatalf("reserve in the version 1 workshop: %+v %v", out, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if v := schema(); v != boltstore.SchemaVersion {
		t.Errorf("schema version after a writing open = %d, want %d", v, boltstore.SchemaVersion)
	}
}

func TestNotAReservedDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "other.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("meta")); return err })
	db.Close()
	if _, err := boltstore.Open(path, boltstore.Options{}); err == nil || !strings.Contains(err.Error(), "no readable schema version") {
		t.Fatalf("open of foreign database: %v", err)
	}
}

func TestReopenKeepsEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reserved.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Created() {
		t.Fatal("opening a new file does not say it created it")
	}
	ctx := context.Background()
	eng := engine.New(s)
	if _, _, err := eng.PutWorkshop(ctx, "go-basics", engine.WorkshopSpec{Capacity: 3, MaxQuantity: 2}, nil); err != nil {
		t.Fatal(err)
	}
	key := engine.OperationKey("f47ac10b-58cc-4372-a567-0e02b2c3d479")
	first, err := eng.Reserve(ctx, "alice", key, engine.Request{Workshop: "go-basics", Quantity: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Reserve(ctx, "alice", key, engine.Request{Workshop: "go-basics", Quantity: 2}); err == nil {
		t.Fatal("Reserve on a closed store succeeded")
	}
	s = mustOpenPath(t, path)
	if s.Created() {
		t.Fatal("reopening a file says it created it")
	}
	again, err := engine.New(s).Reserve(ctx, "alice", key, engine.Request{Workshop: "go-basics", Quantity: 2})
	if err != nil || !again.Replayed || string(again.Body) != string(first.Body) {
		t.Fatalf("replay after reopen = %+v %v, want %s", again, err, first.Body)
	}
}

func mustOpenPath(tb testing.TB, path string) *boltstore.Store {
	tb.Helper()
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}
