// Package boltfile reads and verifies the on-disk format of a bbolt database
// file by itself: its two meta pages, and every page of the tree that a meta
// page names. bbolt trusts its file. When the newer meta page is damaged it
// silently opens the older one and so forgets the last commit, and when it
// meets a damaged data page it panics (sometimes in a goroutine of its own,
// where no caller can recover) or faults on its memory map. Reading the file
// here first, with a bounds check on every byte, lets a program refuse such a
// file with a clear message before bbolt touches it.
//
// The walk that verifies a file also finds its free pages (FreePages), and
// PlanFreelist lays out a freelist of them and the meta page that names it,
// for a file that keeps none: its caller writes them, so that bbolt reads
// that list instead of walking every page again to rebuild it.
//
// The layout is bbolt's format version 2 (go.etcd.io/bbolt v1.4) in the
// machine's byte order, the order bbolt writes. The package imports nothing
// but the standard library.
package boltfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// The constants of bbolt's file format.
const (
	magic   = 0xED0CDAED
	version = 2

	pageHeaderSize   = 16 // id uint64, flags uint16, count uint16, overflow uint32
	elementSize      = 16 // A branch or leaf element.
	bucketHeaderSize = 16 // root uint64, sequence uint64
	metaSize         = 64 // The meta after the page header; the last 8 bytes are the checksum.

	flagBranch   = 0x01
	flagLeaf     = 0x02
	flagFreelist = 0x10

	leafFlagBucket = 0x01

	// firstMetaRead is how much of the file's start bbolt reads to find
	// the first meta page.
	firstMetaRead = 0x1000
	// maxPageSize is the largest page size bbolt looks for.
	maxPageSize = 1024 << 14
	minPageSize = 512
)

// NoFreelist is a meta page's freelist when the file keeps no freelist (bbolt
// rebuilds it at open by walking the tree).
const NoFreelist = ^uint64(0)

var order = binary.NativeEndian

// ErrNotBolt means that neither meta page carries bbolt's magic number: the
// file is not a bbolt database at all.
var ErrNotBolt = errors.New("not a bbolt database file")

// Meta is one of the file's two meta pages as read.
type Meta struct {
	Page     int    // 0 or 1: which of the two it is.
	PageSize int    // The page size it records.
	Root     uint64 // The root bucket's page.
	Freelist uint64 // The freelist's page, or NoFreelist.
	Pgid     uint64 // The pages in use or free are 0 to Pgid-1.
	Txid     uint64 // The transaction that wrote it.
	// Err says why the page is not a valid meta page; nil when it is. The
	// fields above are what the page says even when it is damaged.
	Err error
	// Magic reports whether the page carries bbolt's magic number.
	Magic bool
	// raw is the meta as read, the 64 bytes after the page header, when
	// the file held them.
	raw [metaSize]byte
}

// Valid reports whether the meta page is intact.
func (m Meta) Valid() bool { return m.Err == nil }

// parseMeta reads the meta of page n from p, the page's first bytes.
func parseMeta(n int, p []byte) Meta {
	m := Meta{Page: n}
	if len(p) < pageHeaderSize+metaSize {
		m.Err = errors.New("is cut off by the end of the file")
		return m
	}
	b := p[pageHeaderSize : pageHeaderSize+metaSize]
	copy(m.raw[:], b)
	m.Magic = order.Uint32(b[0:]) == magic
	m.PageSize = int(order.Uint32(b[8:]))
	m.Root = order.Uint64(b[16:])
	m.Freelist = order.Uint64(b[32:])
	m.Pgid = order.Uint64(b[40:])
	m.Txid = order.Uint64(b[48:])
	h := fnv.New64a()
	h.Write(b[:56])
	switch v := order.Uint32(b[4:]); {
	case !m.Magic:
		m.Err = errors.New("does not carry bbolt's magic number")
	case v != version:
		m.Err = fmt.Errorf("has format version %d, not %d", v, version)
	case order.Uint64(b[56:]) != h.Sum64():
		m.Err = errors.New("fails its checksum")
	case m.PageSize < minPageSize || m.PageSize > maxPageSize:
		m.Err = fmt.Errorf("records an impossible page size of %d bytes", m.PageSize)
	case m.Root < 2 || m.Root >= m.Pgid || (m.Freelist != NoFreelist && (m.Freelist < 2 || m.Freelist >= m.Pgid)):
		m.Err = fmt.Errorf("names impossible pages (root %d, freelist %d, of %d pages)", m.Root, m.Freelist, m.Pgid)
	}
	return m
}

