package boltstore_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
)

// The secrets whose hashes reserved of schema version 5 stored in
// testdata/schema5-tokens.dump, and the answer it gave there.
const (
	schema5AliceToken = "rsv_LXJelo7XEUu_O6iZFlfrGg0ZTNs8EI6goK6D6QJdLDA"
	schema5OpsToken   = "rsv_ixNUOPSqru2YHu6dCv2BiUnkEHpd0qFCPtM_PShEwXY" // An admin's.
	schema5Session    = "rss_axe_hoYwFmsEr3vqVZup4rh-nJ_E6Oj8URWNreegmvQ" // dave's, until 13:01.
	schema5Key        = "f47ac10b-58cc-4372-a567-0e02b2c3d479"
	schema5Answer     = `{"status":"reserved","reservation_id":"01a23179de0000000000000000000001","workshop":"go-basics","quantity":2}`
	// legacyToken is an API token as schema version 1 stored it, without
	// a kind; the test adds it to the dump's records.
	legacyToken = "rsv_legacy-token-as-schema-1-wrote-it-without-kind"
)

// TestSchema5Tokens opens a file as reserved of schema version 5 wrote it,
// with two API tokens, a login code and a session (and a token of schema
// version 1, without a kind): read-only, the API tokens are listed with
// their ids and authenticate; the writing open marks it version 7, builds
// the index of API tokens by id and changes no record; then every token
// still works, without expiry, the answer replays byte for byte, and a
// token is revoked by its id.
func TestSchema5Tokens(t *testing.T) {
	path, records := loadDump(t, "testdata/schema5-tokens.dump")
	legacy := engine.TokenRecord{Hash: engine.HashToken(legacyToken), Actor: "legacy", CreatedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}
	raw, _ := json.Marshal(map[string]any{"hash": legacy.Hash, "actor": legacy.Actor, "admin": false, "created_at": legacy.CreatedAt})
	addRecord(t, path, "tokens", legacy.Hash, raw)
	records["tokens"][legacy.Hash] = string(raw)

	ctx := context.Background()
	now := time.Date(2026, 12, 1, 12, 2, 0, 0, time.UTC)
	clock := engine.WithClock(func() time.Time { return now })
	ids := map[string]string{} // By actor.
	for _, secret := range []string{schema5AliceToken, schema5OpsToken, legacyToken} {
		ids[secret] = engine.TokenID(engine.HashToken(secret))
	}
	check := func(s *boltstore.Store, when string) {
		t.Helper()
		eng := engine.New(s, clock)
		list, err := eng.Tokens(ctx) // Before any use: a read-only store takes no write.
		if err != nil {
			t.Fatalf("%s: list: %v", when, err)
		}
		want := []engine.TokenInfo{
			{ID: ids[legacyToken], Actor: "legacy", CreatedAt: legacy.CreatedAt},
			{ID: ids[schema5AliceToken], Actor: "alice", CreatedAt: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)},
			{ID: ids[schema5OpsToken], Actor: "ops", Admin: true, CreatedAt: time.Date(2026, 12, 1, 12, 1, 0, 0, time.UTC)},
		}
		if len(list) != len(want) {
			t.Fatalf("%s: tokens %+v, want %+v", when, list, want)
		}
		for i := range want {
			if list[i] != want[i] {
				t.Errorf("%s: token %d = %+v, want %+v", when, i, list[i], want[i])
			}
		}
		for secret, p := range map[string]engine.Principal{schema5AliceToken: {Actor: "alice"}, schema5OpsToken: {Actor: "ops", Admin: true}, legacyToken: {Actor: "legacy"}} {
			if got, err := eng.Authenticate(ctx, secret); err != nil || got != p {
				t.Errorf("%s: token of %s = %+v, %v", when, p.Actor, got, err)
			}
		}
		if p, err := eng.SessionPrincipal(ctx, schema5Session); err != nil || p.Actor != "dave" {
			t.Errorf("%s: dave's session = %+v, %v", when, p, err)
		}
		out, err := eng.Reserve(ctx, "alice", schema5Key, engine.Request{Workshop: "go-basics", Quantity: 2})
		if err != nil || !out.Replayed || string(out.Answer.JSON()) != schema5Answer {
			t.Errorf("%s: replay = %s (replayed %t), %v; want %s", when, out.Answer.JSON(), out.Replayed, err, schema5Answer)
		}
	}

	ro, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	check(ro, "read-only")
	ro.Close()
	if v := schemaOf(t, path); v != 5 {
		t.Fatalf("a read-only open changed the schema version to %d", v)
	}

	s := mustOpenPath(t, path)
	check(s, "after the upgrade")
	if findings, err := s.Check(ctx); err != nil || len(findings) != 0 {
		t.Errorf("check after the upgrade: %v, %v", findings, err)
	}
	s.Close()
	if v := schemaOf(t, path); v != boltstore.SchemaVersion {
		t.Errorf("schema version after a writing open = %d, want %d", v, boltstore.SchemaVersion)
	}
	sameRecords(t, path, records, "meta")

	s = mustOpenPath(t, path)
	eng := engine.New(s, clock, engine.WithExclusiveStore())
	if err := eng.RevokeToken(ctx, ids[schema5AliceToken]); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Authenticate(ctx, schema5AliceToken); engine.ErrorCode(err) != engine.CodeUnauthenticated {
		t.Errorf("alice's revoked token: %v", err)
	}
	if p, err := eng.Authenticate(ctx, legacyToken); err != nil || p.Actor != "legacy" {
		t.Errorf("the legacy token after another's revocation: %+v, %v", p, err)
	}
	if list, err := eng.Tokens(ctx); err != nil || len(list) != 2 {
		t.Errorf("tokens after a revocation: %+v, %v", list, err)
	}
	if findings, err := s.Check(ctx); err != nil || len(findings) != 0 {
		t.Errorf("check after a revocation: %v, %v", findings, err)
	}
}

// addRecord writes one raw record into the file at path.
func addRecord(t *testing.T, path, bucket, key string, value []byte) {
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
