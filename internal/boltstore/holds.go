package boltstore

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// Holds are stored as JSON by id. The holds_open bucket indexes the open
// ones by workshop 0x00 deadline (8 bytes, big-endian Unix nanoseconds)
// then id, with empty values, so that the holds of a workshop whose
// deadline has passed are one cursor range; PutHold keeps it in step.

// openHoldKey is the index key of open hold h.
func openHoldKey(h engine.Hold) []byte {
	k := make([]byte, 0, len(h.Workshop)+1+8+len(h.ID))
	k = append(k, h.Workshop...)
	k = append(k, 0)
	k = binary.BigEndian.AppendUint64(k, uint64(h.ExpiresAt.UnixNano()))
	return append(k, h.ID...)
}

func (t *tx) Hold(id string) (engine.Hold, bool, error) {
	var h engine.Hold
	ok, err := t.get(bucketHolds, []byte(id), &h)
	return h, ok, err
}

// decodeHold decodes a hold record.
func decodeHold(_, raw []byte) (engine.Hold, error) {
	var h engine.Hold
	err := json.Unmarshal(raw, &h)
	return h, err
}

func (t *tx) PutHold(h engine.Hold) error {
	old, had, err := t.Hold(h.ID)
	if err != nil {
		return err
	}
	index := t.bucket(bucketOpenHolds)
	if had && old.Open() {
		if err := index.Delete(openHoldKey(old)); err != nil {
			return fmt.Errorf("delete %s entry of hold %s: %w", bucketOpenHolds, h.ID, err)
		}
	}
	if h.Open() {
		if err := t.putRaw(bucketOpenHolds, openHoldKey(h), []byte{}); err != nil {
			return err
		}
	}
	if err := holdActors.replace(t, h.ID, h, old, had); err != nil {
		return err
	}
	if err := holdWorkshops.replace(t, h.ID, h, had); err != nil {
		return err
	}
	if err := t.putOpenHoldOfPerson(h, old, had); err != nil {
		return err
	}
	return t.put(bucketHolds, []byte(h.ID), h)
}

func (t *tx) ForEachHold(fn func(engine.Hold) error) error {
	return forEach(t, bucketHolds, fn)
}

// ForEachOpenHold reads the index of open holds in chunks, so that fn may
// use the transaction and a scan that fn stops early reads few entries.
func (t *tx) ForEachOpenHold(workshop string, through time.Time, fn func(engine.Hold) error) error {
	prefix := append([]byte(workshop), 0)
	last := binary.BigEndian.AppendUint64(bytes.Clone(prefix), uint64(through.UnixNano()))
	var short error
	due := forward(prefix, func(k []byte) bool {
		if !bytes.HasPrefix(k, prefix) {
			return false
		}
		if len(k) < len(prefix)+8 {
			short = fmt.Errorf("%s key %q is too short", bucketOpenHolds, k)
			return false
		}
		return bytes.Compare(k[:len(prefix)+8], last) <= 0
	})
	err := t.scanChunks(bucketOpenHolds, due, func(k []byte) error {
		id := string(k[len(prefix)+8:])
		h, ok, err := t.Hold(id)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%s names hold %s, which does not exist", bucketOpenHolds, id)
		}
		return fn(h)
	})
	if err == nil {
		err = short
	}
	return err
}
