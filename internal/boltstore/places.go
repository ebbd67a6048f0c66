package boltstore

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/reserve/reserve/internal/engine"
)

// The places of each actor in each workshop, for its limit per person, in
// two buckets that PutReservation, PutHold and PutWaitEntry keep in step
// with the records, so that a decision reads a few keys however long the
// actor's history is:
//
//   - places_by_person, keyed by the workshop id, 0x00 and the actor,
//     counts the places of the actor's active reservations of the workshop
//     and of the actor's entries waiting on its waiting list (the value:
//     format byte 1, then both counts as uvarints). A key whose counts
//     are both 0 is deleted, so the bucket holds the people who have
//     places now, not everyone who ever had some.
//   - holds_open_by_person lists the actor's open holds of the workshop
//     under the workshop id, 0x00, the actor, 0x00 and the hold's id (the
//     value is empty). A hold's deadline passes without a write, so the
//     holds are read and judged at the time of the decision; an actor has
//     few open holds at once.
//
// Open builds both of a file that an earlier schema version wrote.
var (
	bucketPlaces            = []byte("places_by_person")
	bucketOpenHoldsByPerson = []byte("holds_open_by_person")
)

// placesFormat is the format byte of a places_by_person value.
const placesFormat = 1

// personPlaces are the counts places_by_person keeps for one actor in one
// workshop.
type personPlaces struct{ reserved, waiting uint64 }

// personKey is the places_by_person key of actor in workshop; neither
// workshop ids nor actor names contain 0x00.
func personKey(workshop, actor string) []byte {
	k := make([]byte, 0, len(workshop)+1+len(actor))
	k = append(k, workshop...)
	k = append(k, 0)
	return append(k, actor...)
}

func encodePlaces(p personPlaces) []byte {
	raw := []byte{placesFormat}
	raw = binary.AppendUvarint(raw, p.reserved)
	return binary.AppendUvarint(raw, p.waiting)
}

func decodePlaces(raw []byte) (personPlaces, error) {
	if len(raw) == 0 || raw[0] != placesFormat {
		return personPlaces{}, fmt.Errorf("places record of unknown format %x", raw)
	}
	reserved, n := binary.Uvarint(raw[1:])
	if n <= 0 {
		return personPlaces{}, errors.New("places record without its reserved count")
	}
	waiting, m := binary.Uvarint(raw[1+n:])
	if m <= 0 || 1+n+m != len(raw) {
		return personPlaces{}, errors.New("places record without its waiting count, or with bytes after it")
	}
	return personPlaces{reserved: reserved, waiting: waiting}, nil
}

// addPlaces changes the counts of actor in workshop by reserved and
// waiting places (each may be negative). A count that would go below 0
// means the bucket no longer matches the records: the write fails rather
// than store a wrong count.
func (t *tx) addPlaces(workshop, actor string, reserved, waiting int) error {
	if reserved == 0 && waiting == 0 {
		return nil
	}
	k := personKey(workshop, actor)
	var p personPlaces
	if raw := t.read(bucketPlaces).Get(k); raw != nil {
		var err error
		if p, err = decodePlaces(raw); err != nil {
			return fmt.Errorf("read %s/%q: %w", bucketPlaces, k, err)
		}
	}
	if int64(p.reserved)+int64(reserved) < 0 || int64(p.waiting)+int64(waiting) < 0 {
		return fmt.Errorf("%s/%q counts %d reserved and %d waiting, fewer than the %d and %d taken away: the counts no longer match the records (reserved check)",
			bucketPlaces, k, p.reserved, p.waiting, -reserved, -waiting)
	}
	p.reserved = uint64(int64(p.reserved) + int64(reserved))
	p.waiting = uint64(int64(p.waiting) + int64(waiting))
	if p == (personPlaces{}) {
		return t.deleteRaw(bucketPlaces, k)
	}
	return t.putRaw(bucketPlaces, k, encodePlaces(p))
}

// activePlaces are the places r counts as reserved.
func activePlaces(r engine.Reservation) int {
	if r.Cancelled() {
		return 0
	}
	return r.Quantity
}

