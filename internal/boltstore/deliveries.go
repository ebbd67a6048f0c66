package boltstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// The routing of events to webhook endpoints and mail (schema version 10).
// A file of an earlier version gets these buckets empty when it is opened
// for writing; until then every read treats them as empty.
var (
	// bucketUnrouted holds the ids of the events whose deliveries are not
	// made yet, with empty values. Every new event enters it in the
	// transaction that decides its effect, so a reservation's commit
	// writes one more key: a small one that lands at the end of the
	// bucket, since event ids start with their creation time, on pages
	// split at 90 %. While routing keeps up the bucket holds a few keys,
	// which bbolt keeps inline in its parent's page, written by every
	// commit anyway; a backlog costs a commit the bucket's last leaf and
	// the branch pages above it. Routing takes the ids out from the
	// front.
	bucketUnrouted = []byte("events_unrouted")
	// bucketWebhookEndpoints holds the endpoints as JSON by id, with
	// their signing secrets.
	bucketWebhookEndpoints = []byte("webhook_endpoints")
	// bucketDeliveries holds the deliveries by id, in the binary layout of
	// encodeDelivery.
	bucketDeliveries = []byte("deliveries")
	// bucketDeliveriesByState lists every delivery by state 0x00 id, so
	// that the deliveries of one state, from an id on, are one cursor
	// range.
	bucketDeliveriesByState = []byte("deliveries_by_state")
	// bucketDeliveriesDue lists the pending deliveries by NextAttemptAt
	// (8 bytes, as the time indexes lay out a time: Unix nanoseconds with
	// the sign bit flipped, big-endian; see duePrefix) then id, so that
	// the deliveries due by a time are the range from the first key on.
	bucketDeliveriesDue = []byte("deliveries_due")
)

// findingDeliveryIndex is the kind of the findings of Check on the index
// of unrouted events and the indexes of deliveries.
const findingDeliveryIndex = "delivery_index_mismatch"

// ForEachUnroutedEvent reads the index in chunks, so that fn may write to
// the transaction and a scan that fn stops early reads few entries.
func (t *tx) ForEachUnroutedEvent(fn func(engine.Event) error) error {
	return t.scanChunks(bucketUnrouted, forward([]byte{}, func([]byte) bool { return true }), func(k []byte) error {
		e, ok, err := t.Event(string(k))
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("unrouted event %s has no record", k)
		}
		return fn(e)
	})
}

func (t *tx) MarkEventRouted(id string) error {
	if t.read(bucketEvents).Get([]byte(id)) == nil {
		return fmt.Errorf("no event %s", id)
	}
	return t.deleteRaw(bucketUnrouted, []byte(id))
}

func (t *tx) WebhookEndpoint(id string) (engine.WebhookEndpoint, bool, error) {
	var w engine.WebhookEndpoint
	ok, err := t.get(bucketWebhookEndpoints, []byte(id), &w)
	return w, ok, err
}

func (t *tx) PutWebhookEndpoint(w engine.WebhookEndpoint) error {
	return t.put(bucketWebhookEndpoints, []byte(w.ID), w)
}

func (t *tx) DeleteWebhookEndpoint(id string) error {
	return t.deleteRaw(bucketWebhookEndpoints, []byte(id))
}

func (t *tx) ForEachWebhookEndpoint(fn func(engine.WebhookEndpoint) error) error {
	return forEach(t, bucketWebhookEndpoints, fn)
}

// stateEntry is the key of delivery id in state in deliveries_by_state;
// neither states nor delivery ids contain 0x00.
func stateEntry(state engine.DeliveryState, id string) []byte {
	e := make([]byte, 0, len(state)+1+len(id))
	e = append(e, state...)
	e = append(e, 0)
	return append(e, id...)
}

// dueEntry is the key of pending delivery d in deliveries_due.
func dueEntry(d engine.Delivery) []byte {
	e := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(d.ID)), duePrefix(d.NextAttemptAt))
	return append(e, d.ID...)
}

// duePrefix is the first 8 bytes of the keys of deliveries_due of the
// deliveries due at at: its Unix nanoseconds as the time indexes lay them
// out, with a time before or after the years that int64 nanoseconds hold
// (1678 to 2262) taken as the first or the last of them, so that a bound
// far in the future (a check's "every due delivery") still comes after
// every delivery.
func duePrefix(at time.Time) uint64 {
	switch {
	case at.Before(minNanoTime):
		return timePrefix(math.MinInt64)
	case at.After(maxNanoTime):
		return timePrefix(math.MaxInt64)
	}
	return timePrefix(at.UnixNano())
}

