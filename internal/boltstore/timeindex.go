package boltstore

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/reserve/reserve/internal/engine"
)

// The time indexes list every receipt and every tombstone by the time it was
// created: the key of an entry is its CreatedAt in Unix nanoseconds as 8
// bytes big-endian with the sign bit flipped (so that byte order is time
// order, also before 1970), then the record's own key (actor 0x00 key); the
// value is empty. Receipt expiry reads the oldest entries and the operations
// view the newest, so neither scans the records. The store writes an entry
// with its record, moves it when a record is overwritten with another
// CreatedAt and removes it with the record; Open builds the indexes of a file
// that an earlier schema version wrote.

// timeIndexed describes one record kind and its time index.
type timeIndexed[R any] struct {
	records, index []byte
	decode         func(k, raw []byte) (R, error)
	created        func(R) time.Time
	position       func(R) engine.TimePosition
}

var receiptTimes = timeIndexed[engine.Receipt]{
	records: bucketReceipts, index: bucketReceiptsByTime, decode: decodeReceipt,
	created:  func(r engine.Receipt) time.Time { return r.CreatedAt },
	position: engine.ReceiptPosition,
}

var tombstoneTimes = timeIndexed[engine.Tombstone]{
	records: bucketTombstones, index: bucketTombstonesByTime,
	decode: func(_, raw []byte) (engine.Tombstone, error) {
		var j tombstoneJSON
		err := json.Unmarshal(raw, &j)
		return j.tombstone(), err
	},
	created:  func(t engine.Tombstone) time.Time { return t.CreatedAt },
	position: engine.TombstonePosition,
}

// timePrefix is the first 8 bytes of the index keys of the records created
// at ns Unix nanoseconds.
func timePrefix(ns int64) uint64 { return uint64(ns) ^ (1 << 63) }

// timeEntry is the index key of the record with key k created at at. It
// names the record by its position (positionOf), whatever the form of k.
func timeEntry(at time.Time, k []byte) []byte {
	p := positionOf(k)
	e := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(p)), timePrefix(at.UnixNano()))
	return append(e, p...)
}

// splitTimeEntry is the inverse of timeEntry: it returns the record's key.
func splitTimeEntry(e []byte) (ns int64, k []byte, ok bool) {
	if len(e) < 8 {
		return 0, nil, false
	}
	return int64(binary.BigEndian.Uint64(e) ^ (1 << 63)), recordOf(e[8:]), true
}

// lookup reads the record with key k.
func (ix timeIndexed[R]) lookup(t *tx, k []byte) (r R, ok bool, err error) {
	b := t.b.Bucket(ix.records)
	if b == nil {
		return r, false, nil
	}
	raw := b.Get(k)
	if raw == nil {
		return r, false, nil
	}
	if r, err = ix.decode(k, raw); err != nil {
		return r, false, fmt.Errorf("decode %s/%q: %w", ix.records, k, err)
	}
	return r, true, nil
}

// put writes the index entry of rec, stored under k, and removes the entry of
// the record it overwrites if that was created at another time. Call it
// before the record is written.
func (ix timeIndexed[R]) put(t *tx, k []byte, rec R) error {
	if !t.b.Writable() {
		return fmt.Errorf("write %s/%q: %w", ix.records, k, berrors.ErrTxNotWritable)
	}
	old, ok, err := ix.lookup(t, k)
	if err != nil {
		return err
	}
	at := ix.created(rec)
	if ok && !ix.created(old).Equal(at) {
		if err := t.deleteRaw(ix.index, timeEntry(ix.created(old), k)); err != nil {
			return err
		}
	}
	return t.putRaw(ix.index, timeEntry(at, k), []byte{})
}

// delete removes the index entry of the record stored under k, if there is
// one. Call it before the record is deleted.
func (ix timeIndexed[R]) delete(t *tx, k []byte) error {
	if !t.b.Writable() {
		return fmt.Errorf("delete %s/%q: %w", ix.records, k, berrors.ErrTxNotWritable)
	}
	old, ok, err := ix.lookup(t, k)
	if err != nil || !ok {
		return err
	}
	return t.deleteRaw(ix.index, timeEntry(ix.created(old), k))
}

