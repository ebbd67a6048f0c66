package paths

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// SocketOwnerError refuses a socket file that lies in a directory anyone may
// write to (such as /tmp, where the default socket lives when
// XDG_RUNTIME_DIR is unset) and belongs to neither the caller nor root:
// another user may have created it to receive the caller's requests, or to
// keep the caller's daemon from starting.
type SocketOwnerError struct {
	Path  string
	Owner uint32
}

func (e *SocketOwnerError) Error() string {
	return fmt.Sprintf("socket %s belongs to uid %d, not to you, and lies in %s, where anyone can create files: refusing to use it (remove it or choose another socket)",
		e.Path, e.Owner, filepath.Dir(e.Path))
}

// CheckSocketOwner returns a *SocketOwnerError when path exists in a
// world-writable directory and belongs to another user than the caller and
// root. A missing path, or one in a directory that only its owner can
// write to (a shared daemon's /run/reserved, say), passes: there the
// directory's permissions decide who may create the socket.
func CheckSocketOwner(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("socket %s: %w", path, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if st.Uid == uint32(os.Getuid()) || st.Uid == 0 {
		return nil
	}
	di, err := os.Stat(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("directory of socket %s: %w", path, err)
	}
	if di.Mode().Perm()&0o002 == 0 {
		return nil
	}
	return &SocketOwnerError{Path: path, Owner: st.Uid}
}
