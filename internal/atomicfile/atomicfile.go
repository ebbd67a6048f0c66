// Package atomicfile replaces files atomically and durably: the new content
// goes to a temporary file next to the target, which is fsync'd and renamed
// over the target, and then the directory is fsync'd. A reader, or the
// program after a crash, finds either the whole old or the whole new
// content, never a mix, and once a write returns nil the new content
// survives a power loss.
//
// A writer killed between creating and renaming its temporary file leaves
// it behind; RemoveTemps and RemoveStaleTemps clean such leftovers up.
//
// It must not import any package of reserve.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// tempInfix separates a temporary file's target name from its random
// suffix: <target>.tmp-<suffix>.
const tempInfix = ".tmp-"

// WriteFile replaces path with data (mode 0600), atomically and durably.
func WriteFile(path string, data []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Write replaces path (mode 0600), atomically and durably, with what write
// writes, for content that is streamed rather than held in memory (a
// database backup). path is replaced only if write returns nil; otherwise
// the temporary file is removed and path is left as it was.
func Write(path string, write func(io.Writer) error) error {
	if err := replace(path, write); err != nil {
		return fmt.Errorf("write %s atomically: %w", path, err)
	}
	return nil
}

// replace writes a new temporary file next to path with write, fsyncs it,
// renames it over path and fsyncs the directory.
func replace(path string, write func(io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := createTemp(dir, base)
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
	return SyncDir(dir)
}

// createTemp creates a new temporary file <base>.tmp-<16 hex digits> in dir,
// mode 0600. It never opens an existing file nor follows a symbolic link
// (O_EXCL): a name someone else took is skipped. Whether dir may hold the
// caller's own files is the caller's rule (safefile.Check on the target
// before it writes): a state file's directory must be the caller's, while
// a delivery directory (the outbox's) may belong to its receiver.
func createTemp(dir, base string) (*os.File, error) {
	for range 100 {
		name := filepath.Join(dir, base+tempInfix+fmt.Sprintf("%016x", rand.Uint64()))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("create a temporary file for %s in %s: every name tried exists", base, dir)
}

// Remove removes path durably (the directory is fsync'd). A missing path is
// no error.
func Remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir fsyncs the directory dir, making renames and removals in it
// durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return d.Close()
}

// RemoveTemps removes every temporary file <path>.tmp-* that a killed
// writer of path left behind. Call it only while holding the lock that
// guards every writer of path: then no temporary file of path can belong to
// a live writer.
func RemoveTemps(path string) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	prefix := base + tempInfix
	_, err := removeTemps(dir, 0, func(name string) bool { return strings.HasPrefix(name, prefix) })
	if err != nil {
		return fmt.Errorf("remove stale temporary files of %s: %w", path, err)
	}
	return nil
}

// RemoveStaleTemps removes the temporary files in dir that Write made for
// targets that target accepts and that were last written at least minAge
// ago, and returns how many it removed. It is for directories that several
// unlocked writers share: a live writer renames its temporary file moments
// after writing it, so one older than a generous minAge is left over from a
// writer that was killed. Even removing a live writer's file is safe: its
// rename then fails, and it reports the write as failed.
func RemoveStaleTemps(dir string, minAge time.Duration, target func(name string) bool) (int, error) {
	n, err := removeTemps(dir, minAge, func(name string) bool {
		t, ok := tempTarget(name)
		return ok && target(t)
	})
	if err != nil {
		return n, fmt.Errorf("remove stale temporary files in %s: %w", dir, err)
	}
	return n, nil
}

// tempTarget returns the target name of a temporary file name of Write:
// <target>.tmp- followed by 1 to 20 lowercase hexadecimal digits (earlier
// versions wrote decimal ones).
func tempTarget(name string) (string, bool) {
	i := strings.LastIndex(name, tempInfix)
	if i <= 0 {
		return "", false
	}
	suffix := name[i+len(tempInfix):]
	if len(suffix) == 0 || len(suffix) > 20 || strings.Trim(suffix, "0123456789abcdef") != "" {
		return "", false
	}
	return name[:i], true
}

// removeTemps removes the regular files in dir whose names match and which
// were last modified at least minAge ago, and returns how many it removed.
// A file that is gone already (removed or renamed by its writer) is
// skipped.
func removeTemps(dir string, minAge time.Duration, match func(name string) bool) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		if !e.Type().IsRegular() || !match(e.Name()) {
			continue
		}
		if minAge > 0 {
			fi, err := e.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return n, err
			}
			if time.Since(fi.ModTime()) < minAge {
				continue
			}
		}
		switch err := os.Remove(filepath.Join(dir, e.Name())); {
		case err == nil:
			n++
		case !errors.Is(err, fs.ErrNotExist):
			return n, fmt.Errorf("remove stale temporary file: %w", err)
		}
	}
	return n, nil
}
