package boltstore

import (
	"context"
	"fmt"
	"io"

	bolt "go.etcd.io/bbolt"
)

// Backup writes a consistent snapshot of the whole database file to w while
// the store keeps serving: one bbolt read transaction sees every bucket
// (workshops and their counters, reservations, receipts, tombstones, tokens,
// events, meta) as of one commit, and writers go on committing meanwhile.
// size is called with the snapshot's exact length before the first byte is
// written, so that an HTTP answer can announce it. The file that w receives
// is a complete bbolt database that Open and Check accept. A long backup
// keeps the pages of its snapshot from being reused, so the live file may
// grow while it runs.
func (s *Store) Backup(ctx context.Context, size func(int64), w io.Writer) (int64, error) {
	leave, err := s.enter(ctx)
	if err != nil {
		return 0, err
	}
	defer leave()
	var n int64
	err = s.db.View(func(tx *bolt.Tx) error {
		if size != nil {
			size(tx.Size())
		}
		var err error
		n, err = tx.WriteTo(w)
		return err
	})
	if err != nil {
		return n, fmt.Errorf("back up %s: %w", s.path, err)
	}
	return n, nil
}