// ReadMetas reads both meta pages of the file r of size bytes where bbolt
// looks for them: page 0 at the start and page 1 one page size further, the
// page size recorded by page 0, or, when page 0 is not valid, the first valid
// meta page found at 1 KiB, 2 KiB, 4 KiB … 16 MiB. It returns ErrNotBolt when
// no page it looked at carries bbolt's magic number, and an error when the
// file cannot be read; a damaged meta page is reported in its Err.
func ReadMetas(r io.ReaderAt, size int64) ([2]Meta, error) {
	var metas [2]Meta
	buf := make([]byte, firstMetaRead)
	read := func(off int64) ([]byte, error) {
		n, err := r.ReadAt(buf, off)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read the meta page at offset %d: %w", off, err)
		}
		return buf[:n], nil
	}
	p, err := read(0)
	if err != nil {
		return metas, err
	}
	metas[0] = parseMeta(0, p)
	anyMagic := metas[0].Magic
	pageSize := metas[0].PageSize
	if !metas[0].Valid() {
		pageSize = 0
		for off := int64(1024); off <= maxPageSize && off < size-1024; off <<= 1 {
			p, err := read(off)
			if err != nil {
				return metas, err
			}
			if m := parseMeta(1, p); m.Magic {
				anyMagic = true
				if m.Valid() {
					pageSize = m.PageSize
					break
				}
			}
		}
		if pageSize == 0 {
			// No valid meta page anywhere: report page 1 where page 0
			// says it is, or where the default page size puts it.
			pageSize = metas[0].PageSize
			if !metas[0].Magic || pageSize < minPageSize || pageSize > maxPageSize {
				pageSize = 4096
			}
		}
	}
	p, err = read(int64(pageSize))
	if err != nil {
		return metas, err
	}
	metas[1] = parseMeta(1, p)
	if !anyMagic && !metas[1].Magic {
		return metas, ErrNotBolt
	}
	return metas, nil
}

// Newest returns the meta page bbolt opens, the valid one with the higher
// transaction id, and false when neither is valid.
func Newest(metas [2]Meta) (Meta, bool) {
	a, b := metas[0], metas[1]
	if b.Txid > a.Txid {
		a, b = b, a
	}
	switch {
	case a.Valid():
		return a, true
	case b.Valid():
		return b, true
	}
	return Meta{}, false
}

// CheckSize returns an error if a file of size bytes is too short to hold
// the pages meta m counts.
func CheckSize(size int64, m Meta) error {
	if m.PageSize <= 0 || m.Pgid > uint64(size)/uint64(m.PageSize) {
		return fmt.Errorf("the file is cut short: it has %d bytes, but transaction %d uses %d pages of %d bytes", size, m.Txid, m.Pgid, m.PageSize)
	}
	return nil
}

// Verify reads every page that meta m reaches from r, the database file of
// size bytes: the tree of the root bucket and of every bucket in it, and the
// freelist when the file keeps one. It returns the first damage it finds as
// an error that names the page: a file shorter than m's pages, a page beyond
// m's last page, a
// page that does not identify itself as the page its parent names, a page
// type other than the expected one, elements or keys outside their page,
// keys out of order (as bbolt's own consistency check requires them), a page
// reached twice, or a page both in use and listed as free. It finds every
// fault that makes bbolt panic or fault while it walks the tree; damage to
// the bytes of a stored value is not visible at this level.
//
// When r is an *os.File on a Unix system, Verify reads the pages through a
// read-only memory map of the file, which it unmaps before it returns, so
// that a page costs neither a system call nor a copy; otherwise, or when the
// file cannot be mapped, it reads each page with r.ReadAt. A read that
// faults because the file was cut short meanwhile is an error, not a crash.
// It walks independent subtrees (the top-level buckets, and the children of
// a branch page whose children are branch pages) on up to
// runtime.GOMAXPROCS goroutines at once. Which damage such a walk meets
// first depends on their timing, so when it meets any, Verify walks again on
// one goroutine, in key order, and reports the first damage that walk meets:
// the same, whatever the timing.
func Verify(r io.ReaderAt, size int64, m Meta) error {
	_, err := verify(r, size, m)
	return err
}

