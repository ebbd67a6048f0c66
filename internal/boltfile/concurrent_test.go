package boltfile_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/reserve/reserve/internal/boltfile"
	"github.com/reserve/reserve/internal/boltfile/boltfiletest"
)

// deepBuckets are the buckets of newDeepDB, in key order.
var deepBuckets = []string{"deep1", "deep2"}

// newDeepDB writes a file with two top-level buckets whose trees have three
// levels (a branch page of branch pages of leaves), so that Verify hands
// whole buckets and the subtrees of a branch page to walkers of their own.
// The file is made once; each call returns a copy of its own.
func newDeepDB(tb testing.TB) string {
	tb.Helper()
	deepOnce.Do(func() { deepRaw, deepErr = makeDeepDB() })
	if deepErr != nil {
		tb.Fatal(deepErr)
	}
	path := filepath.Join(tb.TempDir(), "deep.db")
	if err := os.WriteFile(path, deepRaw, 0o600); err != nil {
		tb.Fatal(err)
	}
	for _, name := range deepBuckets {
		p := boltfiletest.ReadPage(tb, path, bucketRoot(tb, path, name))
		child := boltfiletest.ReadPage(tb, path, order.Uint64(p[16+8:]))
		if order.Uint16(p[8:]) != 0x01 || order.Uint16(child[8:]) != 0x01 {
			tb.Fatalf("bucket %s is not three levels deep", name)
		}
	}
	return path
}

var (
	deepOnce sync.Once
	deepRaw  []byte
	deepErr  error
)

func makeDeepDB() ([]byte, error) {
	dir, err := os.MkdirTemp("", "boltfile-deep-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "deep.db")
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistArrayType, NoSync: true})
	if err != nil {
		return nil, err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range deepBuckets {
			b, err := tx.CreateBucket([]byte(name))
			if err != nil {
				return err
			}
			// Nine 200-byte values fill a leaf to bbolt's 50 %, and 64
			// leaves a branch page: 6,000 keys make a dozen branch pages
			// below the bucket's root.
			for i := range uint64(6000) {
				if err := b.Put(binary.BigEndian.AppendUint64(nil, i), make([]byte, 200)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}

// lastLeaf returns the last leaf page of the tree whose root is page id.
func lastLeaf(tb testing.TB, path string, id uint64) uint64 {
	tb.Helper()
	for {
		p := boltfiletest.ReadPage(tb, path, id)
		if order.Uint16(p[8:]) == 0x02 {
			return id
		}
		count := int(order.Uint16(p[10:]))
		id = order.Uint64(p[16+16*(count-1)+8:])
	}
}

// withProcs runs fn with GOMAXPROCS n, so that Verify walks on up to n
// goroutines on any machine.
func withProcs(n int, fn func()) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n))
	fn()
}

func TestVerifyConcurrentIntact(t *testing.T) {
	path := newDeepDB(t)
	f, _, metas, err := boltfiletest.Open(t, path)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := boltfile.Newest(metas)
	for _, workers := range []int{1, 2, 8} {
		if err := boltfile.WalkConcurrently(f, m, workers); err != nil {
			t.Errorf("%d walkers: %v", workers, err)
		}
		if err := boltfile.WalkConcurrently(readerOnly{f}, m, workers); err != nil {
			t.Errorf("%d walkers, page by page: %v", workers, err)
		}
	}
}

// TestVerifyConcurrentReportsTheFirstDamage damages the last leaf of the
// first bucket and the first leaf of the second: walkers of their own reach
// the second first, but Verify reports the damage a walk in key order meets
// first, every time.
func TestVerifyConcurrentReportsTheFirstDamage(t *testing.T) {
	path := newDeepDB(t)
	first := lastLeaf(t, path, bucketRoot(t, path, deepBuckets[0]))
	second := boltfiletest.FirstLeaf(t, path, bucketRoot(t, path, deepBuckets[1]))
	boltfiletest.SetCount(t, path, first, 0x7fff)
	boltfiletest.SetCount(t, path, second, 0x7fff)
	want := fmt.Sprintf("leaf page %d of bucket %q claims 32767 elements", first, deepBuckets[0])
	withProcs(8, func() {
		for range 10 {
			if err := verify(t, path); err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("Verify = %v, want %q…", err, want)
			}
		}
	})
}

// TestVerifyConcurrentFindsPageReachedTwice points the second bucket at the
// first one's tree: whichever of the two walkers reaches it second reports
// it.
func TestVerifyConcurrentFindsPageReachedTwice(t *testing.T) {
	path := newDeepDB(t)
	root := bucketRoot(t, path, deepBuckets[0])
	leaf := boltfiletest.RootLeaf(t, path)
	p := boltfiletest.ReadPage(t, path, leaf)
	for i := range int(order.Uint16(p[10:])) {
		e := 16 + 16*i
		pos, ksize := int(order.Uint32(p[e+4:])), int(order.Uint32(p[e+8:]))
		if string(p[e+pos:e+pos+ksize]) == deepBuckets[1] {
			order.PutUint64(p[e+pos+ksize:], root) // The bucket header's root.
		}
	}
	boltfiletest.WritePage(t, path, leaf, p)
	f, _, metas, err := boltfiletest.Open(t, path)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := boltfile.Newest(metas)
	want := fmt.Sprintf("page %d, which leaf page %d of the root bucket points to, is reached twice", root, leaf)
	for range 10 {
		if err := boltfile.WalkConcurrently(f, m, 8); err == nil || err.Error() != want {
			t.Fatalf("concurrent walk = %v, want %q", err, want)
		}
	}
	if err := verify(t, path); err == nil || err.Error() != want {
		t.Fatalf("Verify = %v, want %q", err, want)
	}
}

// TestVerifyFileCutWhileMapped cuts the file short after Verify mapped it:
// reading the pages past the new end faults, and the walk reports that
// instead of crashing the program.
func TestVerifyFileCutWhileMapped(t *testing.T) {
	for _, workers := range []int{1, 8} {
		path := newDeepDB(t)
		f, _, metas, err := boltfiletest.Open(t, path)
		if err != nil {
			t.Fatal(err)
		}
		m, _ := boltfile.Newest(metas)
		mapped, err := boltfile.WalkCutShort(f, m, workers, func() {
			if err := os.Truncate(path, int64(2*m.PageSize)); err != nil {
				t.Fatal(err)
			}
		})
		if !mapped {
			t.Skip("files are not mapped on this system")
		}
		if err == nil || !strings.Contains(err.Error(), "reading the file faulted at address 0x") {
			t.Errorf("%d walkers: walk of a file cut short = %v", workers, err)
		}
	}
}
