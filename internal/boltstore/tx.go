package boltstore

import (
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/reserve/reserve/internal/engine"
)

// tx adapts a bbolt transaction to engine.Tx. Receipts, reservations,
// workshops and events use the binary layouts of codec.go, deliveries that
// of deliveries.go and waiting list entries that of waitlist.go; tokens,
// tombstones, holds, profiles and webhook endpoints are stored as JSON.
type tx struct {
	b *bolt.Tx
}

var _ engine.Tx = (*tx)(nil)

// appendOnlyFill is the fill of the pages of buckets whose keys only grow
// (reservation and event ids start with their creation time): no later key
// lands between two earlier ones, so pages split nearly full waste nothing,
// while bbolt's default of one half leaves every page half empty and makes
// every commit write and sync twice the pages. Keys minted in the same
// millisecond may arrive out of order, hence not 1.
const appendOnlyFill = 0.9

// bucket returns the named bucket of the transaction, with the page fill of
// its key pattern set for writes.
func (t *tx) bucket(name []byte) *bolt.Bucket {
	b := t.b.Bucket(name)
	switch string(name) {
	case string(bucketReservations), string(bucketEvents), string(bucketPending), string(bucketUnrouted),
		string(bucketReceiptsByTime), string(bucketTombstonesByTime), string(bucketWaitEntries):
		b.FillPercent = appendOnlyFill
	}
	return b
}

// read returns the named bucket for reading, or nil when the file lacks it:
// a read-only open of a file that an older schema version wrote does not
// add the buckets later versions declare (a writing open creates them), and
// every read treats a missing bucket as an empty one.
func (t *tx) read(name []byte) *bolt.Bucket { return t.b.Bucket(name) }

// getRaw and putRaw read and write binary records, wrapping errors with the
// bucket and key.
func (t *tx) getRaw(bucket, key []byte, decode func(k, raw []byte) error) (bool, error) {
	b := t.read(bucket)
	if b == nil {
		return false, nil
	}
	raw := b.Get(key)
	if raw == nil {
		return false, nil
	}
	if err := decode(key, raw); err != nil {
		return false, fmt.Errorf("decode %s/%q: %w", bucket, key, err)
	}
	return true, nil
}

func (t *tx) putRaw(bucket, key, raw []byte) error {
	if err := t.bucket(bucket).Put(key, raw); err != nil {
		return fmt.Errorf("write %s/%q: %w", bucket, key, err)
	}
	return nil
}

func (t *tx) deleteRaw(bucket, key []byte) error {
	if err := t.bucket(bucket).Delete(key); err != nil {
		return fmt.Errorf("delete %s/%q: %w", bucket, key, err)
	}
	return nil
}

func forEachRaw[R any](t *tx, bucket []byte, decode func(k, raw []byte) (R, error), fn func(R) error) error {
	b := t.read(bucket)
	if b == nil {
		return nil
	}
	return b.ForEach(func(k, raw []byte) error {
		r, err := decode(k, raw)
		if err != nil {
			return fmt.Errorf("decode %s/%q: %w", bucket, k, err)
		}
		return fn(r)
	})
}

func (t *tx) get(bucket []byte, key []byte, v any) (bool, error) {
	b := t.read(bucket)
	if b == nil {
		return false, nil
	}
	raw := b.Get(key)
	if raw == nil {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return false, fmt.Errorf("decode %s/%q: %w", bucket, key, err)
	}
	return true, nil
}

func (t *tx) put(bucket []byte, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s/%q: %w", bucket, key, err)
	}
	if err := t.bucket(bucket).Put(key, raw); err != nil {
		return fmt.Errorf("write %s/%q: %w", bucket, key, err)
	}
	return nil
}

func forEach[R any](t *tx, bucket []byte, fn func(R) error) error {
	b := t.read(bucket)
	if b == nil {
		return nil
	}
	return b.ForEach(func(k, raw []byte) error {
		var r R
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("decode %s/%q: %w", bucket, k, err)
		}
		return fn(r)
	})
}