// verify is Verify, and returns the pages the walk reached (see walk).
func verify(r io.ReaderAt, size int64, m Meta) (bitset, error) {
	if !m.Valid() {
		return nil, fmt.Errorf("meta page %d %v", m.Page, m.Err)
	}
	if err := CheckSize(size, m); err != nil {
		return nil, err
	}
	data, unmap := mapPages(r, m)
	defer unmap()
	workers := runtime.GOMAXPROCS(0)
	used, err := walk(r, data, m, workers)
	if err != nil && workers > 1 {
		_, err = walk(r, data, m, 1)
	}
	return used, err
}

// walk walks the pages that meta m reaches on up to workers goroutines,
// reading them from data, the file's pages 0 to m.Pgid-1 mapped, or from r
// when data is nil, and returns the pages it reached (the meta pages, the
// freelist and the tree, each with its overflow pages) and the first damage
// it met.
func walk(r io.ReaderAt, data []byte, m Meta, workers int) (bitset, error) {
	s := &state{r: r, data: data, pageSize: m.PageSize, pgid: m.Pgid, used: newBitset(m.Pgid), free: newBitset(m.Pgid)}
	if workers > 1 {
		s.slots = make(chan struct{}, workers)
		s.slots <- struct{}{} // This goroutine's.
	}
	w := &walker{state: s}
	err := s.guard(func() error {
		s.used.set(0)
		s.used.set(1)
		if m.Freelist != NoFreelist {
			if err := w.freelist(m.Freelist); err != nil {
				return err
			}
		}
		_, _, err := w.tree(m.Root, 0, nil, nil, rootBucket, place{})
		return err
	})
	if err != nil {
		s.fail(err)
	}
	// Every walker has ended: each waits for those it started.
	return s.used, s.err
}

// rootBucket names the root bucket, whose keys are the top-level buckets.
const rootBucket = "the root bucket"

// errStopped ends a walker after another one met damage.
var errStopped = errors.New("stopped: another walker met damage")

// state is what the walkers of one walk share.
type state struct {
	r        io.ReaderAt
	data     []byte // Pages 0 to pgid-1 of the file, mapped; nil to read them from r.
	pageSize int
	pgid     uint64
	used     bitset // Pages reached so far, with their overflow pages; set atomically.
	free     bitset // Pages the freelist lists, all set before the tree is walked.
	// slots holds a token for each walker that runs; without it (nil) one
	// goroutine walks everything.
	slots   chan struct{}
	stopped atomic.Bool // Set when a walker met damage, so that the others stop.
	errOnce sync.Once
	err     error // The damage met first; read once every walker has ended.
}

// fail records err, the damage a walker met, unless another one recorded
// its own first, and stops every walker.
func (s *state) fail(err error) {
	if err != errStopped {
		s.errOnce.Do(func() { s.err = err })
	}
	s.stopped.Store(true)
}

// guard runs fn with memory faults turned into panics and returns a fault
// as an error: reading a mapped page faults when the file was cut short
// after it was mapped.
func (s *state) guard(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			f, ok := p.(interface{ Addr() uintptr })
			if !ok {
				panic(p)
			}
			err = fmt.Errorf("reading the file faulted at address %#x, as it does when the file is cut short while it is read", f.Addr())
		}
	}()
	return fn()
}

// walker walks a part of the tree on one goroutine.
type walker struct {
	*state
	bufs  [][]byte    // Without a map: the page read at each depth.
	elems [][]element // The elements parsed at each depth.
}

// group is the walkers that one page started on goroutines of their own.
type group struct {
	wg sync.WaitGroup
	n  int
}

// spawn runs fn on a walker of its own, on a new goroutine, if a slot is
// free, and reports whether it did; the caller waits for g before it
// returns, also when it returns early.
func (w *walker) spawn(g *group, fn func(*walker) error) bool {
	if w.slots == nil {
		return false
	}
	select {
	case w.slots <- struct{}{}:
	default:
		return false
	}
	g.n++
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		defer func() { <-w.slots }()
		child := &walker{state: w.state}
		if err := w.guard(func() error { return fn(child) }); err != nil {
			w.fail(err)
		}
	}()
	return true
}

