package boltstore

import (
	"bytes"
	"fmt"

	"github.com/reserve/reserve/internal/engine"
)

// Receipts and tombstones are stored under one of two key forms, chosen by
// the operation key. A random (UUIDv4) key is stored under actor 0x00 key,
// as every schema before 12 stored all of them: an actor's receipts are
// next to each other, and a commit of many new ones writes a page of the
// tree for nearly every one. A time-ordered (UUIDv7) key is stored under
// 0x00 key actor: the key, whose text sorts by the millisecond it was made,
// comes first, so the receipts made at nearly the same time, of whatever
// actor, are next to each other at the end of the 0x00 range, and a commit
// of many new ones writes a few pages. No key of the first form starts
// with 0x00, because actor names are not empty and cannot contain 0x00.
//
// The time indexes name records in the first form whatever their key
// (timeEntry), so that the entries of one time keep the order of
// engine.TimePosition.

// receiptKey is the key of the receipt or tombstone of actor and key.
func receiptKey(actor string, key engine.OperationKey) []byte {
	if timeOrdered(key) {
		k := make([]byte, 0, 1+len(key)+len(actor))
		k = append(k, 0)
		k = append(k, key...)
		return append(k, actor...)
	}
	return positionKey(actor, key)
}

// positionKey is actor 0x00 key: the first form of receiptKey, and how the
// time indexes name a record.
func positionKey(actor string, key engine.OperationKey) []byte {
	k := make([]byte, 0, len(actor)+1+len(key))
	k = append(k, actor...)
	k = append(k, 0)
	return append(k, key...)
}

// timeOrderedKeyLen is the length of a UUIDv7 operation key's text.
const timeOrderedKeyLen = 36

// timeOrdered reports whether key, which the engine has checked to be an
// operation key (or is empty, as in a seek of an actor's range), is a
// UUIDv7: its version digit is all that tells the two kinds apart. It is
// engine.OperationKey.IsTimeOrdered without checking the rest again, for
// the writes and lookups of every decision; keys read from the file are
// checked whole (splitReceiptKey).
func timeOrdered(key engine.OperationKey) bool {
	return len(key) == timeOrderedKeyLen && key[14] == '7'
}

// splitReceiptKey is the inverse of receiptKey and of positionKey.
func splitReceiptKey(k []byte) (actor string, key engine.OperationKey, ok bool) {
	if len(k) > 0 && k[0] == 0 {
		if len(k) <= 1+timeOrderedKeyLen {
			return "", "", false
		}
		key = engine.OperationKey(k[1 : 1+timeOrderedKeyLen])
		return string(k[1+timeOrderedKeyLen:]), key, key.IsTimeOrdered()
	}
	for i, c := range k {
		if c == 0 {
			return string(k[:i]), engine.OperationKey(k[i+1:]), true
		}
	}
	return "", "", false
}

// positionOf returns the position form (positionKey) of a record key, and
// recordOf the record key of a position: each is the identity for a record
// of a random key and for bytes that are not a receipt key.
func positionOf(k []byte) []byte {
	if len(k) > 1+timeOrderedKeyLen && k[0] == 0 {
		return positionKey(string(k[1+timeOrderedKeyLen:]), engine.OperationKey(k[1:1+timeOrderedKeyLen]))
	}
	return k
}

func recordOf(p []byte) []byte {
	if actor, key, ok := splitReceiptKey(p); ok && timeOrdered(key) {
		return receiptKey(actor, key)
	}
	return p
}

// HasReceiptsOf seeks the actor's range (actor 0x00 …) of receipts and
// tombstones of random keys, and looks the actor up among those with a
// receipt of a time-ordered key (bucketKeyedActors), which cannot be found
// by the actor in the receipts.
func (t *tx) HasReceiptsOf(actor string) (bool, error) {
	if b := t.read(bucketKeyedActors); b != nil && b.Get([]byte(actor)) != nil {
		return true, nil
	}
	prefix := positionKey(actor, "")
	for _, name := range [][]byte{bucketReceipts, bucketTombstones} {
		b := t.read(name)
		if b == nil {
			continue
		}
		if k, _ := b.Cursor().Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) {
			return true, nil
		}
	}
	return false, nil
}

// markKeyed notes that actor has a receipt or tombstone under key, if key
// is time-ordered; the note is written once per actor and never removed,
// since tombstones never are.
func (t *tx) markKeyed(actor string, key engine.OperationKey) error {
	if !timeOrdered(key) || t.b.Bucket(bucketKeyedActors).Get([]byte(actor)) != nil {
		return nil
	}
	return t.putRaw(bucketKeyedActors, []byte(actor), []byte{})
}

// verifyKeyedActors reports every actor with a receipt or tombstone of a
// time-ordered key that bucketKeyedActors does not list: HasReceiptsOf
// would not find it.
func verifyKeyedActors(t *tx) ([]engine.Finding, error) {
	marks := t.read(bucketKeyedActors)
	var findings []engine.Finding
	for _, name := range [][]byte{bucketReceipts, bucketTombstones} {
		b := t.read(name)
		if b == nil {
			continue
		}
		// The keys of the second form are the bucket's first.
		c := b.Cursor()
		for k, _ := c.First(); k != nil && k[0] == 0; k, _ = c.Next() {
			actor, _, ok := splitReceiptKey(k)
			switch {
			case !ok:
				findings = append(findings, engine.Finding{Kind: engine.FindingTimeIndex, Detail: fmt.Sprintf("%s/%q is not a receipt key", name, k)})
			case marks == nil || marks.Get([]byte(actor)) == nil:
				findings = append(findings, engine.Finding{Kind: engine.FindingTimeIndex, Detail: fmt.Sprintf("%s/%q: actor %s is missing from %s", name, k, actor, bucketKeyedActors)})
			}
		}
	}
	return findings, nil
}