// waitingPlaces are the places e counts as waiting.
func waitingPlaces(e engine.WaitEntry) int {
	if e.State != engine.WaitWaiting {
		return 0
	}
	return e.Quantity
}

// putReservationPlaces keeps the counts in step with writing r over old
// (had is false for a new reservation).
func (t *tx) putReservationPlaces(r, old engine.Reservation, had bool) error {
	delta := activePlaces(r)
	if had {
		delta -= activePlaces(old)
	}
	return t.addPlaces(r.Workshop, r.Actor, delta, 0)
}

// putWaitEntryPlaces keeps the counts in step with writing e over old.
func (t *tx) putWaitEntryPlaces(e, old engine.WaitEntry, had bool) error {
	delta := waitingPlaces(e)
	if had {
		delta -= waitingPlaces(old)
	}
	return t.addPlaces(e.Workshop, e.Actor, 0, delta)
}

// putOpenHoldOfPerson keeps holds_open_by_person in step with writing h
// over old.
func (t *tx) putOpenHoldOfPerson(h, old engine.Hold, had bool) error {
	if had && old.Open() && !h.Open() {
		if err := t.deleteRaw(bucketOpenHoldsByPerson, workshopEntry(old.Workshop, old.Actor, old.ID)); err != nil {
			return err
		}
	}
	if h.Open() && !(had && old.Open()) {
		return t.putRaw(bucketOpenHoldsByPerson, workshopEntry(h.Workshop, h.Actor, h.ID), []byte{})
	}
	return nil
}

// PlacesOf reads actor's counts in workshop and actor's open holds there.
// A file that lacks the buckets (one an earlier schema version wrote,
// opened read-only) is scanned instead.
func (t *tx) PlacesOf(workshop, actor string, now time.Time) (engine.Places, error) {
	counts, open := t.read(bucketPlaces), t.read(bucketOpenHoldsByPerson)
	if counts == nil || open == nil {
		return engine.CountPlaces(t, workshop, actor, now)
	}
	var p personPlaces
	if raw := counts.Get(personKey(workshop, actor)); raw != nil {
		var err error
		if p, err = decodePlaces(raw); err != nil {
			return engine.Places{}, fmt.Errorf("read the places of %s in workshop %s: %w", actor, workshop, err)
		}
	}
	places := engine.Places{Reserved: int(p.reserved), Waiting: int(p.waiting)}
	prefix := workshopEntry(workshop, actor, "")
	var ids []string
	c := open.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		ids = append(ids, string(k[len(prefix):]))
	}
	for _, id := range ids {
		h, ok, err := t.Hold(id)
		if err != nil {
			return engine.Places{}, err
		}
		if ok && h.Workshop == workshop && h.Actor == actor && h.Open() && h.ExpiresAt.After(now) {
			places.Held += h.Quantity
		}
	}
	return places, nil
}

// wantPlaces reads every reservation, open hold and waiting entry, and
// returns what both buckets should hold.
func wantPlaces(read func([]byte) *bolt.Bucket) (map[string]personPlaces, [][]byte, error) {
	counts := map[string]personPlaces{}
	var open [][]byte
	each := func(bucket []byte, fn func(k, raw []byte) error) error {
		b := read(bucket)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, raw []byte) error {
			if err := fn(k, raw); err != nil {
				return fmt.Errorf("decode %s/%q: %w", bucket, k, err)
			}
			return nil
		})
	}
	err := each(bucketReservations, func(k, raw []byte) error {
		r, err := decodeReservation(k, raw)
		if n := activePlaces(r); err == nil && n > 0 {
			p := counts[string(personKey(r.Workshop, r.Actor))]
			p.reserved += uint64(n)
			counts[string(personKey(r.Workshop, r.Actor))] = p
		}
		return err
	})
	if err == nil {
		err = each(bucketWaitEntries, func(k, raw []byte) error {
			e, err := decodeWaitEntry(k, raw)
			if n := waitingPlaces(e); err == nil && n > 0 {
				p := counts[string(personKey(e.Workshop, e.Actor))]
				p.waiting += uint64(n)
				counts[string(personKey(e.Workshop, e.Actor))] = p
			}
			return err
		})
	}
	if err == nil {
		err = each(bucketHolds, func(k, raw []byte) error {
			h, err := decodeHold(k, raw)
			if err == nil && h.Open() {
				open = append(open, workshopEntry(h.Workshop, h.Actor, string(k)))
			}
			return err
		})
	}
	slices.SortFunc(open, bytes.Compare)
	return counts, open, err
}