// wait waits for the walkers of g, leaving this walker's slot to another
// one meanwhile.
func (w *walker) wait(g *group) {
	if g.n == 0 {
		return
	}
	<-w.slots
	g.wg.Wait()
	w.slots <- struct{}{}
	g.n = 0
}

// leave is deferred by a page that starts walkers: when the page returns
// before it waited for them (damage, or a fault), the walkers are stopped
// and waited for, so that none reads the file after Verify returned.
func (w *walker) leave(g *group) {
	if g.n > 0 {
		w.stopped.Store(true)
		w.wait(g)
	}
}

// keep returns key, or a copy of it when it lies in a buffer that the next
// page read overwrites.
func (w *walker) keep(key []byte) []byte {
	if w.data != nil {
		return key
	}
	return bytes.Clone(key)
}

// place names a page, or a bucket's inline page, in the message of damage
// found on it, such as "branch page 7 of bucket \"x\"". It is formatted
// only when damage is reported.
type place struct {
	kind   int // One of the kinds below; the zero value is the meta page.
	id     uint64
	bucket string
}

const (
	kindMeta = iota
	kindBranch
	kindLeaf
	kindInline
)

func (p place) String() string {
	switch p.kind {
	case kindBranch:
		return fmt.Sprintf("branch page %d of %s", p.id, p.bucket)
	case kindLeaf:
		return fmt.Sprintf("leaf page %d of %s", p.id, p.bucket)
	case kindInline:
		return "the inline page of " + p.bucket
	}
	return "the meta page"
}

// page reads page id, which from names, with its overflow pages, checks
// that it identifies itself as id, is a freelist page (freelist) or else a
// branch or leaf page and fits in the file, marks it reached and returns
// its bytes, its element count and its type flags. Without a map it reads
// into the buffer of depth depth.
func (w *walker) page(id uint64, depth int, from place, freelist bool) ([]byte, int, uint16, error) {
	if w.stopped.Load() {
		return nil, 0, 0, errStopped
	}
	if id < 2 || id >= w.pgid {
		return nil, 0, 0, fmt.Errorf("%s points to page %d, outside pages 2 to %d", from, id, w.pgid-1)
	}
	ps := w.pageSize
	var p []byte
	if w.data != nil {
		p = w.data[int(id)*ps : int(id+1)*ps]
	} else {
		for len(w.bufs) <= depth {
			w.bufs = append(w.bufs, nil)
		}
		if cap(w.bufs[depth]) < ps {
			w.bufs[depth] = make([]byte, ps)
		}
		p = w.bufs[depth][:ps]
		if err := w.read(p, id); err != nil {
			return nil, 0, 0, err
		}
	}
	self, flags := order.Uint64(p[0:]), order.Uint16(p[8:])
	count, overflow := int(order.Uint16(p[10:])), uint64(order.Uint32(p[12:]))
	if self != id {
		return nil, 0, 0, fmt.Errorf("page %d, which %s points to, identifies itself as page %d", id, from, self)
	}
	if freelist && flags != flagFreelist || !freelist && flags != flagBranch && flags != flagLeaf {
		kind := "branch or leaf"
		if freelist {
			kind = "freelist"
		}
		return nil, 0, 0, fmt.Errorf("page %d, which %s points to, has type flags %#x, not those of a %s page", id, from, flags, kind)
	}
	if overflow >= w.pgid-id {
		return nil, 0, 0, fmt.Errorf("page %d claims %d overflow pages, beyond the last page %d", id, overflow, w.pgid-1)
	}
	for i := id; i <= id+overflow; i++ {
		// No page is both: freelist refuses to list a page reached before
		// it, and the tree is walked after it.
		if w.free.has(i) {
			return nil, 0, 0, fmt.Errorf("page %d, which %s points to, is in use but listed as free", i, from)
		}
		// Of two walkers that reach a page, the second finds it set.
		if w.used.testAndSet(i) {
			return nil, 0, 0, fmt.Errorf("page %d, which %s points to, is reached twice", i, from)
		}
	}
	if overflow > 0 {
		size := (int(overflow) + 1) * ps
		if w.data != nil {
			return w.data[int(id)*ps : int(id)*ps+size], count, flags, nil
		}
		if cap(w.bufs[depth]) < size {
			grown := make([]byte, size)
			copy(grown, p)
			w.bufs[depth] = grown
		}
		p = w.bufs[depth][:size]
		if err := w.read(p[ps:], id+1); err != nil {
			return nil, 0, 0, err
		}
	}
	return p, count, flags, nil
}

