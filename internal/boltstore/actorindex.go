package boltstore

import (
	"bytes"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/reserve/reserve/internal/engine"
)

// The actor indexes list the reservations and the holds of each actor: the
// key of an entry is the actor, 0x00 and the record's id (ids start with
// their creation time, so an actor's entries are in creation order); the
// value is empty. An actor's reservations and holds, newest first, are one
// cursor range read backwards. A record's actor never changes, so the store
// writes the entry with every write of its record; Open builds the indexes
// of a file that an earlier schema version wrote.

// actorIndexed describes one record kind and its actor index.
type actorIndexed[R any] struct {
	records, index []byte
	decode         func(k, raw []byte) (R, error)
	actor          func(R) string
}

var reservationActors = actorIndexed[engine.Reservation]{
	records: bucketReservations, index: bucketReservationsByActor, decode: decodeReservation,
	actor: func(r engine.Reservation) string { return r.Actor },
}

var holdActors = actorIndexed[engine.Hold]{
	records: bucketHolds, index: bucketHoldsByActor, decode: decodeHold,
	actor: func(h engine.Hold) string { return h.Actor },
}

// actorEntry is the index key of the record id of actor; actor names
// cannot contain 0x00.
func actorEntry(actor, id string) []byte {
	e := make([]byte, 0, len(actor)+1+len(id))
	e = append(e, actor...)
	e = append(e, 0)
	return append(e, id...)
}

// replace writes the index entry of rec, stored under id, and removes the
// entry of the record it replaces (old, if had) if that had another actor;
// a record replaced by one of the same actor has its entry already.
func (ix actorIndexed[R]) replace(t *tx, id string, rec, old R, had bool) error {
	if had {
		prev := ix.actor(old)
		if prev == ix.actor(rec) {
			return nil
		}
		if err := t.deleteRaw(ix.index, actorEntry(prev, id)); err != nil {
			return err
		}
	}
	return t.putRaw(ix.index, actorEntry(ix.actor(rec), id), []byte{})
}

// newestFirst visits the records of actor with an id below before (any,
// for ""), in descending order of id, reading the index in chunks (see
// firstChunk): a scan that fn stops early reads about as many entries as
// it visited, not every entry below before. A file that lacks the index
// (one an earlier schema version wrote, opened read-only) is scanned
// instead.
func (ix actorIndexed[R]) newestFirst(t *tx, actor, before string, fn func(R) error) error {
	if t.read(ix.index) == nil {
		return ix.scanUnindexed(t, actor, before, fn)
	}
	prefix := actorEntry(actor, "")
	bound := actorEntry(actor, before)
	if before == "" {
		// The first key after the actor's range.
		bound = append(bytes.Clone(prefix[:len(prefix)-1]), 1)
	}
	in := func(k []byte) bool { return bytes.HasPrefix(k, prefix) }
	return t.scanChunks(ix.index, backward(bound, in), func(k []byte) error {
		return ix.visit(t, actor, string(k[len(prefix):]), fn)
	})
}

// visit calls fn for the record id of actor. An entry that names no
// record, or one of another actor, is passed over (Check reports it): a
// person is never shown what is not theirs.
func (ix actorIndexed[R]) visit(t *tx, actor, id string, fn func(R) error) error {
	raw := t.read(ix.records).Get([]byte(id))
	if raw == nil {
		return nil
	}
	rec, err := ix.decode([]byte(id), raw)
	if err != nil {
		return fmt.Errorf("decode %s/%q: %w", ix.records, id, err)
	}
	if ix.actor(rec) != actor {
		return nil
	}
	return fn(rec)
}

// verify reports every difference between the records and their index: a
// record without its entry, and an entry that names no record or a record
// of another actor.
func (ix actorIndexed[R]) verify(t *tx) ([]engine.Finding, error) {
	index, records := t.read(ix.index), t.read(ix.records)
	if index == nil || records == nil {
		return nil, nil // A read-only open of an older file: no index to check.
	}
	var findings []engine.Finding
	err := index.ForEach(func(e, _ []byte) error {
		i := bytes.IndexByte(e, 0)
		if i < 0 {
			findings = append(findings, engine.Finding{Kind: engine.FindingActorIndex, Detail: fmt.Sprintf("%s entry %q has no actor separator", ix.index, e)})
			return nil
		}
		actor, id := string(e[:i]), e[i+1:]
		raw := records.Get(id)
		if raw == nil {
			findings = append(findings, engine.Finding{Kind: engine.FindingActorIndex, Detail: fmt.Sprintf("%s lists %s %s of %s, which does not exist", ix.index, ix.records, id, actor)})
			return nil
		}
		rec, err := ix.decode(id, raw)
		if err != nil {
			return fmt.Errorf("decode %s/%q: %w", ix.records, id, err)
		}
		if owner := ix.actor(rec); owner != actor {
			findings = append(findings, engine.Finding{Kind: engine.FindingActorIndex, Detail: fmt.Sprintf("%s lists %s %s under %s, but it is %s's", ix.index, ix.records, id, actor, owner)})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = records.ForEach(func(k, raw []byte) error {
		rec, err := ix.decode(k, raw)
		if err != nil {
			return fmt.Errorf("decode %s/%q: %w", ix.records, k, err)
		}
		if index.Get(actorEntry(ix.actor(rec), string(k))) == nil {
			findings = append(findings, engine.Finding{Kind: engine.FindingActorIndex, Detail: fmt.Sprintf("%s %s of %s is missing from %s", ix.records, k, ix.actor(rec), ix.index)})
		}
		return nil
	})
	return findings, err
}

// scanUnindexed is newestFirst on a file without the index: it reads every
// record.
func (ix actorIndexed[R]) scanUnindexed(t *tx, actor, before string, fn func(R) error) error {
	records := t.read(ix.records)
	if records == nil {
		return nil
	}
	var ids []string
	err := records.ForEach(func(k, raw []byte) error {
		rec, err := ix.decode(k, raw)
		if err != nil {
			return fmt.Errorf("decode %s/%q: %w", ix.records, k, err)
		}
		if ix.actor(rec) == actor && (before == "" || string(k) < before) {
			ids = append(ids, string(k))
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.Reverse(ids) // ForEach visits in key order.
	for _, id := range ids {
		if err := ix.visit(t, actor, id, fn); err != nil {
			return err
		}
	}
	return nil
}

// build fills the index from the records, replacing whatever it held, in
// the transaction that upgrades an earlier schema version's file. Entries
// of many actors interleave, so pages keep bbolt's default fill.
func (ix actorIndexed[R]) build(btx *bolt.Tx, path string) error {
	return buildIndex(btx, path, ix.records, ix.index, bolt.DefaultFillPercent, func(k, raw []byte) ([]byte, error) {
		rec, err := ix.decode(k, raw)
		return actorEntry(ix.actor(rec), string(k)), err
	})
}

func (t *tx) ForEachReservationOf(actor, before string, fn func(engine.Reservation) error) error {
	return reservationActors.newestFirst(t, actor, before, fn)
}

func (t *tx) ForEachHoldOf(actor, before string, fn func(engine.Hold) error) error {
	return holdActors.newestFirst(t, actor, before, fn)
}