// scanOldest visits the records created before bound through the index,
// oldest first. An entry whose record is missing or was created at another
// time is not the position of any record and is skipped (verify reports
// it).
//
// A file opened read-only as an earlier schema version wrote it has no index
// (Open builds it only when it may write); then both scans read and sort
// every record instead.
func (ix timeIndexed[R]) scanOldest(t *tx, bound time.Time, fn func(R) error) error {
	index := t.b.Bucket(ix.index)
	if index == nil {
		return ix.scanUnindexed(t, func(p engine.TimePosition) bool { return p.At.Before(bound) },
			func(p, q engine.TimePosition) int { return -p.Compare(q) }, fn)
	}
	limit := binary.BigEndian.AppendUint64(nil, timePrefix(bound.UnixNano()))
	c := index.Cursor()
	for k, _ := c.First(); k != nil && bytes.Compare(k, limit) < 0; k, _ = c.Next() {
		if err := ix.visit(t, k, fn); err != nil {
			return err
		}
	}
	return nil
}

// scanNewest visits the records through the index in the order of
// engine.TimePosition, from the one at from on. Entries of one time are in
// that order already; the scan walks each time's entries forward and then
// steps back to the time before.
func (ix timeIndexed[R]) scanNewest(t *tx, from engine.TimePosition, fn func(R) error) error {
	index := t.b.Bucket(ix.index)
	if index == nil {
		return ix.scanUnindexed(t, func(p engine.TimePosition) bool { return !p.Before(from) }, engine.TimePosition.Compare, fn)
	}
	c := index.Cursor()
	var prefix, k []byte
	if from.IsZero() {
		if k, _ = c.Last(); k == nil {
			return nil
		}
		for k != nil && len(k) < 8 {
			k, _ = c.Prev()
		}
	} else {
		prefix = binary.BigEndian.AppendUint64(nil, timePrefix(from.At.UnixNano()))
		start := prefix
		if from.Actor != "" || from.Key != "" {
			start = append(bytes.Clone(prefix), positionKey(from.Actor, from.Key)...)
		}
		k, _ = c.Seek(start)
	}
	for {
		if prefix == nil {
			if k == nil {
				return nil
			}
			prefix = bytes.Clone(k[:8])
			k, _ = c.Seek(prefix)
		}
		for ; k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			if err := ix.visit(t, k, fn); err != nil {
				return err
			}
		}
		// The last entry of an earlier time: the one before this time's
		// first (the first after it if it has none).
		if k, _ = c.Seek(prefix); k == nil {
			k, _ = c.Last()
		} else {
			k, _ = c.Prev()
		}
		for k != nil && len(k) < 8 {
			k, _ = c.Prev()
		}
		prefix = nil
	}
}

// visit calls fn with the record the index entry e names, unless e is not
// its position.
func (ix timeIndexed[R]) visit(t *tx, e []byte, fn func(R) error) error {
	ns, k, ok := splitTimeEntry(e)
	if !ok {
		return nil
	}
	rec, ok, err := ix.lookup(t, k)
	if err != nil || !ok || ix.created(rec).UnixNano() != ns {
		return err
	}
	return fn(rec)
}