// read fills buf from the start of page id.
func (w *walker) read(buf []byte, id uint64) error {
	n, err := w.r.ReadAt(buf, int64(id)*int64(w.pageSize))
	if n == len(buf) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return fmt.Errorf("page %d lies beyond the end of the file", id+uint64(n/w.pageSize))
	}
	return fmt.Errorf("read page %d: %w", id, err)
}

// freelist reads the freelist page id and records the pages it lists.
func (w *walker) freelist(id uint64) error {
	p, count, _, err := w.page(id, 0, place{}, true)
	if err != nil {
		return err
	}
	start, n := pageHeaderSize, uint64(count)
	if count == 0xFFFF {
		// A count too large for the header is stored in the first slot.
		if len(p) < pageHeaderSize+8 {
			return fmt.Errorf("freelist page %d is too short for its count", id)
		}
		start, n = pageHeaderSize+8, order.Uint64(p[pageHeaderSize:])
	}
	if n > uint64(len(p)-start)/8 {
		return fmt.Errorf("freelist page %d claims %d free pages, more than it holds", id, n)
	}
	for i := range n {
		free := order.Uint64(p[start+8*int(i):])
		switch {
		case free < 2 || free >= w.pgid:
			return fmt.Errorf("freelist page %d lists page %d, outside pages 2 to %d", id, free, w.pgid-1)
		case w.free.has(free):
			return fmt.Errorf("freelist page %d lists page %d twice", id, free)
		case w.used.has(free):
			return fmt.Errorf("freelist page %d lists page %d, which is in use", id, free)
		}
		w.free.set(free)
	}
	return nil
}

// element is one parsed branch or leaf element.
type element struct {
	flags uint32 // Leaf elements: leafFlagBucket for a bucket.
	key   []byte
	value []byte // Leaf elements.
	child uint64 // Branch elements.
}

// elements parses the elements of page p into the walker's slice of depth
// depth, which the next page of that depth reuses.
func (w *walker) elements(p []byte, count, depth int, branch bool, what place) ([]element, error) {
	for len(w.elems) <= depth {
		w.elems = append(w.elems, nil)
	}
	elems, err := elements(w.elems[depth][:0], p, count, branch, what)
	w.elems[depth] = elems
	return elems, err
}

// elements appends the count elements of the branch or leaf page p (a page
// of the file, or a bucket's inline page) to dst and checks that each lies
// in p.
func elements(dst []element, p []byte, count int, branch bool, what place) ([]element, error) {
	if uint64(count)*elementSize > uint64(len(p)-pageHeaderSize) {
		return dst, fmt.Errorf("%s claims %d elements, more than fit in its %d bytes", what, count, len(p))
	}
	for i := range count {
		off := pageHeaderSize + elementSize*i
		e := p[off : off+elementSize]
		var el element
		var pos, ksize, vsize uint64
		if branch {
			pos, ksize = uint64(order.Uint32(e[0:])), uint64(order.Uint32(e[4:]))
			el.child = order.Uint64(e[8:])
		} else {
			el.flags = order.Uint32(e[0:])
			pos, ksize, vsize = uint64(order.Uint32(e[4:])), uint64(order.Uint32(e[8:])), uint64(order.Uint32(e[12:]))
			if el.flags&^leafFlagBucket != 0 {
				return dst, fmt.Errorf("%s: element %d has unknown flags %#x", what, i, el.flags)
			}
		}
		start := uint64(off) + pos
		if start+ksize+vsize > uint64(len(p)) {
			return dst, fmt.Errorf("%s: element %d lies outside the page (at %d, %d+%d bytes, of %d)", what, i, start, ksize, vsize, len(p))
		}
		el.key = p[start : start+ksize]
		el.value = p[start+ksize : start+ksize+vsize]
		dst = append(dst, el)
	}
	return dst, nil
}

