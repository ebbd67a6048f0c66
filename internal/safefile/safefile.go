// Package safefile opens the files a program keeps for itself (a state
// file, a lock file) in a way that another user who can write to their
// directory cannot turn against it. It refuses, at once and with a clear
// error, a path that is a symbolic link (the program would read, create or
// lock the file it points to), a path that is not a regular file (a named
// pipe would block the opener forever, a device would be read or written),
// and a file that lies in a directory anyone can write to but belongs to
// neither the caller nor root (Trusted: another user may have planted it).
// Trusted is also the rule the Unix socket check of the daemon and its
// clients applies, so files and sockets are judged alike.
//
// It must not import any other package of reserve.
package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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

// OwnerError refuses a file that Trusted does not trust: it lies in a
// directory anyone can write to and belongs to neither the caller nor root.
type OwnerError struct {
	// Path is the refused file.
	Path string
	// Owner is the uid that owns it.
	Owner uint32
}

// Error names the file, its owner and the directory, and says who can
// remove it.
func (e *OwnerError) Error() string {
	return fmt.Sprintf("%s belongs to uid %d, not to you or root, and lies in %s, where anyone can create files (ask uid %d or root to remove it, or use another path)",
		e.Path, e.Owner, filepath.Dir(e.Path), e.Owner)
}

// Unwrap returns ErrRefused.
func (e *OwnerError) Unwrap() error { return ErrRefused }

// Trusted is the ownership rule: a file (or socket) owned by uid is trusted
// by caller when the directory holding it, whose permissions are dirPerm,
// is not writable by everybody, or when uid is the caller's or root's. In a
// directory anyone can write to (/tmp, sticky or not) anyone may have
// created the file; in any other directory only those its owner let in
// could, so a group-writable directory is trusted: its group chose to share
// it. Only the file's own directory counts, not the directories above it.
func Trusted(uid, caller uint32, dirPerm fs.FileMode) bool {
	return dirPerm&0o002 == 0 || uid == caller || uid == 0
}

// OwnerTrusted applies Trusted to a file at path owned by uid, for the
// calling process's uid and the permissions of path's directory.
func OwnerTrusted(path string, uid uint32) (bool, error) {
	di, err := os.Stat(filepath.Dir(path))
	if err != nil {
		return false, err
	}
	return Trusted(uid, uint32(os.Getuid()), di.Mode().Perm()), nil
}

// Open opens the existing file at path for reading. A missing file gives an
// error matching fs.ErrNotExist; a symbolic link or a file that is not
// regular gives a *NotRegularError, a file that Trusted refuses an
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
func Create(path string, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|oNoFollow, perm)
}
