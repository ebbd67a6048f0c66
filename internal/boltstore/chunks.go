package boltstore

import (
	"bytes"

	bolt "go.etcd.io/bbolt"
)

// firstChunk and maxChunk bound the index keys a chunked scan reads before
// it calls its function: it reads a chunk of keys through a cursor, visits
// them (the function may write to the transaction, which a live cursor
// would not survive), then seeks back to where it stopped for the next
// chunk, twice as large, up to maxChunk keys. So a scan that its function
// stops early has read about as many keys as it visited, however long the
// range it could have walked.
const (
	firstChunk = 8
	maxChunk   = 512
)

// walk is one direction of a chunked scan over a bucket's keys.
type walk struct {
	// start positions a new cursor on the first key of the scan, when last
	// is nil, or on the first key after last, and returns it (nil when
	// there is none).
	start func(c *bolt.Cursor, last []byte) []byte
	// next steps the cursor one key further.
	next func(c *bolt.Cursor) []byte
	// in reports whether a key is still in the scanned range.
	in func(k []byte) bool
}

// forward is a walk in key order from first (inclusive) while in holds.
func forward(first []byte, in func(k []byte) bool) walk {
	return walk{
		start: func(c *bolt.Cursor, last []byte) []byte {
			if last == nil {
				k, _ := c.Seek(first)
				return k
			}
			k, _ := c.Seek(last)
			if bytes.Equal(k, last) {
				k, _ = c.Next()
			}
			return k
		},
		next: func(c *bolt.Cursor) []byte { k, _ := c.Next(); return k },
		in:   in,
	}
}

// backward is a walk in descending key order from the last key below
// bound while in holds.
func backward(bound []byte, in func(k []byte) bool) walk {
	return walk{
		start: func(c *bolt.Cursor, last []byte) []byte {
			if last == nil {
				last = bound
			}
			return seekBelow(c, last)
		},
		next: func(c *bolt.Cursor) []byte { k, _ := c.Prev(); return k },
		in:   in,
	}
}

// seekBelow positions c on the last key below k and returns it (nil when
// there is none).
func seekBelow(c *bolt.Cursor, k []byte) []byte {
	if got, _ := c.Seek(k); got == nil {
		got, _ = c.Last() // No key is at or above k.
		return got
	}
	got, _ := c.Prev()
	return got
}

// scanChunks calls visit with a copy of each key of bucket that w walks,
// reading them in chunks (see firstChunk), until visit returns an error,
// which it returns.
func (t *tx) scanChunks(bucket []byte, w walk, visit func(k []byte) error) error {
	var last []byte
	for n := firstChunk; ; n = min(2*n, maxChunk) {
		b := t.read(bucket)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		keys := make([][]byte, 0, n)
		for k := w.start(c, last); k != nil && w.in(k); k = w.next(c) {
			keys = append(keys, bytes.Clone(k))
			if len(keys) == n {
				break
			}
		}
		for _, k := range keys {
			if err := visit(k); err != nil {
				return err
			}
		}
		if len(keys) < n {
			return nil
		}
		last = keys[len(keys)-1]
	}
}
