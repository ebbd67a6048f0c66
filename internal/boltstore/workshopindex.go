package boltstore

import (
	"bytes"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/reserve/reserve/internal/engine"
)

// The workshop indexes list the reservations and the holds of each
// workshop by actor: the key of an entry is the workshop id, 0x00, the
// actor, 0x00 and the record's id; the value is empty. One actor's records
// in a workshop (for its limit per person) and a workshop's attendee list,
// page by page, are each one forward cursor range. A record's workshop and
// actor never change, so an entry is written once, with the record's
// first write; Open builds the indexes of a file that an earlier schema
// version wrote.

// workshopIndexed describes one record kind and its workshop index.
type workshopIndexed[R any] struct {
	records, index []byte
	decode         func(k, raw []byte) (R, error)
	of             func(R) (workshop, actor string)
}

var reservationWorkshops = workshopIndexed[engine.Reservation]{
	records: bucketReservations, index: bucketReservationsByWorkshop, decode: decodeReservation,
	of: func(r engine.Reservation) (string, string) { return r.Workshop, r.Actor },
}

var holdWorkshops = workshopIndexed[engine.Hold]{
	records: bucketHolds, index: bucketHoldsByWorkshop, decode: decodeHold,
	of: func(h engine.Hold) (string, string) { return h.Workshop, h.Actor },
}

// workshopEntry is the index key of record id of actor in workshop;
// neither workshop ids nor actor names contain 0x00.
func workshopEntry(workshop, actor, id string) []byte {
	e := make([]byte, 0, len(workshop)+len(actor)+2+len(id))
	e = append(e, workshop...)
	e = append(e, 0)
	e = append(e, actor...)
	e = append(e, 0)
	return append(e, id...)
}

// entry returns the index key of rec, stored under id.
func (ix workshopIndexed[R]) entry(id string, rec R) []byte {
	w, actor := ix.of(rec)
	return workshopEntry(w, actor, id)
}

// replace writes the index entry of rec, stored under id, for a caller
// that has read whether a record is already stored under id (had): the entry is written with the record's first
// write, and a record's workshop and actor never change, so a record that
// was there has its entry already and nothing is read or written.
func (ix workshopIndexed[R]) replace(t *tx, id string, rec R, had bool) error {
	if had {
		return nil
	}
	return t.putRaw(ix.index, ix.entry(id, rec), []byte{})
}

// forEachIn visits the records of workshop after position after, in order
// of actor, then id. A file that lacks the index (one an earlier schema
// version wrote, opened read-only) is scanned instead.
func (ix workshopIndexed[R]) forEachIn(t *tx, workshop string, after engine.PersonPosition, fn func(R) error) error {
	index := t.read(ix.index)
	if index == nil {
		return ix.scanUnindexed(t, workshop, after, fn)
	}
	prefix := append([]byte(workshop), 0)
	c := index.Cursor()
	k, _ := c.Seek(workshopEntry(workshop, after.Actor, after.ID))
	if k != nil && bytes.Equal(k, workshopEntry(workshop, after.Actor, after.ID)) {
		k, _ = c.Next()
	}
	for ; k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		rest := k[len(prefix):]
		i := bytes.IndexByte(rest, 0)
		if i < 0 {
			continue // Check reports it.
		}
		id := string(rest[i+1:])
		raw := t.read(ix.records).Get([]byte(id))
		if raw == nil {
			continue // Check reports it.
		}
		rec, err := ix.decode([]byte(id), raw)
		if err != nil {
			return fmt.Errorf("decode %s/%q: %w", ix.records, id, err)
		}
		if !bytes.Equal(ix.entry(id, rec), k) {
			continue // Check reports it.
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
	return nil
}

// scanUnindexed is forEachIn on a file without the index: it reads every
// record.
func (ix workshopIndexed[R]) scanUnindexed(t *tx, workshop string, after engine.PersonPosition, fn func(R) error) error {
	records := t.read(ix.records)
	if records == nil {
		return nil
	}
	type found struct {
		at  engine.PersonPosition
		rec R
	}
	var recs []found
	err := records.ForEach(func(k, raw []byte) error {
		rec, err := ix.decode(k, raw)
		if err != nil {
			return fmt.Errorf("decode %s/%q: %w", ix.records, k, err)
		}
		w, actor := ix.of(rec)
		if p := (engine.PersonPosition{Actor: actor, ID: string(k)}); w == workshop && after.Before(p) {
			recs = append(recs, found{p, rec})
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortFunc(recs, func(a, b found) int {
		return bytes.Compare(workshopEntry("", a.at.Actor, a.at.ID), workshopEntry("", b.at.Actor, b.at.ID))
	})
	for _, r := range recs {
		if err := fn(r.rec); err != nil {
			return err
		}
	}
	return nil
}

// verify reports every difference between the records and their index: a
// record without its entry, and an entry that names no record or not the
// workshop and actor of its record.
func (ix workshopIndexed[R]) verify(t *tx) ([]engine.Finding, error) {
	index, records := t.read(ix.index), t.read(ix.records)
	if index == nil || records == nil {
		return nil, nil // A read-only open of an older file: no index to check.
	}
	want := map[string]bool{}
	var findings []engine.Finding
	err := records.ForEach(func(k, raw []byte) error {
		rec, err := ix.decode(k, raw)
		if err != nil {
			return fmt.Errorf("decode %s/%q: %w", ix.records, k, err)
		}
		e := ix.entry(string(k), rec)
		want[string(e)] = true
		if index.Get(e) == nil {
			w, actor := ix.of(rec)
			findings = append(findings, engine.Finding{Kind: engine.FindingWorkshopIndex, Detail: fmt.Sprintf("%s %s of %s in workshop %s is missing from %s", ix.records, k, actor, w, ix.index)})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = index.ForEach(func(e, _ []byte) error {
		if !want[string(e)] {
			findings = append(findings, engine.Finding{Kind: engine.FindingWorkshopIndex, Detail: fmt.Sprintf("%s entry %q names no %s of that workshop and actor", ix.index, e, ix.records)})
		}
		return nil
	})
	return findings, err
}

// build fills the index from the records, replacing whatever it held, in
// the transaction that upgrades an earlier schema version's file.
func (ix workshopIndexed[R]) build(btx *bolt.Tx, path string) error {
	return buildIndex(btx, path, ix.records, ix.index, bolt.DefaultFillPercent, func(k, raw []byte) ([]byte, error) {
		rec, err := ix.decode(k, raw)
		return ix.entry(string(k), rec), err
	})
}

func (t *tx) ForEachReservationIn(workshop string, after engine.PersonPosition, fn func(engine.Reservation) error) error {
	return reservationWorkshops.forEachIn(t, workshop, after, fn)
}

func (t *tx) ForEachHoldIn(workshop string, after engine.PersonPosition, fn func(engine.Hold) error) error {
	return holdWorkshops.forEachIn(t, workshop, after, fn)
}

func (t *tx) DeleteWorkshop(id string) error {
	return t.deleteRaw(bucketWorkshops, []byte(id))
}
