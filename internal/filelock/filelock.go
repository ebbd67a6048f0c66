// Package filelock takes exclusive advisory locks (flock) on lock files,
// without waiting, so that only one process at a time works on what the
// lock guards (a state file, an import plan). The lock belongs to the open
// file, so it is released when the lock is closed and also when the process
// dies, however it dies.
//
// A lock file is opened with package safefile's rules: a symbolic link, a
// file that is not regular and a file another user may have planted are
// refused, never followed or locked.
//
// It must not import any package of reserve but safefile.
package filelock

import (
	"errors"
	"fmt"
	"os"

	"github.com/reserve/reserve/internal/safefile"
)

// ErrLocked means another process (or another open Lock in this one) holds
// the lock.
var ErrLocked = errors.New("locked by another process")

// Lock is a held lock. Close releases it.
type Lock struct {
	f *os.File
}

// TryLock creates the lock file path if needed (mode 0600) and takes an
// exclusive lock on it without waiting. It returns an error matching
// ErrLocked when the lock is held elsewhere, and one matching
// safefile.ErrRefused when path is a symbolic link, not a regular file, or
// a file of another user in a directory anyone can write to.
func TryLock(path string) (*Lock, error) {
	f, err := safefile.OpenOrCreate(path, 0o600)
	if errors.Is(err, safefile.ErrRefused) {
		return nil, fmt.Errorf("refusing the lock file: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		if errors.Is(err, errWouldBlock) {
			return nil, fmt.Errorf("%s: %w", path, ErrLocked)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return &Lock{f: f}, nil
}

// Close releases the lock. Closing twice is harmless.
func (l *Lock) Close() error {
	if l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	// Closing the only descriptor of the lock file releases the flock.
	return f.Close()
}
