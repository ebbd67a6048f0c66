package boltstore

import "testing"

// QueuedUpdates reports how many Updates wait for the group committer.
func QueuedUpdates(s *Store) int { return len(s.calls) }

// SetFreeSpace makes backups see free as the free space of the database's
// file system until the test ends.
func SetFreeSpace(tb testing.TB, free func(dir string) (int64, error)) {
	old := freeSpace
	freeSpace = free
	tb.Cleanup(func() { freeSpace = old })
}

// BackupReserve is the free space a backup leaves beside its snapshot.
const BackupReserve = backupReserve
