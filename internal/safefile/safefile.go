// Package safefile opens the files a program keeps for itself (a state
// file, a lock file, their temporary files) in a way that no other user can
// turn against it. It refuses, at once and with a clear error, a path that
// is a symbolic link (the program would read, create or lock the file it
// points to), a path that is not a regular file (a named pipe would block
// the opener forever, a device would be read or written), and a path that
// another user controls (an *OwnerError).
//
// Who controls a path is decided over the whole resolved path, walked from
// the root one element at a time (symbolic links included), by one of two
// rules (FileRule, SocketRule; the pure form is CheckChain):
//
//   - Files: every directory on the path belongs to the caller or root and
//     is writable by nobody else, unless it is sticky (like /tmp, where
//     only an entry's owner can rename or remove it); every symbolic link
//     followed belongs to the caller or root; the file itself belongs to
//     the caller or root. A directory's owner can replace anything below
//     it, so anything less would let another user plant the file or point
//     the path elsewhere.
//   - Sockets: the same, except that a directory or the socket may belong
//     to one other user when the directory holding it is writable only by
//     its owner: that user is the daemon whose socket it is (a shared
//     daemon's /run/reserved, mode 0755). What the socket rule guards
//     against is a directory anyone can write to.
//
// The walk uses Lstat, then opens the file itself without following a
// symbolic link and judges the open descriptor. That is free of races:
// every directory it accepts can be changed only by the caller, root, or
// (for a socket) the daemon's own user.
//
// It must not import any other package of reserve.
package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrRefused is matched (errors.Is) by every refusal of this package: a
// *NotRegularError or an *OwnerError.
var ErrRefused = errors.New("file refused")

// NotRegularError refuses a path that is a symbolic link or not a regular
// file.
type NotRegularError struct {
	// Path is the refused path.
	Path string
	// Mode is its type: fs.ModeSymlink, fs.ModeNamedPipe, fs.ModeDir, ….
	Mode fs.FileMode
}

// Error names the path and what it is.
func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file", e.Path, describe(e.Mode))
}

// Unwrap returns ErrRefused.
func (e *NotRegularError) Unwrap() error { return ErrRefused }

// describe names the type of a file mode for a message.
func describe(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeDir != 0:
		return "a directory"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "not a plain file"
}

// Open opens the existing file at path for reading. A missing file gives an
// error matching fs.ErrNotExist; a symbolic link or a file that is not
// regular gives a *NotRegularError, a path that FileRule refuses an
// *OwnerError, both without blocking and without reading from it.
func Open(path string) (*os.File, error) {
	return open(path, os.O_RDONLY)
}

// OpenOrCreate opens the file at path for reading and writing, creating it
// with mode perm (before the umask) if it does not exist, under the same
// rules as Open. It never creates a file anywhere else than at path: a
// symbolic link there is refused, not followed.
func OpenOrCreate(path string, perm fs.FileMode) (*os.File, error) {
	// An existing file is opened without O_CREATE, so that a file of
	// another user gets this package's refusal, not the EACCES that
	// protected_regular gives O_CREATE in a sticky directory.
	for range 10 {
		f, err := open(path, os.O_RDWR)
		if !errors.Is(err, fs.ErrNotExist) {
			return f, err
		}
		f, err = Create(path, perm)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
		// Created by someone else between the two calls: open that one.
	}
	return nil, fmt.Errorf("open %s: it keeps appearing and disappearing", path)
}

// Create creates a new file at path for reading and writing with mode perm
// (before the umask). It fails, matching fs.ErrExist, if anything exists at
// path, a symbolic link included: it never creates or opens a file
// elsewhere.
// The directories on the way to path must pass FileRule (an *OwnerError
// otherwise).
func Create(path string, perm fs.FileMode) (*os.File, error) {
	if _, err := walk(path, FileRule, false); err != nil {
		return nil, err
	}
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|oNoFollow, perm)
}

// Check applies this package's rules to path without opening or creating
// anything: path must be a regular file or not exist, and FileRule must
// accept every element of it that exists. Check it before creating anything
// on behalf of path (a lock file next to it, its directory), so that a path
// that would be refused leaves no trace.
func Check(path string) error {
	w, err := walk(path, FileRule, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !w.exists {
		return nil
	}
	if !w.last.Mode.IsRegular() {
		return &NotRegularError{Path: path, Mode: w.last.Mode.Type()}
	}
	return w.judge.final(w.dir, w.last)
}
