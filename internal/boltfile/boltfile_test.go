package boltfile_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/reserve/reserve/internal/boltfile"
	"github.com/reserve/reserve/internal/boltfile/boltfiletest"
)

// newDB writes a bbolt file with every kind of page: a bucket of several
// levels (branch pages), an inline bucket, nested buckets (one inline, one
// not) and a value spanning overflow pages, in several transactions. With
// syncFreelist the file keeps a freelist page, as bbolt's default does.
func newDB(tb testing.TB, syncFreelist bool) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "test.db")
	// The array freelist allocates the lowest free pages first, so every
	// call writes the same bytes and a fuzz input stored in testdata finds
	// the same pages again; the map freelist's choice follows Go's map order.
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoFreelistSync: !syncFreelist, FreelistType: bolt.FreelistArrayType})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	for round := range 3 {
		err := db.Update(func(tx *bolt.Tx) error {
			big, err := tx.CreateBucketIfNotExists([]byte("big"))
			if err != nil {
				return err
			}
			for i := range 1000 {
				if err := big.Put(fmt.Appendf(nil, "key-%03d-%05d", round, i), bytes.Repeat([]byte{byte(i)}, 100)); err != nil {
					return err
				}
			}
			small, err := tx.CreateBucketIfNotExists([]byte("small"))
			if err != nil {
				return err
			}
			if err := small.Put(fmt.Appendf(nil, "s%d", round), []byte("v")); err != nil {
				return err
			}
			nested, err := tx.CreateBucketIfNotExists([]byte("nested"))
			if err != nil {
				return err
			}
			child, err := nested.CreateBucketIfNotExists([]byte("child"))
			if err != nil {
				return err
			}
			for i := range 100 {
				if err := child.Put(fmt.Appendf(nil, "c-%d-%03d", round, i), bytes.Repeat([]byte("x"), 50)); err != nil {
					return err
				}
			}
			if _, err := nested.CreateBucketIfNotExists([]byte("tiny")); err != nil {
				return err
			}
			return tx.Bucket([]byte("big")).Put([]byte("huge"), bytes.Repeat([]byte("h"), 20000))
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	// Deletions leave free pages behind.
	if err := db.Update(func(tx *bolt.Tx) error {
		big := tx.Bucket([]byte("big"))
		for i := range 300 {
			if err := big.Delete(fmt.Appendf(nil, "key-001-%05d", i)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
	return path
}

// verify runs Verify on the file at path, which reads the file through a
// map, and fails the test unless reading it page by page (through a reader
// that is not a file) gives the same answer.
func verify(tb testing.TB, path string) error {
	tb.Helper()
	f, size, metas, err := boltfiletest.Open(tb, path)
	if err != nil {
		return err
	}
	m, ok := boltfile.Newest(metas)
	if !ok {
		return fmt.Errorf("no valid meta page: %v, %v", metas[0].Err, metas[1].Err)
	}
	err = boltfile.Verify(f, size, m)
	if byPage := boltfile.Verify(readerOnly{f}, size, m); fmt.Sprint(byPage) != fmt.Sprint(err) {
		tb.Errorf("Verify through a map = %v, page by page = %v", err, byPage)
	}
	return err
}

// readerOnly hides the file behind it, so that Verify reads it page by
// page.
type readerOnly struct{ r io.ReaderAt }

func (r readerOnly) ReadAt(p []byte, off int64) (int, error) { return r.r.ReadAt(p, off) }

// bucketRoot returns the root page of a top-level bucket (0 if inline).
func bucketRoot(tb testing.TB, path string, names ...string) uint64 {
	tb.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	var root uint64
	db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(names[0]))
		for _, n := range names[1:] {
			b = b.Bucket([]byte(n))
		}
		root = uint64(b.Root())
		return nil
	})
	return root
}

var order = binary.NativeEndian

func TestVerifyIntact(t *testing.T) {
	for _, sync := range []bool{false, true} {
		path := newDB(t, sync)
		if err := verify(t, path); err != nil {
			t.Errorf("freelist kept %v: intact file: %v", sync, err)
		}
		if m := boltfiletest.Newest(t, path); (m.Freelist != boltfile.NoFreelist) != sync {
			t.Errorf("freelist kept %v: meta page's freelist is %d", sync, m.Freelist)
		}
	}
}

func TestReadMetas(t *testing.T) {
	path := newDB(t, false)
	newest := boltfiletest.Newest(t, path)
	boltfiletest.FlipMeta(t, path, newest.Page)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	metas, err := boltfile.ReadMetas(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	if d := metas[newest.Page]; d.Valid() || d.Err.Error() != "fails its checksum" || d.Txid != newest.Txid || !d.Magic {
		t.Errorf("damaged newer meta page = %+v", d)
	}
	if m, ok := boltfile.Newest(metas); !ok || m.Page != 1-newest.Page || m.Txid != newest.Txid-1 {
		t.Errorf("Newest with the newer page damaged = %+v %v, want page %d at transaction %d", m, ok, 1-newest.Page, newest.Txid-1)
	}
	// Page 0 damaged too: page 1 is still found where bbolt looks for it.
	boltfiletest.FlipMeta(t, path, 1-newest.Page)
	metas, err = boltfile.ReadMetas(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := boltfile.Newest(metas); ok || metas[0].Valid() || metas[1].Valid() || metas[1].PageSize != newest.PageSize {
		t.Errorf("both meta pages damaged: %+v", metas)
	}

	other := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(other, bytes.Repeat([]byte("not a database\n"), 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	g, err := os.Open(other)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if _, err := boltfile.ReadMetas(g, 15000); !errors.Is(err, boltfile.ErrNotBolt) {
		t.Errorf("ReadMetas of a text file = %v, want ErrNotBolt", err)
	}
}

// TestVerifyFindsDamage damages one page at a time and wants Verify to name
// it.
func TestVerifyFindsDamage(t *testing.T) {
	type damage struct {
		name  string
		sync  bool
		apply func(t *testing.T, path string)
		want  string
	}
	damages := []damage{
		{"overflow beyond the file", false, func(t *testing.T, path string) {
			id := bucketRoot(t, path, "big")
			p := boltfiletest.ReadPage(t, path, id)
			order.PutUint32(p[12:], 1<<20)
			boltfiletest.WritePage(t, path, id, p)
		}, "overflow pages, beyond the last page"},
		{"branch child out of range", false, func(t *testing.T, path string) {
			id := bucketRoot(t, path, "big")
			p := boltfiletest.ReadPage(t, path, id)
			order.PutUint64(p[16+8:], 1<<40)
			boltfiletest.WritePage(t, path, id, p)
		}, "points to page 1099511627776"},
		{"page reached twice", false, func(t *testing.T, path string) {
			id := bucketRoot(t, path, "big")
			p := boltfiletest.ReadPage(t, path, id)
			copy(p[16+16+8:16+16+16], p[16+8:16+16]) // The second child is the first one again.
			boltfiletest.WritePage(t, path, id, p)
		}, "is reached twice"},
		{"keys out of order", false, func(t *testing.T, path string) {
			id := boltfiletest.FirstLeaf(t, path, bucketRoot(t, path, "nested", "child"))
			p := boltfiletest.ReadPage(t, path, id)
			// Point the second element's key at the first one's.
			e0, e1 := p[16:32], p[32:48]
			k0 := 16 + int(order.Uint32(e0[4:]))
			order.PutUint32(e1[4:], uint32(k0-32))
			boltfiletest.WritePage(t, path, id, p)
		}, "does not come after the key before it"},
		{"element outside its page", false, func(t *testing.T, path string) {
			id := boltfiletest.FirstLeaf(t, path, bucketRoot(t, path, "nested", "child"))
			p := boltfiletest.ReadPage(t, path, id)
			order.PutUint32(p[16+8:], 1<<30) // ksize of element 0
			boltfiletest.WritePage(t, path, id, p)
		}, "element 0 lies outside the page"},
		{"unknown element flags", false, func(t *testing.T, path string) {
			id := boltfiletest.FirstLeaf(t, path, bucketRoot(t, path, "nested", "child"))
			p := boltfiletest.ReadPage(t, path, id)
			order.PutUint32(p[16:], 0x80)
			boltfiletest.WritePage(t, path, id, p)
		}, "unknown flags 0x80"},
		{"branch page without elements", false, func(t *testing.T, path string) {
			boltfiletest.SetCount(t, path, bucketRoot(t, path, "big"), 0)
		}, "has no elements"},
		{"free page in use", true, func(t *testing.T, path string) {
			m := boltfiletest.Newest(t, path)
			p := boltfiletest.ReadPage(t, path, m.Freelist)
			if order.Uint16(p[10:]) == 0 {
				t.Fatal("the freelist is empty")
			}
			order.PutUint64(p[16:], bucketRoot(t, path, "big"))
			boltfiletest.WritePage(t, path, m.Freelist, p)
		}, "is in use but listed as free"},
		{"plain value in the root bucket", false, func(t *testing.T, path string) {
			id := boltfiletest.RootLeaf(t, path)
			p := boltfiletest.ReadPage(t, path, id)
			order.PutUint32(p[16:], order.Uint32(p[16:])&^1) // The first element's bucket flag.
			boltfiletest.WritePage(t, path, id, p)
		}, "of the root bucket is not a bucket"},
		{"only plain values in the root bucket", false, func(t *testing.T, path string) {
			id := boltfiletest.RootLeaf(t, path)
			p := boltfiletest.ReadPage(t, path, id)
			for i := range int(order.Uint16(p[10:])) {
				order.PutUint32(p[16+16*i:], order.Uint32(p[16+16*i:])&^1) // Each element's bucket flag.
			}
			boltfiletest.WritePage(t, path, id, p)
		}, "of the root bucket is not a bucket"},
		{"freelist of the wrong type", true, func(t *testing.T, path string) {
			boltfiletest.SetFlags(t, path, boltfiletest.Newest(t, path).Freelist, 0x02)
		}, "not those of a freelist page"},
	}
	for _, d := range boltfiletest.DataPageDamages() {
		damages = append(damages, damage{d.Name, false, func(t *testing.T, path string) { d.Apply(t, path) }, d.Want})
	}
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			path := newDB(t, d.sync)
			d.apply(t, path)
			err := verify(t, path)
			if err == nil || !strings.Contains(err.Error(), d.want) {
				t.Fatalf("Verify = %v, want an error with %q", err, d.want)
			}
		})
	}
}

// TestVerifyThenBboltNeverPanics flips random bits anywhere in a file, many
// times over: whenever Verify passes a file, bbolt must open it for writing
// (which walks every page to rebuild the freelist, and panics in a goroutine
// of its own on damage it finds, which would end this test binary) and read
// every key of every bucket without a panic.
func TestVerifyThenBboltNeverPanics(t *testing.T) {
	orig := newDB(t, false)
	raw, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "flipped.db")
	passed := 0
	for seed := range uint64(300) {
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		boltfiletest.FlipAnywhere(t, path, seed, 1+int(seed%8))
		if verify(t, path) != nil {
			continue
		}
		passed++
		readAll(t, path)
	}
	t.Logf("%d of 300 flipped files passed Verify (the flips hit values, free pages or unused bytes)", passed)
}

// TestVerifiedFreelistIsSafe damages a kept freelist many times over: it
// drops the second half of the list (pages then free but listed nowhere,
// which is harmless) and puts a random page in place of one id. Whenever
// Verify passes the file, bbolt, which reads that list at open and
// allocates pages from it without looking, must not write over a page in
// use: after a commit that allocates many pages the file still passes
// Verify and reads in full.
func TestVerifiedFreelistIsSafe(t *testing.T) {
	orig := newDB(t, true)
	raw, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	m := boltfiletest.Newest(t, orig)
	list := boltfiletest.ReadPage(t, orig, m.Freelist)
	ids := int(order.Uint16(list[10:]))
	if ids < 4 || ids == 0xFFFF {
		t.Fatalf("the freelist holds %d ids", ids)
	}
	path := filepath.Join(t.TempDir(), "damaged.db")
	passed := 0
	for seed := range uint64(100) {
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		p := bytes.Clone(list)
		rng := rand.New(rand.NewPCG(seed, seed))
		order.PutUint16(p[10:], uint16(ids/2))
		order.PutUint64(p[16+8*rng.IntN(ids/2):], 2+rng.Uint64N(m.Pgid-2))
		boltfiletest.WritePage(t, path, m.Freelist, p)
		if verify(t, path) != nil {
			continue
		}
		passed++
		db, err := bolt.Open(path, 0o600, &bolt.Options{FreelistType: bolt.FreelistMapType})
		if err != nil {
			t.Fatalf("seed %d: Verify passed the file, but bbolt refused it: %v", seed, err)
		}
		err = db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("more"))
			if err != nil {
				return err
			}
			for i := range 200 {
				if err := b.Put(fmt.Appendf(nil, "more-%03d", i), bytes.Repeat([]byte("m"), 500)); err != nil {
					return err
				}
			}
			return nil
		})
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if err := verify(t, path); err != nil {
			t.Fatalf("seed %d: after a commit on a freelist that Verify passed: %v", seed, err)
		}
		readAll(t, path)
	}
	if passed == 0 {
		t.Fatal("Verify passed none of the files, so nothing was proven")
	}
	t.Logf("%d of 100 files with a damaged freelist passed Verify", passed)
}

