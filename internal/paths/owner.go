package paths

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/reserve/reserve/internal/safefile"
)

// SocketOwnerError refuses a socket whose path another user controls
// (safefile.SocketRule): the socket, or the directory holding it, belongs
// to neither the caller nor root and lies in a directory anyone may write
// to (such as /tmp, where the default socket lives when XDG_RUNTIME_DIR is
// unset), or a directory on the way is writable by others and not sticky,
// or a symbolic link on the way belongs to another user. Another user may
// have put the socket there to receive the caller's requests, or to keep
// the caller's daemon from starting.
type SocketOwnerError struct {
	// Path is the socket.
	Path string
	// Elem is the refused element of the path; "" or Path for the socket
	// itself.
	Elem string
	// Owner is the uid that owns Elem.
	Owner uint32
	// Why says what is wrong with Elem.
	Why safefile.Why
	// Other is the uid that controls the path above Elem, for
	// safefile.WhySecondOwner.
	Other uint32
	// Peer is set when the owner is the process that answered on the
	// socket (its kernel credentials), not the socket file.
	Peer bool
}

func (e *SocketOwnerError) Error() string {
	return fmt.Sprintf("socket %s %s", e.Path, e.Reason())
}

// Reason is the error without the socket's path.
func (e *SocketOwnerError) Reason() string {
	const other = "use another socket: --socket, RESERVED_SOCKET or XDG_RUNTIME_DIR"
	oe := safefile.OwnerError{Path: e.Path, Elem: e.Elem, Owner: e.Owner, Why: e.Why, Other: e.Other}
	if !oe.Self() {
		return fmt.Sprintf("%s: refusing to use it (%s)", oe.Below(), other)
	}
	who := "belongs to"
	if e.Peer {
		who = "is served by"
	}
	var why string
	switch e.Why {
	case safefile.WhySymlink:
		why = fmt.Sprintf("is a symbolic link of uid %d, not of you or root", e.Owner)
	case safefile.WhySecondOwner:
		why = fmt.Sprintf("%s uid %d, while uid %d controls %s, the directory it lies in", who, e.Owner, e.Other, filepath.Dir(e.Path))
	default:
		why = fmt.Sprintf("%s uid %d, not to you or root, and lies in %s, where others than its owner can create files", who, e.Owner, filepath.Dir(e.Path))
	}
	return fmt.Sprintf("%s: refusing to use it (ask uid %d or root to remove it, or %s)", why, e.Owner, other)
}

// CheckSocketOwner returns a *SocketOwnerError when safefile.SocketRule
// refuses the socket file at path. A missing path passes (connecting then
// fails on its own). Clients check the file before connecting, for a clear
// message, and the peer after connecting (CheckSocketPeer), which a file
// swapped in between cannot fool; the daemon checks the file before it
// probes or replaces it.
func CheckSocketOwner(path string) error {
	return socketError(path, safefile.CheckSocket(path), false)
}

// CheckSocketPeer applies safefile.SocketRule to uid, the kernel's record of
// the process that accepted a connection to path, as the socket's owner,
// and returns a *SocketOwnerError if it refuses it. Unlike the file check it
// cannot be raced by replacing the file between the check and the connect.
func CheckSocketPeer(path string, uid uint32) error {
	return socketError(path, safefile.CheckSocketPeer(path, uid), true)
}

// socketError turns a refusal of the socket at path into a
// *SocketOwnerError, and wraps any other error with the path.
func socketError(path string, err error, peer bool) error {
	var oe *safefile.OwnerError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &oe):
		e := &SocketOwnerError{Path: path, Elem: oe.Elem, Owner: oe.Owner, Why: oe.Why, Other: oe.Other}
		// Only the socket itself can be the peer's.
		e.Peer = peer && oe.Self()
		return e
	}
	return fmt.Errorf("socket %s: %w", path, err)
}
