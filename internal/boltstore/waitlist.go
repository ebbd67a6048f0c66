package boltstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// The entries of the waiting lists (schema version 11). A file of an
// earlier version gets these buckets empty when it is opened for writing;
// until then every read treats them as empty.
var (
	// bucketWaitEntries holds the entries by id, in the binary layout of
	// encodeWaitEntry; ids start with the time the entry joined, so a
	// workshop's entries in id order are its queue.
	bucketWaitEntries = []byte("wait_entries")
	// bucketWaitingEntries lists the entries that wait for their turn
	// (engine.WaitWaiting) by workshop 0x00 id, so that a workshop's queue
	// is one cursor range, which serving it walks from the front.
	bucketWaitingEntries = []byte("wait_entries_waiting")
	// bucketWaitEntriesByWorkshop lists every entry by workshop 0x00 id,
	// for the waiting list of a workshop, in every state, page by page.
	bucketWaitEntriesByWorkshop = []byte("wait_entries_by_workshop")
	// bucketWaitEntriesByActor lists every entry by actor 0x00 id, for a
	// person's entries, newest first (actorindex.go).
	bucketWaitEntriesByActor = []byte("wait_entries_by_actor")
)

// findingWaitIndex is the kind of the findings of Check on the indexes of
// waiting list entries by workshop.
const findingWaitIndex = "waitlist_index_mismatch"

var waitEntryActors = actorIndexed[engine.WaitEntry]{
	records: bucketWaitEntries, index: bucketWaitEntriesByActor, decode: decodeWaitEntry,
	actor: func(e engine.WaitEntry) string { return e.Actor },
}

// waitIndex is one index of entries by workshop then id: entry returns
// the key of e in it, nil when e is not listed there.
type waitIndex struct {
	bucket []byte
	entry  func(e engine.WaitEntry) []byte
}

// The two indexes of entries by workshop: of the waiting ones, and of
// every one.
var (
	waitingEntries = waitIndex{bucketWaitingEntries, func(e engine.WaitEntry) []byte {
		if e.State != engine.WaitWaiting {
			return nil
		}
		return workshopIDEntry(e.Workshop, e.ID)
	}}
	workshopEntries = waitIndex{bucketWaitEntriesByWorkshop, func(e engine.WaitEntry) []byte {
		return workshopIDEntry(e.Workshop, e.ID)
	}}
	waitIndexes = []waitIndex{waitingEntries, workshopEntries}
)

// workshopIDEntry is the key workshop 0x00 id, laid out as the key of an
// actor index; workshop ids contain no 0x00.
func workshopIDEntry(workshop, id string) []byte { return actorEntry(workshop, id) }

func (t *tx) WaitEntry(id string) (e engine.WaitEntry, ok bool, err error) {
	ok, err = t.getRaw(bucketWaitEntries, []byte(id), func(k, raw []byte) (err error) {
		e, err = decodeWaitEntry(k, raw)
		return err
	})
	return e, ok, err
}

// PutWaitEntry writes e without its position (a view's, which
// encodeWaitEntry leaves out) and moves its index entries from those of
// the entry it replaces, if they differ: the queue follows its state.
func (t *tx) PutWaitEntry(e engine.WaitEntry) error {
	if e.ID == "" || bytes.IndexByte([]byte(e.ID+e.Workshop+e.Actor), 0) >= 0 {
		return fmt.Errorf("waiting list entry %q of %q for workshop %q is not storable", e.ID, e.Actor, e.Workshop)
	}
	old, had, err := t.WaitEntry(e.ID)
	if err != nil {
		return err
	}
	for _, ix := range waitIndexes {
		k := ix.entry(e)
		if had {
			if was := ix.entry(old); was != nil && !bytes.Equal(was, k) {
				if err := t.deleteRaw(ix.bucket, was); err != nil {
					return err
				}
			}
		}
		if k != nil {
			if err := t.putRaw(ix.bucket, k, []byte{}); err != nil {
				return err
			}
		}
	}
	if err := waitEntryActors.replace(t, e.ID, e, old, had); err != nil {
		return err
	}
	if err := t.putWaitEntryPlaces(e, old, had); err != nil {
		return err
	}
	return t.putRaw(bucketWaitEntries, []byte(e.ID), encodeWaitEntry(e))
}

func (t *tx) ForEachWaitingEntry(workshop string, fn func(engine.WaitEntry) error) error {
	return waitingEntries.scan(t, workshop, "", fn)
}

func (t *tx) ForEachWaitEntryIn(workshop, after string, fn func(engine.WaitEntry) error) error {
	return workshopEntries.scan(t, workshop, after, fn)
}

func (t *tx) ForEachWaitEntryOf(actor, before string, fn func(engine.WaitEntry) error) error {
	return waitEntryActors.newestFirst(t, actor, before, fn)
}

func (t *tx) ForEachWaitEntry(fn func(engine.WaitEntry) error) error {
	return forEachRaw(t, bucketWaitEntries, decodeWaitEntry, fn)
}

