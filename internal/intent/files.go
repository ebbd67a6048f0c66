package intent

import (
	"errors"
	"fmt"
	"io"
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

// WriteFileAtomicFunc is WriteFileAtomic for content that is streamed
// rather than held in memory (a database backup): write gets the temporary
// file, and path is replaced only if write returns nil; otherwise the
// temporary file is removed and path is left as it was.
func WriteFileAtomicFunc(path string, write func(io.Writer) error) error {
	if err := writeAtomic(path, write); err != nil {
		return fmt.Errorf("write %s atomically: %w", path, err)
	}
	return nil
}

// writeAtomic writes a temporary file next to path with write, fsyncs it,
// renames it over path and fsyncs the directory.
func writeAtomic(path string, write func(io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, base+tempInfix+"*") // Mode 0600.
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := write(f); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(dir)
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
