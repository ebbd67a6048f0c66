package boltfile

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/bits"
)

// The rules of bbolt's format (go.etcd.io/bbolt v1.4, internal/common and
// internal/freelist) that a freelist written here follows, in the machine's
// byte order:
//
//   - Every page starts with a 16-byte header: its id (uint64, the page's
//     own number), its type flags (uint16), a count (uint16) and the number
//     of overflow pages that follow it (uint32).
//   - A meta page is page 0 or 1 with flags 0x04, count and overflow 0. Its
//     meta follows the header: magic uint32 0xED0CDAED, version uint32 2,
//     page size uint32, flags uint32, the root bucket (root page uint64,
//     sequence uint64), freelist page uint64 (all ones when the file keeps
//     none), pgid uint64 (the high-water mark: pages 0 to pgid-1 exist),
//     txid uint64, and a checksum uint64: FNV-1a (64 bits) of the 56 bytes
//     before it. The rest of the page is zero.
//   - A commit of transaction t writes its meta page to slot t mod 2 (page
//     id t%2 at offset (t%2)·page size), after its other pages. bbolt opens
//     the valid meta page with the higher txid, so the meta of t+1 goes to
//     the slot of the older meta page, and a crash that leaves it torn
//     leaves the one of t.
//   - A freelist page has flags 0x10; its page ids, sorted ascending and
//     without repeats, follow the header as uint64s. With fewer than 0xFFFF
//     ids the count is their number; otherwise the count is 0xFFFF and the
//     first uint64 is their number, the ids after it. The page has as many
//     overflow pages as the list needs: bbolt allocates (16 + 8·ids)/page
//     size + 1 pages for it, counting the slot of the number when there are
//     0xFFFF ids or more.
//   - The array and the hash map freelist read the same page: both take the
//     ids, sort a copy and build their own index from it. The page lists
//     neither itself nor its overflow pages; the first commit after the open
//     frees them, as it frees any freelist page it replaces.
//   - With no transaction open, the free pages are exactly the pages 2 to
//     pgid-1 that the tree does not reach: what bbolt's own walk at open
//     (DB.freepages) finds when the meta page names no freelist.

// Meta page and freelist page flags.
const (
	flagMeta = 0x04
	// countInSlot is the page count that says the count is in the first
	// slot.
	countInSlot = 0xFFFF
	idSize      = 8
)

// FreePages verifies the pages that meta m reaches, as Verify does, and
// returns the pages 2 to m.Pgid-1 that none of them uses, in ascending
// order. When m names no freelist that is the set bbolt's own walk finds at
// open; when it names one, it is the pages the list holds and any the tree
// lost.
func FreePages(r io.ReaderAt, size int64, m Meta) ([]uint64, error) {
	used, err := verify(r, size, m)
	if err != nil {
		return nil, err
	}
	return unused(used, m.Pgid), nil
}

// unused returns the ids from 2 to pgid-1 that used lacks.
func unused(used bitset, pgid uint64) []uint64 {
	var free []uint64
	for w, word := range used {
		for rest := ^word; rest != 0; rest &= rest - 1 {
			id := uint64(w)*64 + uint64(bits.TrailingZeros64(rest))
			if id >= pgid {
				break
			}
			if id >= 2 {
				free = append(free, id)
			}
		}
	}
	return free
}

// FreelistPlan is a freelist for a file that keeps none, and the meta page
// of the next transaction that names it: write Pages at PagesAt and make
// them durable, and only then write MetaPage at MetaAt and make it durable.
// A crash before the meta page is durable leaves the file at the
// transaction it was at; bbolt opens it as before, its freelist pages being
// free pages no meta page names.
type FreelistPlan struct {
	Meta     Meta     // The new meta page as ReadMetas reads it.
	Free     []uint64 // The pages the freelist lists.
	Pages    []byte   // The freelist page and its overflow pages.
	PagesAt  int64    // Their offset in the file.
	MetaPage []byte   // The new meta page, a page long.
	MetaAt   int64    // Its offset: the slot of the older meta page.
}

// Reasons PlanFreelist gives for not planning.
var (
	ErrKeepsFreelist = errors.New("the meta page names a freelist already")
	errUnexpected    = errors.New("the file is not as a freelist may be written to")
)