// scanUnindexed reads every record and visits those keep selects in the
// order of compare.
func (ix timeIndexed[R]) scanUnindexed(t *tx, keep func(engine.TimePosition) bool, compare func(p, q engine.TimePosition) int, fn func(R) error) error {
	b := t.b.Bucket(ix.records)
	if b == nil {
		return nil
	}
	type entry struct {
		p   engine.TimePosition
		rec R
	}
	var all []entry
	err := b.ForEach(func(k, raw []byte) error {
		rec, err := ix.decode(k, raw)
		if err != nil {
			return fmt.Errorf("decode %s/%q: %w", ix.records, k, err)
		}
		if p := ix.position(rec); keep(p) {
			all = append(all, entry{p, rec})
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortFunc(all, func(a, b entry) int { return compare(a.p, b.p) })
	for _, e := range all {
		if err := fn(e.rec); err != nil {
			return err
		}
	}
	return nil
}

// build fills the index from the records, replacing whatever it held, in
// the transaction that upgrades an earlier schema version's file.
func (ix timeIndexed[R]) build(btx *bolt.Tx, path string) error {
	return buildIndex(btx, path, ix.records, ix.index, appendOnlyFill, func(k, raw []byte) ([]byte, error) {
		rec, err := ix.decode(k, raw)
		return timeEntry(ix.created(rec), k), err
	})
}

// buildIndex fills the bucket index with the entries (empty values) that
// entry makes of the records of the bucket records (none for a record of
// which it makes nil), replacing whatever it held, in the transaction that upgrades an earlier schema version's file.
// The entries are written in key order, so that every page is filled once
// (to fill, as full as the writes that follow will leave it).
func buildIndex(btx *bolt.Tx, path string, records, index []byte, fill float64, entry func(k, raw []byte) ([]byte, error)) error {
	if err := btx.DeleteBucket(index); err != nil && btx.Bucket(index) != nil {
		return fmt.Errorf("clear bucket %s in %s: %w", index, path, err)
	}
	b, err := btx.CreateBucket(index)
	if err != nil {
		return fmt.Errorf("create bucket %s in %s: %w", index, path, err)
	}
	recs := btx.Bucket(records)
	if recs == nil {
		return nil
	}
	var entries [][]byte
	err = recs.ForEach(func(k, raw []byte) error {
		e, err := entry(k, raw)
		if err != nil {
			return fmt.Errorf("decode %s/%q: %w", records, k, err)
		}
		if e != nil {
			entries = append(entries, e)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("build %s of %s: %w", index, path, err)
	}
	slices.SortFunc(entries, bytes.Compare)
	b.FillPercent = fill
	for _, e := range entries {
		if err := b.Put(e, []byte{}); err != nil {
			return fmt.Errorf("build %s of %s: %w", index, path, err)
		}
	}
	return nil
}

// verify reports every difference between the records and their index: a
// record without its entry, and an entry that names no record or a record
// created at another time.
func (ix timeIndexed[R]) verify(t *tx) ([]engine.Finding, error) {
	index := t.b.Bucket(ix.index)
	if index == nil {
		return nil, nil // An earlier schema version's file, opened read-only.
	}
	var findings []engine.Finding
	add := func(format string, args ...any) {
		findings = append(findings, engine.Finding{Kind: engine.FindingTimeIndex, Detail: fmt.Sprintf(format, args...)})
	}
	if records := t.b.Bucket(ix.records); records != nil {
		err := records.ForEach(func(k, raw []byte) error {
			rec, err := ix.decode(k, raw)
			if err != nil {
				return fmt.Errorf("decode %s/%q: %w", ix.records, k, err)
			}
			if at := ix.created(rec); index.Get(timeEntry(at, k)) == nil {
				add("%s/%q (created %s) has no entry in %s", ix.records, k, at.Format(time.RFC3339Nano), ix.index)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	err := index.ForEach(func(e, _ []byte) error {
		ns, k, ok := splitTimeEntry(e)
		if !ok {
			add("%s/%x is not an index entry", ix.index, e)
			return nil
		}
		at := time.Unix(0, ns).UTC().Format(time.RFC3339Nano)
		rec, ok, err := ix.lookup(t, k)
		switch {
		case err != nil:
			return err
		case !ok:
			add("%s/%x (created %s) names %s/%q, which does not exist", ix.index, e, at, ix.records, k)
		case ix.created(rec).UnixNano() != ns:
			add("%s/%x (created %s) names %s/%q, which was created %s", ix.index, e, at, ix.records, k, ix.created(rec).Format(time.RFC3339Nano))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return findings, nil
}
