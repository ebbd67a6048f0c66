package boltstore

import "testing"

// QueuedUpdates reports how many Updates wait for the group committer.
func QueuedUpdates(s *Store) int { return len(s.calls) }

// SetFreeSpace makes backups see what free returns as the free space and
// the size of the database's file system until the test ends.
func SetFreeSpace(tb testing.TB, free func(dir string) (free, size int64, err error)) {
	old := freeSpace
	freeSpace = free
	tb.Cleanup(func() { freeSpace = old })
}

// BackupReserve is the free space a backup leaves beside its snapshot on a
// file system of size bytes.
func BackupReserve(size int64) int64 { return backupReserve(size) }

// MaxBackupReserve is the most free space a backup leaves.
const MaxBackupReserve = maxBackupReserve

// CloseAsKilled closes s without the commit with which Close keeps the list
// of free pages, leaving the file as a process killed right after its last
// commit leaves it.
func CloseAsKilled(s *Store) error {
	s.readOnly = true // keepFreelist writes nothing for a read-only store.
	return s.Close()
}

// OpenFreelist reports whether Open wrote a freelist to a file that kept
// none and, when it did not, why (nil when there was no reason to).
func OpenFreelist(s *Store) (bool, error) { return s.wroteFreelist, s.noFreelist }

// AfterFreelistPages makes a writing Open call fn between the sync of the
// freelist pages it writes and the write of their meta page; the function
// it returns undoes that.
func AfterFreelistPages(fn func(path string)) (restore func()) {
	afterFreelistPages = fn
	return func() { afterFreelistPages = nil }
}
