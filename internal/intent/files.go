package intent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// WriteFileAtomic replaces path with data (mode 0600) so that path always
// holds either its old or its new content, both durable once it returns nil:
// a temporary file <path>.tmp-* is written and fsync'd, renamed over path,
// and the directory is fsync'd. Other crash-safe files of reservectl (the
// import plan, backups) use it instead of a second implementation.
func WriteFileAtomic(path string, data []byte) error {
	if err := writeFileAtomic(path, data); err != nil {
		return fmt.Errorf("write %s atomically: %w", path, err)
	}
	return nil
}

// RemoveStaleTemps removes the temporary files <path>.tmp-* that a killed
// WriteFileAtomic of path left behind. Call it only while holding the lock
// that guards every writer of path.
func RemoveStaleTemps(path string) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("remove stale temporary files of %s: %w", path, err)
	}
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasPrefix(e.Name(), base+tempInfix) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("remove stale temporary file: %w", err)
			}
		}
	}
	return nil
}

// LockExclusive creates lockPath if needed (mode 0600) and takes an
// exclusive flock on it without waiting. It returns an error matching
// ErrLocked when another process or descriptor holds the lock. Closing the
// returned file releases the lock, as does the death of the process.
func LockExclusive(lockPath string) (*os.File, error) {
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", lockPath, err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		if errors.Is(err, errWouldBlock) {
			return nil, fmt.Errorf("%s: %w", lockPath, ErrLocked)
		}
		return nil, fmt.Errorf("lock %s: %w", lockPath, err)
	}
	return f, nil
}

// ErrLocked means LockExclusive found the lock held by another process.
var ErrLocked = errors.New("locked by another process")