// buildPlaces fills both buckets from the records, replacing whatever
// they held, in the transaction that upgrades an earlier schema version's
// file.
func buildPlaces(btx *bolt.Tx, path string) error {
	counts, open, err := wantPlaces(btx.Bucket)
	if err != nil {
		return fmt.Errorf("build %s of %s: %w", bucketPlaces, path, err)
	}
	for _, name := range [][]byte{bucketPlaces, bucketOpenHoldsByPerson} {
		if err := btx.DeleteBucket(name); err != nil && btx.Bucket(name) != nil {
			return fmt.Errorf("clear bucket %s in %s: %w", name, path, err)
		}
	}
	places, err := btx.CreateBucket(bucketPlaces)
	if err != nil {
		return fmt.Errorf("create bucket %s in %s: %w", bucketPlaces, path, err)
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := places.Put([]byte(k), encodePlaces(counts[k])); err != nil {
			return fmt.Errorf("build %s of %s: %w", bucketPlaces, path, err)
		}
	}
	holds, err := btx.CreateBucket(bucketOpenHoldsByPerson)
	if err != nil {
		return fmt.Errorf("create bucket %s in %s: %w", bucketOpenHoldsByPerson, path, err)
	}
	for _, k := range open {
		if err := holds.Put(k, []byte{}); err != nil {
			return fmt.Errorf("build %s of %s: %w", bucketOpenHoldsByPerson, path, err)
		}
	}
	return nil
}

// verifyPlaces reports every difference between the records and both
// buckets: a count that differs from what the records add up to (a
// missing key included), a key with no places, and an open hold missing
// from the list or listed without being open.
func verifyPlaces(t *tx) ([]engine.Finding, error) {
	places, open := t.read(bucketPlaces), t.read(bucketOpenHoldsByPerson)
	if places == nil || open == nil {
		return nil, nil // A read-only open of an older file: nothing to check.
	}
	counts, want, err := wantPlaces(t.read)
	if err != nil {
		return nil, err
	}
	var findings []engine.Finding
	add := func(format string, args ...any) {
		findings = append(findings, engine.Finding{Kind: engine.FindingPlaces, Detail: fmt.Sprintf(format, args...)})
	}
	err = places.ForEach(func(k, raw []byte) error {
		p, err := decodePlaces(raw)
		switch w, ok := counts[string(k)]; {
		case err != nil:
			add("%s/%q: %v", bucketPlaces, k, err)
		case !ok:
			add("%s/%q counts %d reserved and %d waiting, but the records have no places there", bucketPlaces, k, p.reserved, p.waiting)
		case p != w:
			add("%s/%q counts %d reserved and %d waiting, but the records add up to %d and %d", bucketPlaces, k, p.reserved, p.waiting, w.reserved, w.waiting)
		}
		delete(counts, string(k))
		return nil
	})
	if err != nil {
		return nil, err
	}
	for k, w := range counts {
		add("%s lacks %q, whose records add up to %d reserved and %d waiting", bucketPlaces, k, w.reserved, w.waiting)
	}
	listed := map[string]bool{}
	err = open.ForEach(func(k, _ []byte) error {
		listed[string(k)] = true
		if _, found := slices.BinarySearchFunc(want, k, bytes.Compare); !found {
			add("%s lists %q, which is not an open hold of that workshop and actor", bucketOpenHoldsByPerson, k)
		}
		return nil
	})
	for _, k := range want {
		if !listed[string(k)] {
			add("%s lacks the open hold %q", bucketOpenHoldsByPerson, k)
		}
	}
	slices.SortFunc(findings, func(a, b engine.Finding) int { return cmp.Compare(a.Detail, b.Detail) })
	return findings, err
}
