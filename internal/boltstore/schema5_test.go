package boltstore_test

import (
	"context"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
)

// schema5Answers are the answers reserved of schema version 5 gave to the
// requests that wrote testdata/schema5.dump, at 2026-12-01T12:00:00Z: the
// socket actors unix-alice, unix-carol and uid-1001 as that version named
// uids 1000, 1002 and 1001 (which had no name then), and the token actor
// alice.
var schema5Answers = []fixtureAnswer{
	{"unix-alice", "f47ac10b-58cc-4372-a567-0e02b2c3d479", nil, engine.Request{Workshop: "go-basics", Quantity: 2},
		`{"status":"reserved","reservation_id":"01a23179de006616f9ef28a58323921f","workshop":"go-basics","quantity":2}`},
	{"uid-1001", "0b7e5d2c-8f0a-4f57-9b1e-2d1c3a4b5c6d", nil, engine.Request{Workshop: "full", Quantity: 1},
		`{"status":"reserved","reservation_id":"01a23179de002e712b2e07aa248111b7","workshop":"full","quantity":1}`},
	{"unix-alice", "5c6d7e8f-9a0b-4c1d-8e2f-3a4b5c6d7e8f", nil, engine.Request{Workshop: "full", Quantity: 1},
		`{"status":"unavailable","workshop":"full","quantity":1}`},
	{"unix-carol", "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d", &engine.HoldRequest{Workshop: "go-basics", Quantity: 2, TTLSeconds: 600}, engine.Request{},
		`{"status":"held","hold_id":"01a23179de003d476b493c273939777e","workshop":"go-basics","quantity":2,"expires_at":"2026-12-01T12:10:00Z"}`},
	{"alice", "2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e", nil, engine.Request{Workshop: "backstage", Quantity: 1},
		`{"status":"reserved","reservation_id":"01a23179de003f83956b17098d757136","workshop":"backstage","quantity":1}`},
}

// TestSchema5File opens a file as reserved of schema version 5 wrote it,
// which has no bindings: every answer replays byte for byte, read-only and
// after the writing open that adds the (empty) buckets of the bindings and
// marks it with the current version without changing any record; then
// each uid's first request binds it to the actor name it resolves to then
// (unix-alice for uid 1000, which has that name; uid-1001 for uid 1001,
// which still has none), so it keeps its receipts, and binding changes no
// record either.
func TestSchema5File(t *testing.T) {
	path, records := loadDump(t, "testdata/schema5.dump")
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 12, 1, 0, 0, time.UTC)
	replay := func(s *boltstore.Store, when string, actorOf map[string]string) {
		t.Helper()
		replayFixture(t, s, now, schema5Answers, actorOf, when)
	}
	noBindings := func(s *boltstore.Store, when string) {
		t.Helper()
		err := s.View(ctx, func(tx engine.Tx) error {
			return tx.ForEachBinding(func(b engine.Binding) error {
				t.Errorf("%s: binding %+v", when, b)
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	ro, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	replay(ro, "read-only", nil)
	noBindings(ro, "read-only")
	ro.Close()
	if v := schemaOf(t, path); v != 5 {
		t.Fatalf("schema version after a read-only open = %d, want 5", v)
	}

	s := mustOpenPath(t, path)
	replay(s, "after the upgrade", nil)
	noBindings(s, "after the upgrade")
	if findings, err := s.Check(ctx); err != nil || len(findings) != 0 {
		t.Errorf("check after the upgrade: %v, %v", findings, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if v := schemaOf(t, path); v != boltstore.SchemaVersion {
		t.Errorf("schema version after a writing open = %d, want %d", v, boltstore.SchemaVersion)
	}
	sameRecords(t, path, records, "meta")
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *bolt.Tx) error {
		for _, name := range []string{"bindings", "bindings_by_actor"} {
			if tx.Bucket([]byte(name)) == nil {
				t.Errorf("the upgraded file lacks bucket %s", name)
			}
		}
		return nil
	})
	db.Close()

	s = mustOpenPath(t, path)
	eng := engine.New(s, engine.WithClock(func() time.Time { return now }))
	bound := map[string]string{}
	for uid, name := range map[uint32]string{1000: "unix-alice", 1001: "uid-1001", 1002: "unix-carol"} {
		actor, err := eng.ActorOf(ctx, engine.UIDSubject(uid), func() (string, error) { return name, nil })
		if err != nil || actor != name {
			t.Fatalf("first request of uid %d after the upgrade is bound to %s, %v; want %s", uid, actor, err, name)
		}
		bound[name] = actor
	}
	replay(s, "after binding the uids", bound)
	if findings, err := s.Check(ctx); err != nil || len(findings) != 0 {
		t.Errorf("check after binding: %v, %v", findings, err)
	}
	s.Close()
	sameRecords(t, path, records, "meta")
}