func (t *tx) Workshop(id string) (w engine.Workshop, ok bool, err error) {
	ok, err = t.getRaw(bucketWorkshops, []byte(id), func(k, raw []byte) (err error) {
		w, err = decodeWorkshop(k, raw)
		return err
	})
	return w, ok, err
}

func (t *tx) PutWorkshop(w engine.Workshop) error {
	return t.putRaw(bucketWorkshops, []byte(w.ID), encodeWorkshop(w))
}

func (t *tx) ForEachWorkshop(fn func(engine.Workshop) error) error {
	return forEachRaw(t, bucketWorkshops, decodeWorkshop, fn)
}

func (t *tx) Reservation(id string) (r engine.Reservation, ok bool, err error) {
	ok, err = t.getRaw(bucketReservations, []byte(id), func(k, raw []byte) (err error) {
		r, err = decodeReservation(k, raw)
		return err
	})
	return r, ok, err
}

func (t *tx) PutReservation(r engine.Reservation) error {
	old, had, err := t.Reservation(r.ID)
	if err != nil {
		return err
	}
	if err := t.putReservationPlaces(r, old, had); err != nil {
		return err
	}
	if err := reservationActors.replace(t, r.ID, r, old, had); err != nil {
		return err
	}
	if err := reservationWorkshops.replace(t, r.ID, r, had); err != nil {
		return err
	}
	return t.putRaw(bucketReservations, []byte(r.ID), encodeReservation(r))
}

func (t *tx) ForEachReservation(fn func(engine.Reservation) error) error {
	return forEachRaw(t, bucketReservations, decodeReservation, fn)
}

func (t *tx) Receipt(actor string, key engine.OperationKey) (r engine.Receipt, ok bool, err error) {
	ok, err = t.getRaw(bucketReceipts, receiptKey(actor, key), func(k, raw []byte) (err error) {
		r, err = decodeReceipt(k, raw)
		return err
	})
	return r, ok, err
}

func (t *tx) PutReceipt(r engine.Receipt) error {
	raw, err := encodeReceipt(r)
	if err != nil {
		return fmt.Errorf("encode receipt %s/%s: %w", r.Actor, r.OperationKey, err)
	}
	k := receiptKey(r.Actor, r.OperationKey)
	if err := receiptTimes.put(t, k, r); err != nil {
		return err
	}
	if err := t.markKeyed(r.Actor, r.OperationKey); err != nil {
		return err
	}
	return t.putRaw(bucketReceipts, k, raw)
}

func (t *tx) ForEachReceipt(fn func(engine.Receipt) error) error {
	return forEachRaw(t, bucketReceipts, decodeReceipt, fn)
}

func (t *tx) Token(hash string) (engine.TokenRecord, bool, error) {
	var r engine.TokenRecord
	ok, err := t.get(bucketTokens, []byte(hash), &r)
	return withKind(r), ok, err
}

func (t *tx) ForEachToken(fn func(engine.TokenRecord) error) error {
	return forEach(t, bucketTokens, func(r engine.TokenRecord) error { return fn(withKind(r)) })
}

// withKind gives records written before credential kinds existed their
// kind: they are all API tokens.
func withKind(r engine.TokenRecord) engine.TokenRecord {
	if r.Kind == "" {
		r.Kind = engine.TokenAPI
	}
	return r
}

// PutToken writes the record and, for an API token, its entry in the
// token index (a record's kind never changes).
func (t *tx) PutToken(r engine.TokenRecord) error {
	if withKind(r).Kind == engine.TokenAPI {
		if err := t.putRaw(bucketTokensByID, tokenEntry(r.Hash), []byte{}); err != nil {
			return err
		}
	}
	return t.put(bucketTokens, []byte(r.Hash), r)
}

// DeleteToken deletes the record and its entry in the token index, if any.
func (t *tx) DeleteToken(hash string) error {
	if err := t.deleteRaw(bucketTokensByID, tokenEntry(hash)); err != nil {
		return err
	}
	if err := t.b.Bucket(bucketTokens).Delete([]byte(hash)); err != nil {
		return fmt.Errorf("delete tokens/%q: %w", hash, err)
	}
	return nil
}

