package boltstore

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// killedFile returns a database whose last commit, as every commit of a
// store, kept no freelist, and that no Close wrote one to.
func killedFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "reserved.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put([]byte("x"), bytes.Repeat([]byte("x"), 9000))
	}); err != nil {
		t.Fatal(err)
	}
	s.readOnly = true // Close then writes no freelist.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestOpenFreelistOnlyOnTheFileWalked: the freelist planned from a walk is
// written only to the file walked, and only if nothing was committed to it
// since; otherwise the file is left to bbolt as it is.
func TestOpenFreelistOnlyOnTheFileWalked(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, path string)
		want   string // Why nothing is written; "" when the freelist is.
	}{
		{"as walked", func(*testing.T, string) {}, ""},
		{"a commit since the walk", func(t *testing.T, path string) {
			db, err := bolt.Open(path, 0o600, &bolt.Options{NoFreelistSync: true})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Delete([]byte("x")) }); err != nil {
				t.Fatal(err)
			}
		}, "a transaction was committed since the walk"},
		{"another file at the path", func(t *testing.T, path string) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			other := path + ".other"
			if err := os.WriteFile(other, b, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(other, path); err != nil {
				t.Fatal(err)
			}
		}, "the path names another file than the one walked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := killedFile(t)
			pre, err := prepare(path, Options{LockTimeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			o := pre.freelist
			if o == nil {
				t.Fatalf("no freelist planned (%v)", pre.noFreelist)
			}
			tc.change(t, path)
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := o.openFile(time.Second)(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if !o.wrote || o.skipped != nil || bytes.Equal(before, after) {
					t.Errorf("wrote %v, skipped %v, file changed %v; want the freelist written", o.wrote, o.skipped, !bytes.Equal(before, after))
				}
				return
			}
			if o.wrote || o.skipped == nil || !strings.Contains(o.skipped.Error(), tc.want) {
				t.Errorf("wrote %v, skipped %v; want skipped because %s", o.wrote, o.skipped, tc.want)
			}
			if !bytes.Equal(before, after) {
				t.Error("the file changed")
			}
		})
	}
}
