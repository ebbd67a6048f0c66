package boltfile_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/reserve/reserve/internal/boltfile"
	"github.com/reserve/reserve/internal/boltfile/boltfiletest"
)

// randomDB writes a bbolt file that keeps no freelist, of the given page
// size, in rounds of random puts (some values spanning overflow pages, some
// in nested buckets) and deletes, so that free pages lie scattered in runs
// of every length.
func randomDB(tb testing.TB, seed uint64, pageSize int) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), fmt.Sprintf("random-%d.db", seed))
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType, PageSize: pageSize})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(seed, 7))
	for round := range 6 + rng.IntN(6) {
		err := db.Update(func(tx *bolt.Tx) error {
			for b := range 3 {
				bucket, err := tx.CreateBucketIfNotExists(fmt.Appendf(nil, "b%d", b))
				if err != nil {
					return err
				}
				if b == 2 {
					if bucket, err = bucket.CreateBucketIfNotExists([]byte("nested")); err != nil {
						return err
					}
				}
				for range rng.IntN(400) {
					size := 10 + rng.IntN(200)
					if rng.IntN(40) == 0 {
						size = pageSize * (1 + rng.IntN(4))
					}
					if err := bucket.Put(fmt.Appendf(nil, "k%06d", rng.IntN(3000)), bytes.Repeat([]byte{byte(round)}, size)); err != nil {
						return err
					}
				}
				c := bucket.Cursor()
				for k, _ := c.First(); k != nil; k, _ = c.Next() {
					if rng.IntN(3) == 0 {
						if err := c.Delete(); err != nil {
							return err
						}
					}
				}
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	return path
}

// freePages runs FreePages on the newest meta page of path.
func freePages(tb testing.TB, path string) (boltfile.Meta, []uint64) {
	tb.Helper()
	f, size, metas, err := boltfiletest.Open(tb, path)
	if err != nil {
		tb.Fatal(err)
	}
	m, _ := boltfile.Newest(metas)
	free, err := boltfile.FreePages(f, size, m)
	if err != nil {
		tb.Fatal(err)
	}
	return m, free
}

// writePlan writes p to path as a store does, without the syncs.
func writePlan(tb testing.TB, path string, p *boltfile.FreelistPlan) {
	tb.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(p.Pages, p.PagesAt); err != nil {
		tb.Fatal(err)
	}
	if _, err := f.WriteAt(p.MetaPage, p.MetaAt); err != nil {
		tb.Fatal(err)
	}
}

// TestFreePagesAreBboltsFreePages: on files that keep no freelist, the
// free pages of the verification's walk are the pages bbolt's own walk at
// open finds free, page for page.
func TestFreePagesAreBboltsFreePages(t *testing.T) {
	paths := []string{newDB(t, false)}
	for seed := range uint64(6) {
		paths = append(paths, randomDB(t, seed, []int{1024, 4096}[seed%2]))
	}
	for _, path := range paths {
		m, free := freePages(t, path)
		want := boltfiletest.BboltFree(t, path, bolt.FreelistMapType)
		if !slices.Equal(free, want) {
			t.Errorf("%s: FreePages = %d pages %v\nbbolt's walk = %d pages %v", filepath.Base(path), len(free), free, len(want), want)
		}
		if len(want) == 0 {
			t.Errorf("%s: no free pages, so nothing was compared", filepath.Base(path))
		}
		t.Logf("%s: %d of %d pages free", filepath.Base(path), len(free), m.Pgid)
	}
}

// TestPlannedFreelistIsWhatBboltReads writes the planned freelist and meta
// page to files that keep no freelist: the new meta page is the newest,
// the file passes Verify with its freelist, bbolt (either freelist type)
// reads the freelist instead of walking and counts the very pages free
// that its walk found, less the freelist's own pages, and after commits
// that allocate from that freelist the file still passes Verify and reads
// in full. Given no free pages (the last file), the freelist goes after
// the last page.
func TestPlannedFreelistIsWhatBboltReads(t *testing.T) {
	paths := []string{newDB(t, false)}
	for seed := range uint64(6) {
		paths = append(paths, randomDB(t, 100+seed, []int{4096, 1024}[seed%2]))
	}
	paths = append(paths, randomDB(t, 200, 4096))
	for i, path := range paths {
		name := filepath.Base(path)
		m, free := freePages(t, path)
		if i == len(paths)-1 {
			free = nil // Pages free but listed nowhere: bbolt never uses them.
		}
		p, err := boltfile.PlanFreelist(m, free)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		writePlan(t, path, p)
		n := boltfiletest.Newest(t, path)
		if n.Page == m.Page || n.Txid != m.Txid+1 || n.Root != m.Root || n.Freelist == boltfile.NoFreelist || !boltfile.SameMeta(n, p.Meta) {
			t.Fatalf("%s: newest meta page after the write = %+v, was %+v", name, n, m)
		}
		if err := verify(t, path); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ids, pages := boltfiletest.Freelist(t, path, n)
		if !slices.Equal(ids, p.Free) {
			t.Errorf("%s: the freelist page lists %v, the plan %v", name, ids, p.Free)
		}
		if all := slices.Sorted(slices.Values(append(slices.Clone(ids), pages...))); pages[0] < m.Pgid && !slices.Equal(all, free) {
			t.Errorf("%s: listed %v and freelist pages %v, want the free pages %v", name, ids, pages, free)
		} else if pages[0] >= m.Pgid && (!slices.Equal(ids, free) || n.Pgid != m.Pgid+uint64(len(pages))) {
			t.Errorf("%s: freelist after the last page lists %v (pgid %d), want %v (pgid %d + %d)", name, ids, n.Pgid, free, m.Pgid, len(pages))
		}
		for _, typ := range []bolt.FreelistType{bolt.FreelistMapType, bolt.FreelistArrayType} {
			if got := boltfiletest.BboltFree(t, path, typ); !slices.Equal(got, ids) {
				t.Errorf("%s: bbolt (%s) counts %v free, the freelist lists %v", name, typ, got, ids)
			}
		}
		db, err := bolt.Open(path, 0o600, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for round := range 5 {
			err = db.Update(func(tx *bolt.Tx) error {
				b, err := tx.CreateBucketIfNotExists([]byte("more"))
				if err != nil {
					return err
				}
				for i := range 200 {
					if err := b.Put(fmt.Appendf(nil, "more-%d-%03d", round, i), bytes.Repeat([]byte("m"), 300)); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if err := verify(t, path); err != nil {
			t.Fatalf("%s: after commits on the planned freelist: %v", name, err)
		}
		readAll(t, path)
	}
}

// TestPlannedFreelistOfManyPages: a freelist of 0xFFFF ids or more keeps
// its count in its first slot. A file whose meta page claims many more
// pages than its tree uses (sparse, all zeros) has that many free pages.
func TestPlannedFreelistOfManyPages(t *testing.T) {
	path := newDB(t, false)
	m := boltfiletest.Newest(t, path)
	const pgid = 70_000
	if err := os.Truncate(path, int64(pgid)*int64(m.PageSize)); err != nil {
		t.Fatal(err)
	}
	boltfiletest.RewriteMeta(t, path, m.Page, func(meta []byte) { order.PutUint64(meta[40:], pgid) })
	m, free := freePages(t, path)
	if len(free) < 0xFFFF {
		t.Fatalf("only %d free pages", len(free))
	}
	p, err := boltfile.PlanFreelist(m, free)
	if err != nil {
		t.Fatal(err)
	}
	if got := order.Uint16(p.Pages[10:]); got != 0xFFFF {
		t.Errorf("count %#x, want 0xFFFF", got)
	}
	writePlan(t, path, p)
	n := boltfiletest.Newest(t, path)
	ids, pages := boltfiletest.Freelist(t, path, n)
	if len(ids) != len(free)-len(pages) || !slices.Equal(ids, p.Free) {
		t.Errorf("the freelist lists %d ids, want %d", len(ids), len(free)-len(pages))
	}
	if err := verify(t, path); err != nil {
		t.Fatal(err)
	}
	if got := boltfiletest.BboltFree(t, path, bolt.FreelistMapType); !slices.Equal(got, ids) {
		t.Errorf("bbolt counts %d pages free, the freelist lists %d", len(got), len(ids))
	}
}

// TestPlanFreelistRefuses: PlanFreelist plans nothing for a meta page that
// names a freelist, is damaged or sits in the slot of the other parity,
// nor for free pages out of order or beyond the file's pages.
func TestPlanFreelistRefuses(t *testing.T) {
	path := newDB(t, false)
	m, free := freePages(t, path)
	if _, err := boltfile.PlanFreelist(m, free); err != nil {
		t.Fatalf("intact file: %v", err)
	}
	kept := boltfiletest.Newest(t, newDB(t, true))
	if _, err := boltfile.PlanFreelist(kept, nil); !errors.Is(err, boltfile.ErrKeepsFreelist) {
		t.Errorf("a meta page with a freelist: %v", err)
	}
	bad := func(name string, m boltfile.Meta, free []uint64) {
		t.Helper()
		if p, err := boltfile.PlanFreelist(m, free); err == nil || errors.Is(err, boltfile.ErrKeepsFreelist) {
			t.Errorf("%s: plan %v, error %v", name, p != nil, err)
		}
	}
	bad("free pages out of order", m, append([]uint64{free[1], free[0]}, free[2:]...))
	bad("a free page beyond the last", m, append(slices.Clone(free), m.Pgid))
	bad("meta page 0 as free", m, append([]uint64{0}, free...))
	damaged := m
	damaged.Err = errors.New("fails its checksum")
	bad("damaged meta page", damaged, free)

	boltfiletest.RewriteMeta(t, path, m.Page, func(meta []byte) { order.PutUint64(meta[48:], m.Txid+1) })
	bad("transaction in the slot of the other parity", boltfiletest.Newest(t, path), free)
}