func (t *tx) DeleteReceipt(actor string, key engine.OperationKey) error {
	k := receiptKey(actor, key)
	if err := receiptTimes.delete(t, k); err != nil {
		return err
	}
	return t.deleteRaw(bucketReceipts, k)
}

func (t *tx) Tombstone(actor string, key engine.OperationKey) (engine.Tombstone, bool, error) {
	var r tombstoneJSON
	ok, err := t.get(bucketTombstones, receiptKey(actor, key), &r)
	return r.tombstone(), ok, err
}

func (t *tx) PutTombstone(r engine.Tombstone) error {
	k := receiptKey(r.Actor, r.OperationKey)
	if err := tombstoneTimes.put(t, k, r); err != nil {
		return err
	}
	if err := t.markKeyed(r.Actor, r.OperationKey); err != nil {
		return err
	}
	return t.put(bucketTombstones, k, encodeTombstone(r))
}

func (t *tx) ForEachTombstone(fn func(engine.Tombstone) error) error {
	return forEach(t, bucketTombstones, func(r tombstoneJSON) error { return fn(r.tombstone()) })
}

func (t *tx) ForEachReceiptCreatedBefore(at time.Time, fn func(engine.Receipt) error) error {
	return receiptTimes.scanOldest(t, at, fn)
}

func (t *tx) ForEachReceiptNewestFirst(from engine.TimePosition, fn func(engine.Receipt) error) error {
	return receiptTimes.scanNewest(t, from, fn)
}

func (t *tx) ForEachTombstoneNewestFirst(from engine.TimePosition, fn func(engine.Tombstone) error) error {
	return tombstoneTimes.scanNewest(t, from, fn)
}

// AddEvent stores the event, its id in the index of unrouted events
// (bucketUnrouted, one small key appended at the end) and, while it is
// undelivered and one that the simple channels deliver, its id in the
// pending bucket, which their dispatcher scans.
func (t *tx) AddEvent(e engine.Event) error {
	if t.b.Bucket(bucketEvents).Get([]byte(e.ID)) != nil {
		return fmt.Errorf("event %s exists", e.ID)
	}
	raw, err := encodeEvent(e)
	if err != nil {
		return err
	}
	if err := t.putRaw(bucketEvents, []byte(e.ID), raw); err != nil {
		return err
	}
	if err := t.putRaw(bucketUnrouted, []byte(e.ID), []byte{}); err != nil {
		return err
	}
	if e.Delivered() || !e.ForSimpleChannels() {
		return nil
	}
	return t.putRaw(bucketPending, []byte(e.ID), []byte{})
}

func (t *tx) MarkEventDelivered(id string, at time.Time) error {
	e, ok, err := t.Event(id)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("no event %s", id)
	}
	e.DeliveredAt = at
	raw, err := encodeEvent(e)
	if err != nil {
		return err
	}
	if err := t.putRaw(bucketEvents, []byte(id), raw); err != nil {
		return err
	}
	if err := t.bucket(bucketPending).Delete([]byte(id)); err != nil {
		return fmt.Errorf("delete %s/%q: %w", bucketPending, id, err)
	}
	return nil
}

func (t *tx) Event(id string) (e engine.Event, ok bool, err error) {
	ok, err = t.getRaw(bucketEvents, []byte(id), func(k, raw []byte) (err error) {
		e, err = decodeEvent(k, raw)
		return err
	})
	return e, ok, err
}

func (t *tx) ForEachEvent(fn func(engine.Event) error) error {
	return forEachRaw(t, bucketEvents, decodeEvent, fn)
}

func (t *tx) ForEachPendingEvent(fn func(engine.Event) error) error {
	pending := t.read(bucketPending)
	if pending == nil {
		return nil
	}
	return pending.ForEach(func(k, _ []byte) error {
		e, ok, err := t.Event(string(k))
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("pending event %s has no record", k)
		}
		return fn(e)
	})
}
