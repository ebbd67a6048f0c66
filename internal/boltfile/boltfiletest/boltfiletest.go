// Package boltfiletest damages bbolt database files the ways a failing disk,
// a crash or a careless copy do, for the tests of code that must refuse such
// files. It finds its way in a file with package boltfile and changes bytes
// in place; it is for tests only.
package boltfiletest

import (
	"encoding/binary"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/reserve/reserve/internal/boltfile"
)

var order = binary.NativeEndian

// Damage is one kind of damage to a database file.
type Damage struct {
	Name  string
	Apply func(tb testing.TB, path string)
	// Want is a part of the message that reports it.
	Want string
}

// DataPageDamages are the kinds of damage to data pages: each leaves both
// meta pages intact, so bbolt would open the file and meet the damage only
// on the page.
func DataPageDamages() []Damage {
	return []Damage{
		{"zeroed leaf page", func(tb testing.TB, path string) { ZeroPage(tb, path, RootLeaf(tb, path)) }, "identifies itself as page 0"},
		{"bad page flags", func(tb testing.TB, path string) { SetFlags(tb, path, RootLeaf(tb, path), 0x20) }, "has type flags 0x20"},
		{"element count 0x7fff", func(tb testing.TB, path string) { SetCount(tb, path, RootLeaf(tb, path), 0x7fff) }, "claims 32767 elements"},
		{"random bit flips", func(tb testing.TB, path string) { FlipBits(tb, path, RootLeaf(tb, path), 1, 3) }, "page"},
		{"truncated to half", func(tb testing.TB, path string) { TruncateHalf(tb, path) }, "the file is cut short"},
	}
}

// Open opens the file at path for the test and reads both its meta pages;
// the file is closed when the test ends, and an error of ReadMetas is
// returned for the test to judge.
func Open(tb testing.TB, path string) (*os.File, int64, [2]boltfile.Meta, error) {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	st, err := f.Stat()
	if err != nil {
		tb.Fatal(err)
	}
	metas, err := boltfile.ReadMetas(f, st.Size())
	return f, st.Size(), metas, err
}

// Newest returns the meta page bbolt opens the file at.
func Newest(tb testing.TB, path string) boltfile.Meta {
	tb.Helper()
	_, _, metas, err := Open(tb, path)
	if err != nil {
		tb.Fatal(err)
	}
	m, ok := boltfile.Newest(metas)
	if !ok {
		tb.Fatalf("%s has no valid meta page", path)
	}
	return m
}

// RootLeaf returns the first leaf page of the root bucket, which lists
// top-level buckets. A root bucket with few buckets is that one leaf, which
// every transaction reads; with more it is a tree, and LeafOf names the
// leaf a given bucket's transactions read.
func RootLeaf(tb testing.TB, path string) uint64 {
	tb.Helper()
	return FirstLeaf(tb, path, Newest(tb, path).Root)
}

// LeafOf returns the leaf page of the root bucket that lists the top-level
// bucket name: the page that every transaction using that bucket reads,
// whether the root bucket is one leaf or a tree of them.
func LeafOf(tb testing.TB, path, name string) uint64 {
	tb.Helper()
	// A branch page has elements of 16 bytes (pos, ksize, child) after its
	// 16-byte header; the child of the last key at or below name holds it.
	return descend(tb, path, Newest(tb, path).Root, func(p []byte) uint64 {
		count := int(order.Uint16(p[10:]))
		child := order.Uint64(p[16+8:])
		for i := 1; i < count; i++ {
			e := 16 + i*16
			pos, ksize := int(order.Uint32(p[e:])), int(order.Uint32(p[e+4:]))
			if string(p[e+pos:e+pos+ksize]) > name {
				break
			}
			child = order.Uint64(p[e+8:])
		}
		return child
	})
}

// FirstLeaf returns the first leaf page of the tree whose root is page id.
func FirstLeaf(tb testing.TB, path string, id uint64) uint64 {
	tb.Helper()
	return descend(tb, path, id, func(p []byte) uint64 {
		return order.Uint64(p[16+8:]) // The first branch element's child.
	})
}

// descend walks from page id down to a leaf page, taking at each branch
// page the child that child picks, and returns the leaf.
func descend(tb testing.TB, path string, id uint64, child func(branch []byte) uint64) uint64 {
	tb.Helper()
	for {
		p := ReadPage(tb, path, id)
		switch flags := order.Uint16(p[8:]); flags {
		case 0x02:
			return id
		case 0x01:
			id = child(p)
		default:
			tb.Fatalf("page %d of %s has flags %#x", id, path, flags)
		}
	}
}

// ReadPage returns the first page-size bytes of page id.
func ReadPage(tb testing.TB, path string, id uint64) []byte {
	tb.Helper()
	m := Newest(tb, path)
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	p := make([]byte, m.PageSize)
	if _, err := f.ReadAt(p, int64(id)*int64(m.PageSize)); err != nil {
		tb.Fatal(err)
	}
	return p
}

// WritePage writes p at the start of page id.
func WritePage(tb testing.TB, path string, id uint64, p []byte) {
	tb.Helper()
	m := Newest(tb, path)
	writeAt(tb, path, p, int64(id)*int64(m.PageSize))
}