// scan visits the entries of workshop listed in ix with an id above
// after (every one for ""), in id order, reading the index in chunks
// (see firstChunk), so that fn may write to the transaction and a scan
// that fn stops early reads about as many keys as it visited. An index
// key that names no entry, or an entry that ix does not list under that
// key (which Check reports), is passed over.
func (ix waitIndex) scan(t *tx, workshop, after string, fn func(engine.WaitEntry) error) error {
	prefix := workshopIDEntry(workshop, "")
	first := workshopIDEntry(workshop, after)
	if after != "" {
		first = append(first, 0) // The least id above after.
	}
	in := forward(first, func(k []byte) bool { return bytes.HasPrefix(k, prefix) })
	return t.scanChunks(ix.bucket, in, func(k []byte) error {
		e, ok, err := t.WaitEntry(string(k[len(prefix):]))
		if err != nil || !ok || !bytes.Equal(ix.entry(e), k) {
			return err
		}
		return fn(e)
	})
}

// verifyWaitIndexes reports every difference between the entries and
// their indexes by workshop: an entry missing from one that should list
// it, and an index key that names no entry listed there (an entry left
// in the waiting index after it left the queue, say). The index by actor
// is verified with the other actor indexes.
func verifyWaitIndexes(t *tx) ([]engine.Finding, error) {
	entries := t.read(bucketWaitEntries)
	if entries == nil {
		return nil, nil // A read-only open of an older file: no index to check.
	}
	var findings []engine.Finding
	add := func(format string, args ...any) {
		findings = append(findings, engine.Finding{Kind: findingWaitIndex, Detail: fmt.Sprintf(format, args...)})
	}
	want := make([]map[string]bool, len(waitIndexes))
	for i := range want {
		want[i] = map[string]bool{}
	}
	err := entries.ForEach(func(k, raw []byte) error {
		e, err := decodeWaitEntry(k, raw)
		if err != nil {
			return fmt.Errorf("decode %s/%q: %w", bucketWaitEntries, k, err)
		}
		for i, ix := range waitIndexes {
			key := ix.entry(e)
			if key == nil {
				continue
			}
			want[i][string(key)] = true
			if index := t.read(ix.bucket); index == nil || index.Get(key) == nil {
				add("entry %s (%s, workshop %s) is missing from %s", e.ID, e.State, e.Workshop, ix.bucket)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, ix := range waitIndexes {
		index := t.read(ix.bucket)
		if index == nil {
			continue
		}
		err := index.ForEach(func(k, _ []byte) error {
			if !want[i][string(k)] {
				add("%s key %q names no entry listed there", ix.bucket, k)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return findings, nil
}

// The format bytes of a waiting list entry: format 2 is written only for
// one with a time beyond the years that Unix nanoseconds in an int64 hold
// (see anyWide), so that every time reads back as it was written.
const (
	recordWaitEntry1    = 1
	recordWaitEntryWide = 2
)

// encodeWaitEntry lays out an entry (its id is the key) as:
//
//	format=1 | bytes actor | bytes operation key | bytes workshop |
//	varint quantity | bytes state | bytes hold id | time created |
//	time offer expires | time settled
//
// with each time as appendTime writes it (0 for none), in format 2 wide.
// Its position is not stored.
func encodeWaitEntry(e engine.WaitEntry) []byte {
	times := []time.Time{e.CreatedAt, e.OfferExpiresAt, e.SettledAt}
	wide := anyWide(times)
	format := byte(recordWaitEntry1)
	if wide {
		format = recordWaitEntryWide
	}
	b := make([]byte, 0, 48+len(e.Actor)+len(e.OperationKey)+len(e.Workshop)+len(e.State)+len(e.HoldID))
	b = append(b, format)
	b = appendBytes(b, []byte(e.Actor))
	b = appendBytes(b, []byte(e.OperationKey))
	b = appendBytes(b, []byte(e.Workshop))
	b = binary.AppendVarint(b, int64(e.Quantity))
	b = appendBytes(b, []byte(e.State))
	b = appendBytes(b, []byte(e.HoldID))
	for _, at := range times {
		b = appendTime(b, at, wide)
	}
	return b
}

func decodeWaitEntry(key, raw []byte) (engine.WaitEntry, error) {
	d := decoder{b: raw}
	wide := d.formatOf(recordWaitEntry1, recordWaitEntryWide) == recordWaitEntryWide
	e := engine.WaitEntry{ID: string(key)}
	e.Actor = string(d.bytes())
	e.OperationKey = engine.OperationKey(d.bytes())
	e.Workshop = string(d.bytes())
	e.Quantity = int(d.varint())
	e.State = engine.WaitState(d.bytes())
	e.HoldID = string(d.bytes())
	e.CreatedAt = d.time(wide)
	e.OfferExpiresAt = d.time(wide)
	e.SettledAt = d.time(wide)
	return e, d.end()
}
