package boltstore_test

import (
	"context"
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
)

// dropTimeIndexes removes the buckets of the time indexes, which files of
// schema versions 1 to 3 do not have.
func dropTimeIndexes(tx *bolt.Tx) error {
	for _, name := range []string{"receipts_by_time", "tombstones_by_time"} {
		if err := tx.DeleteBucket([]byte(name)); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
			return err
		}
	}
	return nil
}

// rawUpdate changes the file at path with bbolt directly.
func rawUpdate(t *testing.T, path string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
}

// TestSchema3FileGetsTimeIndexes: a file as schema version 3 wrote it (no
// time indexes) shows the same operations view when opened read-only, which
// leaves it as it is, and when opened for writing, which builds the indexes
// and marks it version 4; its receipts then replay byte for byte, the old
// ones expire and the check is clean.
func TestSchema3FileGetsTimeIndexes(t *testing.T) {
	path := newFile(t)
	var now atomic.Int64
	start := time.Date(2026, 11, 29, 12, 0, 0, 123456789, time.UTC)
	clock := func() time.Time { return start.Add(time.Duration(now.Load())) }
	ctx := context.Background()
	type replay struct {
		actor string
		key   engine.OperationKey
		body  string
	}
	var replays []replay
	var want []engine.OperationRecord
	func() {
		s := mustOpenPath(t, path)
		eng := engine.New(s, engine.WithClock(clock))
		if _, _, err := eng.PutWorkshop(ctx, "go-basics", engine.WorkshopSpec{Capacity: 100, MaxQuantity: 2}, nil); err != nil {
			t.Fatal(err)
		}
		for i, actor := range []string{"alice", "bob", "alice", "carol", "bob", "alice"} {
			now.Store(int64(i) * int64(time.Second))
			key := engine.OperationKey("f47ac10b-58cc-4372-a567-0e02b2c3d47" + string(rune('0'+i)))
			out, err := eng.Reserve(ctx, actor, key, engine.Request{Workshop: "go-basics", Quantity: 1})
			if err != nil {
				t.Fatal(err)
			}
			replays = append(replays, replay{actor, key, string(out.Answer.JSON())})
		}
		// The first two become tombstones.
		now.Store(int64(24*time.Hour + 1500*time.Millisecond))
		if n, err := eng.ExpireReceipts(ctx, 24*time.Hour, 100); err != nil || n != 2 {
			t.Fatalf("ExpireReceipts = %d, %v; want 2", n, err)
		}
		replays = replays[2:]
		var err error
		if want, _, err = eng.Operations(ctx, engine.OperationFilter{}); err != nil || len(want) != 6 {
			t.Fatalf("operations = %+v, %v", want, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	rawUpdate(t, path, func(tx *bolt.Tx) error {
		if err := tx.Bucket([]byte("meta")).Put([]byte("schema"), binary.BigEndian.AppendUint64(nil, 3)); err != nil {
			return err
		}
		return dropTimeIndexes(tx)
	})
	pages := func(eng *engine.Engine) []engine.OperationRecord {
		t.Helper()
		var all []engine.OperationRecord
		f := engine.OperationFilter{Limit: 4}
		for {
			ops, next, err := eng.Operations(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, ops...)
			if next == "" {
				return all
			}
			f.After = next
		}
	}

	ro, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := pages(engine.New(ro)); !reflect.DeepEqual(got, want) {
		t.Errorf("read-only operations view of a version 3 file = %+v, want %+v", got, want)
	}
	ro.Close()
	if v := schemaOf(t, path); v != 3 {
		t.Fatalf("a read-only open changed the schema version to %d", v)
	}

	s := mustOpenPath(t, path)
	eng := engine.New(s, engine.WithClock(clock))
	if got := pages(eng); !reflect.DeepEqual(got, want) {
		t.Errorf("operations view after the upgrade = %+v, want %+v", got, want)
	}
	for _, r := range replays {
		out, err := eng.Reserve(ctx, r.actor, r.key, engine.Request{Workshop: "go-basics", Quantity: 1})
		if err != nil || !out.Replayed || string(out.Answer.JSON()) != r.body {
			t.Errorf("replay of %s/%s = %s, %v; want %s", r.actor, r.key, out.Answer.JSON(), err, r.body)
		}
	}
	if findings, err := s.Check(ctx); err != nil || len(findings) != 0 {
		t.Fatalf("check after the upgrade: %v, %v", findings, err)
	}
	now.Store(int64(24*time.Hour + 3500*time.Millisecond))
	if n, err := eng.ExpireReceipts(ctx, 24*time.Hour, 100); err != nil || n != 2 {
		t.Fatalf("ExpireReceipts after the upgrade = %d, %v; want 2", n, err)
	}
	if findings, err := s.Check(ctx); err != nil || len(findings) != 0 {
		t.Fatalf("check after the expiry: %v, %v", findings, err)
	}
	s.Close()
	if v := schemaOf(t, path); v != boltstore.SchemaVersion {
		t.Fatalf("schema version after a writing open = %d, want %d", v, boltstore.SchemaVersion)
	}
}

// schemaOf reads the schema version of the file at path.
func schemaOf(t *testing.T, path string) uint64 {
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

// TestCheckFindsTimeIndexMismatches: Check reports a receipt without its
// index entry, an entry that names no receipt, and one that names a receipt
// at another time, and the scans pass over the wrong entries.
func TestCheckFindsTimeIndexMismatches(t *testing.T) {
	path := newFile(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	s := mustOpenPath(t, path)
	eng := engine.New(s, engine.WithClock(func() time.Time { return at }))
	if _, _, err := eng.PutWorkshop(ctx, "go-basics", engine.WorkshopSpec{Capacity: 100, MaxQuantity: 2}, nil); err != nil {
		t.Fatal(err)
	}
	keys := []engine.OperationKey{"f47ac10b-58cc-4372-a567-0e02b2c3d470", "f47ac10b-58cc-4372-a567-0e02b2c3d471"}
	for _, key := range keys {
		if _, err := eng.Reserve(ctx, "alice", key, engine.Request{Workshop: "go-basics", Quantity: 1}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	entry := func(at time.Time, key string) []byte {
		return append(binary.BigEndian.AppendUint64(nil, uint64(at.UnixNano())^1<<63), "alice\x00"+key...)
	}
	rawUpdate(t, path, func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("receipts_by_time"))
		if err := b.Delete(entry(at, string(keys[0]))); err != nil {
			return err
		}
		if err := b.Put(entry(at.Add(time.Hour), "f47ac10b-58cc-4372-a567-0e02b2c3d479"), nil); err != nil {
			return err
		}
		return b.Put(entry(at.Add(-time.Hour), string(keys[1])), nil)
	})
	s = mustOpenPath(t, path)
	findings, err := s.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range findings {
		if f.Kind != engine.FindingTimeIndex {
			t.Errorf("finding %s", f)
		}
		got = append(got, f.Detail)
	}
	for _, want := range []string{
		"visits 1 of them, the store holds 2",
		`receipts/"alice\x00` + string(keys[0]) + `" (created 2026-11-29T12:00:00Z) has no entry in receipts_by_time`,
		`names receipts/"alice\x00f47ac10b-58cc-4372-a567-0e02b2c3d479", which does not exist`,
		`(created 2026-11-29T11:00:00Z) names receipts/"alice\x00` + string(keys[1]) + `", which was created 2026-11-29T12:00:00Z`,
	} {
		if !strings.Contains(strings.Join(got, "\n"), want) {
			t.Errorf("findings %q lack %q", got, want)
		}
	}
	if len(got) != 4 {
		t.Errorf("findings %q, want 4", got)
	}
	ops, _, err := engine.New(s).Operations(ctx, engine.OperationFilter{})
	if err != nil || len(ops) != 1 || ops[0].Operation != keys[1] {
		t.Fatalf("operations view = %+v, %v; want only the receipt its entry names", ops, err)
	}
}
