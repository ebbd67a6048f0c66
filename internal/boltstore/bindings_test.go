package boltstore_test

import (
	"context"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
)

// TestCheckFindsBindingIndexMismatches: Check reports an entry of the
// index of bound actors that names no binding, one that names another
// actor's binding, and a binding that the index misses; the lookup by
// actor of a stray entry is an error, never a free name.
func TestCheckFindsBindingIndexMismatches(t *testing.T) {
	cases := []struct {
		name   string
		break_ func(tx *bolt.Tx) error
		want   string
	}{
		{"entry without binding", func(tx *bolt.Tx) error {
			return tx.Bucket([]byte("bindings_by_actor")).Put([]byte("unix-ghost"), []byte("uid\x0055555"))
		}, "names \"uid\\x0055555\" for actor unix-ghost"},
		{"entry of another actor's binding", func(tx *bolt.Tx) error {
			return tx.Bucket([]byte("bindings_by_actor")).Put([]byte("unix-ghost"), []byte("uid\x001000"))
		}, "names \"uid\\x001000\" for actor unix-ghost"},
		{"binding without entry", func(tx *bolt.Tx) error {
			return tx.Bucket([]byte("bindings_by_actor")).Delete([]byte("unix-alice"))
		}, "the lookup of actor unix-alice finds"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := newFile(t)
			s := mustOpenPath(t, path)
			ctx := context.Background()
			if _, err := engine.New(s).ActorOf(ctx, engine.UIDSubject(1000), func() (string, error) { return "unix-alice", nil }); err != nil {
				t.Fatal(err)
			}
			if findings, err := s.Check(ctx); err != nil || len(findings) != 0 {
				t.Fatalf("check before breaking: %v, %v", findings, err)
			}
			s.Close()
			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Update(c.break_); err != nil {
				t.Fatal(err)
			}
			db.Close()
			s, err = boltstore.Open(path, boltstore.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			findings, err := s.Check(ctx)
			if err != nil || len(findings) != 1 || findings[0].Kind != engine.FindingBinding || !strings.Contains(findings[0].Detail, c.want) {
				t.Fatalf("check = %v, %v; want one %s containing %q", findings, err, engine.FindingBinding, c.want)
			}
		})
	}
}

// TestStrayBindingIndexIsNoFreeName: an index entry whose binding is
// missing makes the lookup by actor fail, so the name is not given to
// anyone.
func TestStrayBindingIndexIsNoFreeName(t *testing.T) {
	path := newFile(t)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("bindings_by_actor")).Put([]byte("unix-ghost"), []byte("uid\x0055555"))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s := mustOpenPath(t, path)
	actor, err := engine.New(s).ActorOf(context.Background(), engine.UIDSubject(1000), func() (string, error) { return "unix-ghost", nil })
	if err == nil {
		t.Fatalf("uid 1000 was bound to %s over a stray index entry", actor)
	}
}