// PlanFreelist plans the freelist of free, the free pages of the file that
// meta m records (FreePages), and a meta page of transaction m.Txid+1 that
// names it and otherwise records what m does. The freelist goes to the
// lowest run of free pages long enough for it, which it then does not
// list, or else after the last page, raising the high-water mark. It
// returns ErrKeepsFreelist when m names a freelist, and an error matching
// no particular value when anything about m or free is not as the rules
// above expect (m damaged, in the wrong slot for its txid, an odd page size,
// free not sorted or outside the pages m counts): the caller then leaves
// the file to bbolt as it is.
func PlanFreelist(m Meta, free []uint64) (*FreelistPlan, error) {
	switch {
	case !m.Valid():
		return nil, fmt.Errorf("%w: meta page %d %v", errUnexpected, m.Page, m.Err)
	case m.Freelist != NoFreelist:
		return nil, ErrKeepsFreelist
	case uint64(m.Page) != m.Txid%2:
		return nil, fmt.Errorf("%w: meta page %d records transaction %d, which bbolt writes to slot %d", errUnexpected, m.Page, m.Txid, m.Txid%2)
	case m.Txid == math.MaxUint64:
		return nil, fmt.Errorf("%w: the transaction id is at its maximum", errUnexpected)
	case m.PageSize < 1024 || m.PageSize > maxPageSize || m.PageSize&(m.PageSize-1) != 0:
		// bbolt finds meta page 1 at powers of two from 1 KiB to 16 MiB
		// when page 0 is damaged.
		return nil, fmt.Errorf("%w: a page size of %d bytes", errUnexpected, m.PageSize)
	}
	for i, id := range free {
		if id < 2 || id >= m.Pgid || i > 0 && id <= free[i-1] {
			return nil, fmt.Errorf("%w: free page %d out of order or outside pages 2 to %d", errUnexpected, id, m.Pgid-1)
		}
	}
	ps := uint64(m.PageSize)
	slots := uint64(len(free))
	if slots >= countInSlot {
		slots++
	}
	n := (pageHeaderSize+idSize*slots)/ps + 1
	if n-1 > math.MaxUint32 || n*ps > math.MaxInt32 {
		return nil, fmt.Errorf("%w: a freelist of %d pages", errUnexpected, n)
	}
	start, list, pgid := lowestRun(free, n), free, m.Pgid
	if start == 0 {
		start = m.Pgid
		pgid += n
	} else {
		list = make([]uint64, 0, len(free)-int(n))
		for _, id := range free {
			if id < start || id >= start+n {
				list = append(list, id)
			}
		}
	}

	pages := make([]byte, n*ps)
	order.PutUint64(pages[0:], start)
	order.PutUint16(pages[8:], flagFreelist)
	order.PutUint32(pages[12:], uint32(n-1))
	ids := pages[pageHeaderSize:]
	if len(list) < countInSlot {
		order.PutUint16(pages[10:], uint16(len(list)))
	} else {
		order.PutUint16(pages[10:], countInSlot)
		order.PutUint64(ids, uint64(len(list)))
		ids = ids[idSize:]
	}
	for i, id := range list {
		order.PutUint64(ids[idSize*i:], id)
	}

	txid := m.Txid + 1
	slot := txid % 2
	meta := make([]byte, ps)
	order.PutUint64(meta[0:], slot)
	order.PutUint16(meta[8:], flagMeta)
	b := meta[pageHeaderSize : pageHeaderSize+metaSize]
	copy(b, m.raw[:])
	order.PutUint64(b[32:], start)
	order.PutUint64(b[40:], pgid)
	order.PutUint64(b[48:], txid)
	h := fnv.New64a()
	h.Write(b[:56])
	order.PutUint64(b[56:], h.Sum64())

	p := &FreelistPlan{Free: list, Pages: pages, PagesAt: int64(start * ps), MetaPage: meta, MetaAt: int64(slot * ps)}
	// Read back as ReadMetas would: a meta page it would not take is a
	// fault of this function, and nothing is written.
	if p.Meta = parseMeta(int(slot), meta); !p.Meta.Valid() || p.Meta.Root != m.Root || p.Meta.PageSize != m.PageSize {
		return nil, fmt.Errorf("%w: the new meta page reads back as %+v", errUnexpected, p.Meta)
	}
	return p, nil
}

// lowestRun returns the first page of the lowest run of n consecutive ids
// in free, which is sorted, or 0 when there is none.
func lowestRun(free []uint64, n uint64) uint64 {
	var start, length uint64
	for i, id := range free {
		if i == 0 || id != free[i-1]+1 {
			start, length = id, 0
		}
		if length++; length == n {
			return start
		}
	}
	return 0
}

// SameMeta reports whether a and b are the same meta page as read: the same
// slot, bytes and verdict. A file whose meta pages are the same as when it
// was verified has committed nothing since.
func SameMeta(a, b Meta) bool {
	return a.Page == b.Page && a.raw == b.raw && a.Magic == b.Magic && (a.Err == nil) == (b.Err == nil)
}
