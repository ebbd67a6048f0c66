//go:build unix

package paths

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// CheckSocketOwner returns a *SocketOwnerError when the ownership rule
// (safefile.Trusted) does not trust the socket file at path. A missing path
// passes (connecting then fails on its own). Clients check the file before
// connecting, for a clear message, and the peer after connecting
// (CheckSocketPeer), which a file swapped in between cannot fool; the
// daemon checks the file before it probes or replaces it.
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
	return checkSocketUID(path, st.Uid, false)
}