func writeAt(tb testing.TB, path string, p []byte, off int64) {
	tb.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := f.WriteAt(p, off); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

// ZeroPage overwrites page id with zeros.
func ZeroPage(tb testing.TB, path string, id uint64) {
	tb.Helper()
	WritePage(tb, path, id, make([]byte, len(ReadPage(tb, path, id))))
}

// SetFlags sets the type flags in the header of page id.
func SetFlags(tb testing.TB, path string, id uint64, flags uint16) {
	tb.Helper()
	p := ReadPage(tb, path, id)
	order.PutUint16(p[8:], flags)
	WritePage(tb, path, id, p)
}

// SetCount sets the element count in the header of page id.
func SetCount(tb testing.TB, path string, id uint64, count uint16) {
	tb.Helper()
	p := ReadPage(tb, path, id)
	order.PutUint16(p[10:], count)
	WritePage(tb, path, id, p)
}

// FlipBits flips n bits, chosen by seed, in the header and the element
// array of page id: the bytes that say where everything on the page lies.
func FlipBits(tb testing.TB, path string, id uint64, seed uint64, n int) {
	tb.Helper()
	p := ReadPage(tb, path, id)
	span := 16 + 16*int(order.Uint16(p[10:]))
	rng := rand.New(rand.NewPCG(seed, seed))
	for range n {
		bit := rng.IntN(span * 8)
		p[bit/8] ^= 1 << (bit % 8)
	}
	WritePage(tb, path, id, p)
}

// FlipAnywhere flips n bits, chosen by seed, anywhere in pages 2 and up of
// the file.
func FlipAnywhere(tb testing.TB, path string, seed uint64, n int) {
	tb.Helper()
	m := Newest(tb, path)
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, seed))
	start := 2 * m.PageSize
	for range n {
		bit := rng.IntN((len(b) - start) * 8)
		off := start + bit/8
		b[off] ^= 1 << (bit % 8)
		writeAt(tb, path, b[off:off+1], int64(off))
	}
}

// TruncateHalf cuts the file to half of the pages its newest meta page
// says are in use. (Half of the file's size may cut nothing in use: bbolt
// grows a file ahead of its pages.)
func TruncateHalf(tb testing.TB, path string) {
	tb.Helper()
	m := Newest(tb, path)
	if err := os.Truncate(path, int64(m.Pgid)*int64(m.PageSize)/2); err != nil {
		tb.Fatal(err)
	}
}

// FlipMeta flips one bit of meta page n in its flags field, which bbolt
// does not use but its checksum covers: the page fails its checksum and
// still says which transaction it recorded.
func FlipMeta(tb testing.TB, path string, n int) {
	tb.Helper()
	m := Newest(tb, path)
	off := int64(n)*int64(m.PageSize) + 16 + 12
	b := make([]byte, 1)
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	_, err = f.ReadAt(b, off)
	f.Close()
	if err != nil {
		tb.Fatal(err)
	}
	b[0] ^= 0x01
	writeAt(tb, path, b, off)
}

// Freelist reads the freelist page that meta m names and returns the ids it
// lists and the pages it occupies (the page and its overflow pages).
func Freelist(tb testing.TB, path string, m boltfile.Meta) (ids, pages []uint64) {
	tb.Helper()
	if m.Freelist == boltfile.NoFreelist {
		tb.Fatalf("meta page %d of %s names no freelist", m.Page, path)
	}
	p := ReadPage(tb, path, m.Freelist)
	if flags := order.Uint16(p[8:]); flags != 0x10 {
		tb.Fatalf("page %d of %s has flags %#x, not a freelist's", m.Freelist, path, flags)
	}
	overflow := uint64(order.Uint32(p[12:]))
	for i := range overflow + 1 {
		pages = append(pages, m.Freelist+i)
	}
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	p = make([]byte, (overflow+1)*uint64(m.PageSize))
	if _, err := f.ReadAt(p, int64(m.Freelist)*int64(m.PageSize)); err != nil {
		tb.Fatal(err)
	}
	start, n := 16, uint64(order.Uint16(p[10:]))
	if n == 0xFFFF {
		start, n = 24, order.Uint64(p[16:])
	}
	for i := range n {
		ids = append(ids, order.Uint64(p[start+8*int(i):]))
	}
	return ids, pages
}

// RewriteMeta lets change alter the 64 bytes of meta page n after its
// header (magic, version, page size, flags, root, sequence, freelist,
// pgid, txid) and writes them back with a correct checksum.
func RewriteMeta(tb testing.TB, path string, n int, change func(meta []byte)) {
	tb.Helper()
	ps := Newest(tb, path).PageSize
	p := ReadPage(tb, path, 0)
	if n == 1 {
		p = ReadPage(tb, path, 1)
	}
	meta := p[16 : 16+64]
	change(meta)
	h := fnv.New64a()
	h.Write(meta[:56])
	order.PutUint64(meta[56:], h.Sum64())
	writeAt(tb, path, meta, int64(n)*int64(ps)+16)
}

// BboltFree opens path read-only in bbolt with its freelist loaded, which
// walks every page when the file keeps no freelist and reads the freelist
// page when it does, and returns the pages bbolt counts as free.
func BboltFree(tb testing.TB, path string, typ bolt.FreelistType) []uint64 {
	tb.Helper()
	db, err := bolt.Open(path, 0, &bolt.Options{ReadOnly: true, PreLoadFreelist: true, FreelistType: typ})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	var free []uint64
	err = db.View(func(tx *bolt.Tx) error {
		for id := 2; ; id++ {
			info, err := tx.Page(id)
			if err != nil || info == nil {
				return err
			}
			if info.Type == "free" {
				free = append(free, uint64(id))
			}
		}
	})
	if err != nil {
		tb.Fatal(err)
	}
	return free
}
