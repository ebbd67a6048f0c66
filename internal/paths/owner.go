package paths

import (
	"fmt"
	"path/filepath"

	"github.com/reserve/reserve/internal/safefile"
)

// SocketOwnerError refuses a socket that lies in a directory anyone may
// write to (such as /tmp, where the default socket lives when
// XDG_RUNTIME_DIR is unset) and belongs to neither the caller nor root:
// another user may have put it there to receive the caller's requests, or
// to keep the caller's daemon from starting.
type SocketOwnerError struct {
	Path  string
	Owner uint32
	// Peer is set when the owner is the process that answered on the
	// socket (its kernel credentials), not the socket file.
	Peer bool
}

func (e *SocketOwnerError) Error() string {
	return fmt.Sprintf("socket %s %s", e.Path, e.Reason())
}

// Reason is the error without the socket's path.
func (e *SocketOwnerError) Reason() string {
	who := "belongs to"
	if e.Peer {
		who = "is served by"
	}
	return fmt.Sprintf("%s uid %d, not to you or root, and lies in %s, where anyone can create files: refusing to use it (ask uid %d or root to remove it, or use another socket: --socket, RESERVED_SOCKET or XDG_RUNTIME_DIR)",
		who, e.Owner, filepath.Dir(e.Path), e.Owner)
}

// CheckSocketPeer applies the ownership rule (safefile.Trusted) to uid, the
// kernel's record of the process that accepted a connection to path, and
// returns a *SocketOwnerError if it is not trusted. Unlike the file check it
// cannot be raced by replacing the file between the check and the connect.
func CheckSocketPeer(path string, uid uint32) error {
	return checkSocketUID(path, uid, true)
}

// checkSocketUID applies the ownership rule that state and lock files obey
// too (safefile.Trusted) to uid, the owner of the socket at path (its
// file's, or with peer its accepting process's).
func checkSocketUID(path string, uid uint32, peer bool) error {
	ok, err := safefile.OwnerTrusted(path, uid)
	if err != nil {
		return fmt.Errorf("directory of socket %s: %w", path, err)
	}
	if ok {
		return nil
	}
	return &SocketOwnerError{Path: path, Owner: uid, Peer: peer}
}