// The first and the last time that Unix nanoseconds in an int64 hold.
var minNanoTime, maxNanoTime = time.Unix(0, math.MinInt64), time.Unix(0, math.MaxInt64)

// entries returns the index keys of d: its state entry and, when it is
// pending, its due entry (nil otherwise).
func entries(d engine.Delivery) (state, due []byte) {
	if d.State == engine.DeliveryPending {
		due = dueEntry(d)
	}
	return stateEntry(d.State, d.ID), due
}

func (t *tx) Delivery(id string) (d engine.Delivery, ok bool, err error) {
	ok, err = t.getRaw(bucketDeliveries, []byte(id), func(k, raw []byte) (err error) {
		d, err = decodeDelivery(k, raw)
		return err
	})
	return d, ok, err
}

// PutDelivery writes d and moves its index entries from those of the
// delivery it replaces, if they differ.
func (t *tx) PutDelivery(d engine.Delivery) error {
	if d.ID == "" || bytes.IndexByte([]byte(d.ID), 0) >= 0 || bytes.IndexByte([]byte(d.State), 0) >= 0 {
		return fmt.Errorf("delivery id %q or state %q is not storable", d.ID, d.State)
	}
	old, had, err := t.Delivery(d.ID)
	if err != nil {
		return err
	}
	state, due := entries(d)
	if had {
		oldState, oldDue := entries(old)
		if !bytes.Equal(oldState, state) {
			if err := t.deleteRaw(bucketDeliveriesByState, oldState); err != nil {
				return err
			}
		}
		if oldDue != nil && !bytes.Equal(oldDue, due) {
			if err := t.deleteRaw(bucketDeliveriesDue, oldDue); err != nil {
				return err
			}
		}
	}
	if err := t.putRaw(bucketDeliveriesByState, state, []byte{}); err != nil {
		return err
	}
	if due != nil {
		if err := t.putRaw(bucketDeliveriesDue, due, []byte{}); err != nil {
			return err
		}
	}
	return t.putRaw(bucketDeliveries, []byte(d.ID), encodeDelivery(d))
}

// ForEachDueDelivery reads the index of pending deliveries in chunks from
// its first key, so that its cost is the deliveries it visits. A delivery
// due beyond the years of duePrefix shares its key's time with every
// other such one, and is visited only when it is due by through.
func (t *tx) ForEachDueDelivery(through time.Time, fn func(engine.Delivery) error) error {
	last := binary.BigEndian.AppendUint64(nil, duePrefix(through))
	due := forward([]byte{}, func(k []byte) bool { return bytes.Compare(k[:min(len(k), 8)], last) <= 0 })
	return t.scanChunks(bucketDeliveriesDue, due, func(k []byte) error {
		if len(k) <= 8 {
			return nil // Check reports it.
		}
		return t.visitDelivery(k, k[8:], func(d engine.Delivery) bool { return !d.NextAttemptAt.After(through) }, fn)
	})
}

// ForEachDeliveryIn seeks the first delivery of state above after and
// reads the index in chunks from there.
func (t *tx) ForEachDeliveryIn(state engine.DeliveryState, after string, fn func(engine.Delivery) error) error {
	prefix := stateEntry(state, "")
	first := stateEntry(state, after)
	if after != "" {
		first = append(first, 0) // The least id above after.
	}
	in := forward(first, func(k []byte) bool { return bytes.HasPrefix(k, prefix) })
	return t.scanChunks(bucketDeliveriesByState, in, func(k []byte) error {
		return t.visitDelivery(k, k[len(prefix):], nil, fn)
	})
}

// visitDelivery calls fn with delivery id, which the index entry e names,
// if it exists and wanted (nil for every one) takes it: a delivery due
// beyond the years of duePrefix may not be due by the bound its key
// passed. An entry that names a missing delivery, or one not in the state
// or due at the time it says (which Check reports), is passed over.
func (t *tx) visitDelivery(e, id []byte, wanted func(engine.Delivery) bool, fn func(engine.Delivery) error) error {
	d, ok, err := t.Delivery(string(id))
	if err != nil || !ok || wanted != nil && !wanted(d) {
		return err
	}
	if state, due := entries(d); !bytes.Equal(e, state) && !bytes.Equal(e, due) {
		return nil
	}
	return fn(d)
}

// The format bytes of a delivery: format 2 is written only for one with a
// time beyond the years that Unix nanoseconds in an int64 hold (see
// duePrefix), so that every time reads back as it was written.
const (
	recordDelivery1    = 1
	recordDeliveryWide = 2
)

