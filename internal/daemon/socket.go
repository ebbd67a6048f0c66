package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/reserve/reserve/internal/filelock"
	"github.com/reserve/reserve/internal/paths"
)

// probeSocket looks at an existing file at the socket path. Nothing there is
// fine; a socket of another user in a world-writable directory is an error
// (paths.CheckSocketOwner); a socket that accepts a connection belongs to a
// running daemon and is an error; a socket that refuses connections is
// stale and may be replaced (stale == true); anything else is left alone
// and is an error.
func probeSocket(path string) (stale bool, err error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("socket %s: %w", path, err)
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return false, fmt.Errorf("%s exists and is not a socket: remove it or choose another --socket", path)
	}
	if err := paths.CheckSocketOwner(path); err != nil {
		return false, err
	}
	conn, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		conn.Close()
		return false, fmt.Errorf("another reserved is already serving on socket %s", path)
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return true, nil
	}
	return false, fmt.Errorf("socket %s exists and could not be probed: %w", path, err)
}

// claimSocket takes the socket path for this daemon: it creates the
// socket's directory if need be, takes the lock file path+".lock" (so
// that of two daemons starting at once only one probes and replaces a
// stale socket, and the other fails at once instead of removing the first
// one's new socket), probes the socket (probeSocket) and listens on it
// (bindListener). release closes the listener (which removes the socket)
// and drops the lock; after a failed start (failed) it also removes the
// lock file and the directories that claimSocket created.
func claimSocket(path string, mode os.FileMode) (ln *net.UnixListener, release func(failed bool), err error) {
	created, err := mkdirAll(filepath.Dir(path), 0o700)
	if err != nil {
		return nil, nil, fmt.Errorf("create socket directory: %w", err)
	}
	lockPath := path + ".lock"
	_, statErr := os.Lstat(lockPath)
	newLock := errors.Is(statErr, fs.ErrNotExist)
	lock, err := filelock.TryLock(lockPath)
	if err != nil {
		removeDirs(created)
		if errors.Is(err, filelock.ErrLocked) {
			return nil, nil, fmt.Errorf("another reserved is already serving on socket %s (or starting on it: it holds %s)", path, lockPath)
		}
		return nil, nil, fmt.Errorf("socket %s: %w", path, err)
	}
	undo := func() {
		lock.Close()
		if newLock {
			os.Remove(lockPath)
		}
		removeDirs(created)
	}
	stale, err := probeSocket(path)
	if err == nil {
		ln, err = bindListener(path, stale, mode)
	}
	if err != nil {
		undo()
		return nil, nil, err
	}
	return ln, func(failed bool) {
		ln.Close()
		if failed {
			undo()
			return
		}
		lock.Close()
	}, nil
}

// mkdirAll is os.MkdirAll that returns the directories it created,
// deepest first.
func mkdirAll(dir string, perm os.FileMode) ([]string, error) {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || !errors.Is(err, fs.ErrNotExist) || filepath.Dir(d) == d {
			break
		}
		missing = append(missing, d)
	}
	if err := os.MkdirAll(dir, perm); err != nil {
		return nil, err
	}
	return missing, nil
}

// removeDirs removes the directories dirs, deepest first, each only if it
// is empty.
func removeDirs(dirs []string) {
	for _, d := range dirs {
		if os.Remove(d) != nil {
			return
		}
	}
}

// bindListener listens on the socket path, in a directory that exists,
// with the given permissions, replacing a socket file that probeSocket
// found stale. The file has those permissions from the moment it exists
// (see bindSocket). Closing the listener removes the file.
func bindListener(path string, stale bool, mode os.FileMode) (*net.UnixListener, error) {
	if stale {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("remove stale socket %s: %w", path, err)
		}
	}
	ln, err := bindSocket(path, mode)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("another reserved is already serving on socket %s", path)
		}
		return nil, fmt.Errorf("listen on socket %s: %w", path, err)
	}
	return ln, nil
}
