package boltstore_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
)

// fixtureAnswer is one answer that a reserved of an earlier schema gave
// while it wrote a dump of testdata: to actor's reservation req, or hold
// request hold, under key.
type fixtureAnswer struct {
	actor, key string
	hold       *engine.HoldRequest
	req        engine.Request
	body       string
}

// replayFixture sends every request of answers again, on s at now, as the
// actor actorOf names for its actor (the same one when absent), and fails
// t, naming when, unless each replays its answer byte for byte.
func replayFixture(t *testing.T, s *boltstore.Store, now time.Time, answers []fixtureAnswer, actorOf map[string]string, when string) {
	t.Helper()
	ctx := context.Background()
	eng := engine.New(s, engine.WithClock(func() time.Time { return now }))
	for _, a := range answers {
		actor := a.actor
		if bound, ok := actorOf[a.actor]; ok {
			actor = bound
		}
		var out engine.Outcome
		var err error
		if a.hold != nil {
			out, err = eng.Hold(ctx, actor, engine.OperationKey(a.key), *a.hold)
		} else {
			out, err = eng.Reserve(ctx, actor, engine.OperationKey(a.key), a.req)
		}
		if err != nil || !out.Replayed || string(out.Answer.JSON()) != a.body {
			t.Errorf("%s: replay of %s's %s = %s (replayed %t), %v; want %s", when, actor, a.key, out.Answer.JSON(), out.Replayed, err, a.body)
		}
	}
}

// schema4Answers are the answers reserved of schema version 4 gave to the
// requests that wrote testdata/schema4.dump, at 2026-12-01T12:00:00Z.
var schema4Answers = []fixtureAnswer{
	{"alice", "f47ac10b-58cc-4372-a567-0e02b2c3d479", nil, engine.Request{Workshop: "go-basics", Quantity: 2},
		`{"status":"reserved","reservation_id":"01a23179de007e8ed34e81af197b582d","workshop":"go-basics","quantity":2}`},
	{"bob", "0b7e5d2c-8f0a-4f57-9b1e-2d1c3a4b5c6d", nil, engine.Request{Workshop: "full", Quantity: 1},
		`{"status":"reserved","reservation_id":"01a23179de00e1e580c6e2e9bacba76c","workshop":"full","quantity":1}`},
	{"alice", "5c6d7e8f-9a0b-4c1d-8e2f-3a4b5c6d7e8f", nil, engine.Request{Workshop: "full", Quantity: 1},
		`{"status":"unavailable","workshop":"full","quantity":1}`},
	{"carol", "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d", &engine.HoldRequest{Workshop: "go-basics", Quantity: 3, TTLSeconds: 600}, engine.Request{},
		`{"status":"held","hold_id":"01a23179de00eb1831b5d66bd7aaeae1","workshop":"go-basics","quantity":3,"expires_at":"2026-12-01T12:10:00Z"}`},
}

// loadDump writes the records of a dump (lines of bucket, hex key and hex
// value) into a new bbolt file and returns its path and the records by
// bucket.
func loadDump(t *testing.T, dump string) (string, map[string]map[string]string) {
	t.Helper()
	records, err := boltstore.ReadDump(dump)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "reserved.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		for name, kvs := range records {
			b, err := tx.CreateBucket([]byte(name))
			if err != nil {
				return err
			}
			for k, v := range kvs {
				if err := b.Put([]byte(k), []byte(v)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return path, records
}

// TestSchema4File opens a file as reserved of schema version 4 wrote it:
// every answer replays byte for byte, before and after the writing open
// that marks it with the current version, which changes no record of it;
// a workshop hidden afterwards is the only record in the new format.
func TestSchema4File(t *testing.T) {
	path, records := loadDump(t, "testdata/schema4.dump")
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 12, 1, 0, 0, time.UTC)
	replay := func(s *boltstore.Store, when string) {
		t.Helper()
		replayFixture(t, s, now, schema4Answers, nil, when)
	}

	ro, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	replay(ro, "read-only")
	ro.Close()

	s := mustOpenPath(t, path)
	replay(s, "after the upgrade")
	if findings, err := s.Check(ctx); err != nil || len(findings) != 0 {
		t.Errorf("check after the upgrade: %v, %v", findings, err)
	}
	eng := engine.New(s, engine.WithClock(func() time.Time { return now }))
	ws, err := eng.Workshops(ctx, false)
	if err != nil || len(ws) != 2 || ws[0].Hidden || ws[1].Hidden {
		t.Fatalf("workshops of a version 4 file = %+v, %v", ws, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if v := schemaOf(t, path); v != boltstore.SchemaVersion {
		t.Errorf("schema version after a writing open = %d, want %d", v, boltstore.SchemaVersion)
	}
	sameRecords(t, path, records, "meta")

	s = mustOpenPath(t, path)
	hidden := true
	eng = engine.New(s, engine.WithClock(func() time.Time { return now }))
	if _, _, err := eng.PutWorkshop(ctx, "full", engine.WorkshopSpec{Capacity: 1, Hidden: &hidden}, nil); err != nil {
		t.Fatal(err)
	}
	if ws, err := eng.Workshops(ctx, false); err != nil || len(ws) != 1 || ws[0].ID != "go-basics" {
		t.Errorf("listed workshops after hiding one = %+v, %v", ws, err)
	}
	if ws, err := eng.Workshops(ctx, true); err != nil || len(ws) != 2 || !ws[0].Hidden || ws[0].ID != "full" {
		t.Errorf("all workshops after hiding one = %+v, %v", ws, err)
	}
	replay(s, "after hiding a workshop")
	s.Close()
	delete(records["workshops"], "full")
	sameRecords(t, path, records, "meta")
}

// sameRecords fails unless every record of want, in every bucket but
// except, is in the file at path byte for byte.
// upgradeKeepsRecords opens the file at path, which schema version from
// wrote with records, read-only and then for writing, and calls same with
// each store: the read-only open leaves the version as it was, the writing
// one upgrades it to this version, and neither changes a record but the
// meta bucket.
func upgradeKeepsRecords(t *testing.T, path string, from uint64, records map[string]map[string]string, same func(*boltstore.Store, string)) {
	t.Helper()
	ro, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	same(ro, "read-only")
	ro.Close()
	if v := schemaOf(t, path); v != from {
		t.Fatalf("schema version after a read-only open = %d, want %d", v, from)
	}

	s := mustOpenPath(t, path)
	same(s, "after the upgrade")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if v := schemaOf(t, path); v != boltstore.SchemaVersion {
		t.Errorf("schema version after a writing open = %d, want %d, which a reserved of version %d refuses", v, boltstore.SchemaVersion, from)
	}
	sameRecords(t, path, records, "meta")
}

func sameRecords(t *testing.T, path string, want map[string]map[string]string, except string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *bolt.Tx) error {
		for name, kvs := range want {
			if name == except {
				continue
			}
			b := tx.Bucket([]byte(name))
			for k, v := range kvs {
				if b == nil || !bytes.Equal(b.Get([]byte(k)), []byte(v)) {
					t.Errorf("record %s %x changed", name, k)
				}
			}
		}
		return nil
	})
}