// encodeDelivery lays out a delivery (its id is the key) as:
//
//	format=1 | bytes event id | bytes event type | bytes channel |
//	bytes endpoint | bytes recipient | bytes state | varint attempts |
//	time created | time since | time next attempt | time last attempt |
//	varint last status | bytes last error | time done
//
// with each time as varint Unix nanoseconds (0 for none), or, in format 2,
// as varint Unix seconds then uvarint nanoseconds.
func encodeDelivery(d engine.Delivery) []byte {
	times := []time.Time{d.CreatedAt, d.Since, d.NextAttemptAt, d.LastAttemptAt, d.DoneAt}
	wide := anyWide(times)
	format := byte(recordDelivery1)
	if wide {
		format = recordDeliveryWide
	}
	b := make([]byte, 0, 64+len(d.EventID)+len(d.EventType)+len(d.Channel)+len(d.Endpoint)+len(d.Recipient)+len(d.State)+len(d.LastError))
	b = append(b, format)
	for _, s := range []string{d.EventID, d.EventType, d.Channel, d.Endpoint, d.Recipient, string(d.State)} {
		b = appendBytes(b, []byte(s))
	}
	b = binary.AppendVarint(b, int64(d.Attempts))
	for _, at := range times[:4] {
		b = appendTime(b, at, wide)
	}
	b = binary.AppendVarint(b, int64(d.LastStatus))
	b = appendBytes(b, []byte(d.LastError))
	return appendTime(b, d.DoneAt, wide)
}

func decodeDelivery(key, raw []byte) (engine.Delivery, error) {
	d := decoder{b: raw}
	wide := d.formatOf(recordDelivery1, recordDeliveryWide) == recordDeliveryWide
	r := engine.Delivery{ID: string(key)}
	for _, s := range []*string{&r.EventID, &r.EventType, &r.Channel, &r.Endpoint, &r.Recipient} {
		*s = string(d.bytes())
	}
	r.State = engine.DeliveryState(d.bytes())
	r.Attempts = int(d.varint())
	for _, at := range []*time.Time{&r.CreatedAt, &r.Since, &r.NextAttemptAt, &r.LastAttemptAt} {
		*at = d.time(wide)
	}
	r.LastStatus = int(d.varint())
	r.LastError = string(d.bytes())
	r.DoneAt = d.time(wide)
	return r, d.end()
}

// verifyDeliveryIndexes reports every difference between the deliveries
// and their two indexes (a delivery without its entry, an entry that names
// no delivery in that state or pending at that time), and every entry of
// the index of unrouted events that names no event.
func verifyDeliveryIndexes(t *tx) ([]engine.Finding, error) {
	deliveries, byState, due := t.read(bucketDeliveries), t.read(bucketDeliveriesByState), t.read(bucketDeliveriesDue)
	if deliveries == nil || byState == nil || due == nil {
		return nil, nil // A read-only open of an older file: no index to check.
	}
	var findings []engine.Finding
	add := func(format string, args ...any) {
		findings = append(findings, engine.Finding{Kind: findingDeliveryIndex, Detail: fmt.Sprintf(format, args...)})
	}
	want := map[string]bool{}
	err := deliveries.ForEach(func(k, raw []byte) error {
		d, err := decodeDelivery(k, raw)
		if err != nil {
			return fmt.Errorf("decode %s/%q: %w", bucketDeliveries, k, err)
		}
		state, dueAt := entries(d)
		want[string(state)] = true
		if byState.Get(state) == nil {
			add("delivery %s (%s) is missing from %s", d.ID, d.State, bucketDeliveriesByState)
		}
		if dueAt != nil {
			want[string(dueAt)] = true
			if due.Get(dueAt) == nil {
				add("pending delivery %s is missing from %s", d.ID, bucketDeliveriesDue)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, index := range [][]byte{bucketDeliveriesByState, bucketDeliveriesDue} {
		err := t.read(index).ForEach(func(e, _ []byte) error {
			if !want[string(e)] {
				add("%s entry %q names no delivery in that state or due at that time", index, e)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if unrouted, events := t.read(bucketUnrouted), t.read(bucketEvents); unrouted != nil && events != nil {
		err = unrouted.ForEach(func(id, _ []byte) error {
			if events.Get(id) == nil {
				add("%s names event %s, which does not exist", bucketUnrouted, id)
			}
			return nil
		})
	}
	return findings, err
}
