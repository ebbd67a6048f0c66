package boltstore_test

import (
	"context"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
)

// TestSchema8GetsProfiles: a file as schema version 8 left it (made with
// this code, then without the bucket of profiles and marked version 8)
// reads every actor as having no profile through a read-only open, which
// leaves it as it is; a writing open marks it with the current version and
// gives it the bucket, keeps every record (the receipt replays byte for
// byte, the binding holds), and a profile changed then is read back after
// a reopen.
func TestSchema8GetsProfiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reserved.db")
	ctx := context.Background()
	s := mustOpenPath(t, path)
	eng := engine.New(s)
	if _, _, err := eng.PutWorkshop(ctx, "go-basics", engine.WorkshopSpec{Capacity: 1, MaxQuantity: 1}, nil); err != nil {
		t.Fatal(err)
	}
	subject := engine.OIDCSubject("https://id.example.org", "248289761001")
	actor, err := eng.ActorOf(ctx, subject, func() (string, error) { return "ada", nil })
	if err != nil {
		t.Fatal(err)
	}
	const key = engine.OperationKey("3b9f1c2e-4d5a-4e6f-8a7b-9c0d1e2f3a4b")
	req := engine.Request{Workshop: "go-basics", Quantity: 1}
	first, err := eng.Reserve(ctx, actor, key, req)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	rawUpdate(t, path, func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket([]byte("profiles")); err != nil {
			return err
		}
		return tx.Bucket([]byte("meta")).Put([]byte("schema"), []byte{0, 0, 0, 0, 0, 0, 0, 8})
	})

	ro, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := engine.New(ro).ProfileOf(ctx, "ada"); err != nil || p != (engine.Profile{Actor: "ada"}) {
		t.Errorf("profile through a read-only open of a version 8 file = %+v, %v; want the empty one", p, err)
	}
	ro.Close()
	if v := schemaOf(t, path); v != 8 {
		t.Fatalf("schema version after a read-only open = %d, want 8", v)
	}

	s = mustOpenPath(t, path)
	eng = engine.New(s)
	if got, err := eng.ActorOf(ctx, subject, func() (string, error) { return "other", nil }); err != nil || got != actor {
		t.Errorf("the binding after the upgrade = %s, %v; want %s", got, err, actor)
	}
	out, err := eng.Reserve(ctx, actor, key, req)
	if err != nil || !out.Replayed || string(out.Answer.JSON()) != string(first.Answer.JSON()) {
		t.Errorf("replay after the upgrade = %s (replayed %t), %v; want %s", out.Answer.JSON(), out.Replayed, err, first.Answer.JSON())
	}
	lang, name := "de", "Ada Lovelace"
	if _, err := eng.ChangeProfile(ctx, actor, engine.ProfileChange{DisplayName: &name, Language: &lang}); err != nil {
		t.Fatal(err)
	}
	if findings, err := s.Check(ctx); err != nil || len(findings) != 0 {
		t.Errorf("check after the upgrade: %v, %v", findings, err)
	}
	s.Close()
	if v := schemaOf(t, path); v != boltstore.SchemaVersion {
		t.Errorf("schema version after a writing open = %d, want %d", v, boltstore.SchemaVersion)
	}
	s = mustOpenPath(t, path)
	want := engine.Profile{Actor: actor, DisplayName: name, Language: lang}
	if p, err := engine.New(s).ProfileOf(ctx, actor); err != nil || p != want {
		t.Errorf("profile after a reopen = %+v, %v; want %+v", p, err, want)
	}
}
