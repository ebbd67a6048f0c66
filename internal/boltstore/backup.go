package boltstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	bolt "go.etcd.io/bbolt"

	"github.com/reserve/reserve/internal/engine"
)

// Backup writes a consistent snapshot of the whole database file to w while
// the store keeps serving: one bbolt read transaction sees every bucket
// (workshops and their counters, reservations, receipts, tombstones, tokens,
// events, meta) as of one commit, and writers go on committing meanwhile.
//
// The transaction only lasts while the snapshot is copied, at disk speed,
// into a temporary file in the database's directory; w then gets that file
// with no transaction open, so however slowly w is read, no writer ever
// waits for it (bbolt cannot remap a growing file while a read transaction
// is open). The temporary file takes as much disk space as the snapshot
// until Backup returns; where the system tells the free space (Linux),
// Backup refuses to start when that would leave the database's file system
// less than backupReserve free (CodeInsufficientStorage). On Unix the file
// loses its name as soon as it is created, so only this Backup can read it
// and nothing is left of it once it is closed, whatever ends the process.
//
// size is called with the snapshot's exact length before the first byte is
// written to w, so that an HTTP answer can announce it; an error returned
// before size is called means nothing was written. The bytes w receives are
// a complete bbolt database that Open and Check accept.
func (s *Store) Backup(ctx context.Context, size func(int64), w io.Writer) (int64, error) {
	f, n, release, err := s.snapshot(ctx)
	if err != nil {
		return 0, fmt.Errorf("back up %s: %w", s.path, err)
	}
	defer release()
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("back up %s: %w", s.path, err)
	}
	if size != nil {
		size(n)
	}
	sent, err := io.Copy(w, io.NewSectionReader(f, 0, n))
	if err == nil && sent != n {
		err = fmt.Errorf("the snapshot file ended after %d of %d bytes", sent, n)
	}
	if err != nil {
		return sent, fmt.Errorf("back up %s: send the snapshot: %w", s.path, err)
	}
	return sent, nil
}

// maxBackupReserve is the most free space a backup leaves on the
// database's file system for the database to grow into while the backup's
// temporary file holds its snapshot: four of the 16 MiB steps in which
// bbolt grows a large file.
const maxBackupReserve = 64 << 20

// backupReserve is the free space a backup leaves beside its snapshot on a
// file system of size bytes: maxBackupReserve, but at most an eighth of the
// file system, so that a small one (a tmpfs of a few MiB holding a small
// database) can hold a backup too; a database on it grows in steps that
// small.
func backupReserve(size int64) int64 {
	return min(maxBackupReserve, size/8)
}

// freeSpace returns how many bytes may still be written to the file system
// of dir and how large it is, or an error wrapping errors.ErrUnsupported
// where the system does not tell.
var freeSpace = statFreeSpace

// snapshot copies a consistent snapshot of the database from one read
// transaction into a temporary file next to it and returns the file, the
// snapshot's length and a function that closes the file and removes it.
func (s *Store) snapshot(ctx context.Context) (f *os.File, n int64, release func(), err error) {
	leave, err := s.enter(ctx)
	if err != nil {
		return nil, 0, nil, err
	}
	defer leave()
	dir := filepath.Dir(s.path)
	f, err = os.CreateTemp(dir, filepath.Base(s.path)+".backup-*") // Mode 0600.
	if err != nil {
		return nil, 0, nil, fmt.Errorf("create the snapshot file: %w", err)
	}
	// The open file keeps the snapshot. Where an open file cannot be
	// removed (Windows), it is removed when it is released.
	named := os.Remove(f.Name()) != nil
	release = func() {
		f.Close()
		if named {
			os.Remove(f.Name())
		}
	}
	cw := ctxWriter{ctx: ctx, w: f}
	err = s.db.View(func(tx *bolt.Tx) error {
		if err := checkBackupSpace(dir, tx.Size()); err != nil {
			return err
		}
		var err error
		n, err = tx.WriteTo(&cw)
		return err
	})
	if err != nil {
		release()
		// bbolt flattens the writer's error to text; cw kept it.
		switch {
		case ctx.Err() != nil:
			err = ctx.Err()
		case errors.Is(cw.err, syscall.ENOSPC) || errors.Is(cw.err, syscall.EDQUOT):
			err = engine.Errorf(engine.CodeInsufficientStorage, "the file system of %s filled up while the backup's snapshot was written there (%v): free some space there", dir, cw.err)
		}
		return nil, 0, nil, err
	}
	return f, n, release, nil
}

// checkBackupSpace refuses a snapshot of need bytes that would leave the
// file system of dir less than backupReserve free. That is a condition of
// the machine, not a fault of the daemon: it is answered with
// CodeInsufficientStorage, and the same backup succeeds once space is
// freed.
func checkBackupSpace(dir string, need int64) error {
	free, size, err := freeSpace(dir)
	if errors.Is(err, errors.ErrUnsupported) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("measure the free space in %s: %w", dir, err)
	}
	if reserve := backupReserve(size); free-need < reserve {
		return engine.Errorf(engine.CodeInsufficientStorage, "the backup needs %d MiB free in %s for its snapshot and %d MiB left for the database to grow, but only %d MiB are free: free some space there",
			mib(need), dir, mib(reserve), mib(free))
	}
	return nil
}

// mib rounds n bytes up to MiB.
func mib(n int64) int64 { return (n + 1<<20 - 1) >> 20 }

// ctxWriter writes to w until ctx is done, so that a snapshot nobody waits
// for any more stops early, and keeps the first error of w.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
	err error
}

func (c *ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := c.w.Write(p)
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}
