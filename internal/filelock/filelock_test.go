package filelock_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/reserve/reserve/internal/filelock"
	"github.com/reserve/reserve/internal/paths/pathstest"
	"github.com/reserve/reserve/internal/safefile"
)

func TestTryLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	l, err := filelock.TryLock(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("lock file %v, %v; want a regular file of mode 0600", fi, err)
	}
	// A second lock, even in the same process, is refused at once.
	_, err = filelock.TryLock(path)
	if !errors.Is(err, filelock.ErrLocked) || !strings.Contains(err.Error(), path) {
		t.Fatalf("second TryLock = %v, want ErrLocked naming the path", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	l, err = filelock.TryLock(path)
	if err != nil {
		t.Fatalf("TryLock after Close = %v", err)
	}
	l.Close()
}

func TestSymlinkedLockFileRefused(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "victim")
	path := filepath.Join(dir, "x.lock")
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	_, err := filelock.TryLock(path)
	if !errors.Is(err, safefile.ErrRefused) || err.Error() != "refusing the lock file: "+path+" is a symbolic link, not a regular file" {
		t.Errorf("TryLock of a symbolic link = %v", err)
	}
	if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the link's target was created: %v", err)
	}
}

func TestNamedPipeLockFileRefusedAtOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	// safefile's tests bound the wait; a lock file that blocked would hang
	// here.
	l, err := filelock.TryLock(path)
	if err == nil {
		l.Close()
	}
	if !errors.Is(err, safefile.ErrRefused) || !strings.Contains(err.Error(), "is a named pipe (FIFO)") {
		t.Errorf("TryLock of a named pipe = %v", err)
	}
}

func TestForeignLockFileRefused(t *testing.T) {
	path := filepath.Join(pathstest.Dir(t, 0o777|os.ModeSticky), "x.lock")
	pathstest.ForeignFile(t, path, nil)
	_, err := filelock.TryLock(path)
	var owner *safefile.OwnerError
	if !errors.As(err, &owner) || owner.Owner != pathstest.ForeignUID {
		t.Errorf("TryLock of another user's lock file in a directory like /tmp = %v, want an OwnerError", err)
	}
}