// keyOrder checks element i's key against the key before it (or the
// subtree's lower bound, for the first) and the subtree's exclusive upper
// bound, as bbolt's consistency check does.
func keyOrder(what place, i int, key, prev, max []byte) error {
	if i == 0 && prev != nil && bytes.Compare(prev, key) > 0 {
		return fmt.Errorf("%s: the first key %x is below its parent's %x", what, key, prev)
	}
	if i > 0 && bytes.Compare(prev, key) >= 0 {
		return fmt.Errorf("%s: key %d (%x) does not come after the key before it (%x)", what, i, key, prev)
	}
	if max != nil && bytes.Compare(key, max) >= 0 {
		return fmt.Errorf("%s: key %d (%x) is not below the next key of its parent (%x)", what, i, key, max)
	}
	return nil
}

// tree walks the subtree of bucket at page id, whose keys lie in
// [min, max), and returns its last key and whether page id is a branch
// page.
func (w *walker) tree(id uint64, depth int, min, max []byte, bucket string, from place) ([]byte, bool, error) {
	p, count, flags, err := w.page(id, depth, from, false)
	if err != nil {
		return nil, false, err
	}
	if flags == flagBranch {
		last, err := w.branch(p, id, count, depth, min, max, bucket)
		return last, true, err
	}
	last, err := w.leaf(p, count, depth, min, max, bucket, place{kind: kindLeaf, id: id, bucket: bucket})
	return last, false, err
}

// branch checks the elements of the branch page p, page id, and walks its
// children, whose keys lie in [min, max). It walks them in order, but hands
// a child to another walker while one is free once the first child turned
// out to be a branch page too (a subtree of many pages, worth a goroutine).
// The first key of a child handed on is checked against the last key of the
// child before it once both have been walked.
func (w *walker) branch(p []byte, id uint64, count, depth int, min, max []byte, bucket string) ([]byte, error) {
	what := place{kind: kindBranch, id: id, bucket: bucket}
	if count == 0 {
		return nil, fmt.Errorf("%s has no elements", what)
	}
	elems, err := w.elements(p, count, depth, true, what)
	if err != nil {
		return nil, err
	}
	var (
		g        group
		lasts    [][]byte // The last key of each child handed on.
		deferred []int    // The elements checked once the children are walked.
		branches bool     // The children are branch pages.
	)
	defer w.leave(&g)
	running, known := min, true // The last key of the child before, if known.
	for i, e := range elems {
		if !known {
			deferred = append(deferred, i)
		} else if err := keyOrder(what, i, e.key, running, max); err != nil {
			return nil, err
		}
		childMax := max
		if i+1 < len(elems) {
			childMax = elems[i+1].key
		}
		if branches && w.slots != nil {
			if lasts == nil {
				lasts = make([][]byte, len(elems))
			}
			if w.spawn(&g, func(c *walker) error {
				last, _, err := c.tree(e.child, depth+1, e.key, childMax, bucket, what)
				lasts[i] = last
				return err
			}) {
				known = false
				continue
			}
		}
		last, isBranch, err := w.tree(e.child, depth+1, e.key, childMax, bucket, what)
		if err != nil {
			return nil, err
		}
		running, known, branches = last, true, isBranch
	}
	if g.n > 0 {
		w.wait(&g)
		if w.stopped.Load() {
			return nil, errStopped
		}
		for _, i := range deferred {
			if err := keyOrder(what, i, elems[i].key, lasts[i-1], max); err != nil {
				return nil, err
			}
		}
	}
	if !known {
		return lasts[len(elems)-1], nil
	}
	return running, nil
}