// FuzzVerify changes bytes anywhere past the meta pages of a small database
// with every kind of page: Verify must never panic, and a file it passes
// must open in bbolt for writing (whose page walk panics in a goroutine of
// its own on damage it finds, ending the fuzz worker) and read in full
// without a panic.
func FuzzVerify(f *testing.F) {
	orig := newDB(f, false)
	raw, err := os.ReadFile(orig)
	if err != nil {
		f.Fatal(err)
	}
	m := boltfiletest.Newest(f, orig)
	f.Add(uint32(m.Root)*uint32(m.PageSize)+10, []byte{0xff, 0x7f})
	f.Add(uint32(m.Root)*uint32(m.PageSize), make([]byte, 64))
	f.Add(uint32(3*m.PageSize+20), []byte{1})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, off uint32, change []byte) {
		b := bytes.Clone(raw)
		start := 2 * m.PageSize
		for i, c := range change {
			b[start+(int(off)+i)%(len(b)-start)] ^= c
		}
		if boltfile.Verify(bytes.NewReader(b), int64(len(b)), m) != nil {
			return
		}
		path := filepath.Join(dir, "fuzz.db")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		readAll(t, path)
	})
}

// readAll opens path for writing in bbolt and reads every key of every
// bucket, failing on a panic.
func readAll(t *testing.T, path string) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("Verify passed the file, but bbolt panicked: %v", p)
		}
	}()
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		t.Errorf("Verify passed the file, but bbolt refused it: %v", err)
		return
	}
	defer db.Close()
	db.View(func(tx *bolt.Tx) error {
		var walk func(b *bolt.Bucket)
		walk = func(b *bolt.Bucket) {
			b.ForEach(func(k, v []byte) error {
				if v == nil {
					if child := b.Bucket(k); child != nil {
						walk(child)
					}
				}
				return nil
			})
		}
		return tx.ForEach(func(_ []byte, b *bolt.Bucket) error { walk(b); return nil })
	})
}