// leaf checks the elements of the leaf page p and walks the buckets it
// holds; it returns its last key (a copy, without a map). A top-level
// bucket is handed to another walker while one is free.
func (w *walker) leaf(p []byte, count, depth int, min, max []byte, bucket string, what place) ([]byte, error) {
	top := bucket == rootBucket
	if !top {
		if last, ok := plainLeaf(p, count, min, max); ok {
			return w.keep(last), nil
		}
	}
	elems, err := w.elements(p, count, depth, false, what)
	if err != nil {
		return nil, err
	}
	var g group
	defer w.leave(&g)
	running := min
	for i, e := range elems {
		if err := keyOrder(what, i, e.key, running, max); err != nil {
			return nil, err
		}
		running = e.key
		if e.flags&leafFlagBucket == 0 {
			if top {
				// bbolt keeps only buckets at the top level, and its
				// Tx.ForEach dereferences each one as a bucket.
				return nil, fmt.Errorf("%s: key %q of the root bucket is not a bucket", what, e.key)
			}
			continue
		}
		name := fmt.Sprintf("bucket %q", e.key)
		if !top {
			name = fmt.Sprintf("%s/%q", bucket, e.key)
		}
		if len(e.value) < bucketHeaderSize {
			return nil, fmt.Errorf("%s: %s has a %d-byte header, not %d", what, name, len(e.value), bucketHeaderSize)
		}
		if root := order.Uint64(e.value); root != 0 {
			if top && w.spawn(&g, func(c *walker) error {
				_, _, err := c.tree(root, depth+1, nil, nil, name, what)
				return err
			}) {
				continue
			}
			if _, _, err := w.tree(root, depth+1, nil, nil, name, what); err != nil {
				return nil, err
			}
			continue
		}
		if err := inline(e.value[bucketHeaderSize:], name); err != nil {
			return nil, err
		}
	}
	if g.n > 0 {
		w.wait(&g)
		if w.stopped.Load() {
			return nil, errStopped
		}
	}
	if len(elems) == 0 {
		return nil, nil
	}
	return w.keep(running), nil
}

// plainLeaf checks the leaf page p of count elements, whose keys lie in
// [min, max), in one pass, and returns its last key and true when p holds
// no bucket and is intact: the common case, at one comparison a key. It
// returns false for any other page, which leaf then checks element by
// element and bucket by bucket, in the order that names the first damage.
// A leaf of the root bucket, which must hold nothing but buckets, is not
// for it.
func plainLeaf(p []byte, count int, min, max []byte) ([]byte, bool) {
	if count == 0 || uint64(count)*elementSize > uint64(len(p)-pageHeaderSize) {
		return nil, false
	}
	prev := min
	for i := range count {
		off := pageHeaderSize + elementSize*i
		e := p[off : off+elementSize]
		if order.Uint32(e[0:]) != 0 {
			return nil, false
		}
		start := uint64(off) + uint64(order.Uint32(e[4:]))
		ksize, vsize := uint64(order.Uint32(e[8:])), uint64(order.Uint32(e[12:]))
		if start+ksize+vsize > uint64(len(p)) {
			return nil, false
		}
		key := p[start : start+ksize]
		if i == 0 && min != nil && bytes.Compare(min, key) > 0 || i > 0 && bytes.Compare(prev, key) >= 0 {
			return nil, false
		}
		prev = key
	}
	if max != nil && bytes.Compare(prev, max) >= 0 {
		return nil, false
	}
	return prev, true
}

// inline checks the page of a bucket stored inline in its parent's value:
// a leaf page without sub-buckets, which is how bbolt writes one.
func inline(p []byte, bucket string) error {
	what := place{kind: kindInline, bucket: bucket}
	if len(p) < pageHeaderSize {
		return fmt.Errorf("%s is %d bytes, too short for a page header", what, len(p))
	}
	if flags := order.Uint16(p[8:]); flags != flagLeaf {
		return fmt.Errorf("%s has type flags %#x, not those of a leaf page", what, flags)
	}
	elems, err := elements(nil, p, int(order.Uint16(p[10:])), false, what)
	if err != nil {
		return err
	}
	var prev []byte
	for i, e := range elems {
		if err := keyOrder(what, i, e.key, prev, nil); err != nil {
			return err
		}
		if e.flags&leafFlagBucket != 0 {
			return fmt.Errorf("%s: element %d is a bucket, which an inline bucket cannot hold", what, i)
		}
		prev = e.key
	}
	return nil
}

// bitset is a set of page ids below a bound.
type bitset []uint64

func newBitset(n uint64) bitset    { return make(bitset, (n+63)/64) }
func (b bitset) has(i uint64) bool { return b[i/64]&(1<<(i%64)) != 0 }
func (b bitset) set(i uint64)      { b[i/64] |= 1 << (i % 64) }

// testAndSet adds i atomically and reports whether it was there already.
func (b bitset) testAndSet(i uint64) bool {
	mask := uint64(1) << (i % 64)
	return atomic.OrUint64(&b[i/64], mask)&mask != 0
}
