package paths

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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

// SocketTrusted is the rule behind the checks: a socket owned by uid is
// trusted by caller when the directory holding it (whose permissions are
// dirPerm) is not writable by everybody, or when uid is the caller's or
// root's. Group-writable directories are trusted: their group chose to share
// them.
func SocketTrusted(uid, caller uint32, dirPerm fs.FileMode) bool {
	return dirPerm&0o002 == 0 || uid == caller || uid == 0
}

// CheckSocketPeer applies SocketTrusted to uid, the kernel's record of the
// process that accepted a connection to path, and returns a
// *SocketOwnerError if it is not trusted. Unlike the file check it cannot
// be raced by replacing the file between the check and the connect.
func CheckSocketPeer(path string, uid uint32) error {
	return checkSocketUID(path, uid, true)
}

// checkSocketUID applies SocketTrusted to uid, the owner of the socket at
// path (its file's, or with peer its accepting process's).
func checkSocketUID(path string, uid uint32, peer bool) error {
	di, err := os.Stat(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("directory of socket %s: %w", path, err)
	}
	if SocketTrusted(uid, uint32(os.Getuid()), di.Mode().Perm()) {
		return nil
	}
	return &SocketOwnerError{Path: path, Owner: uid, Peer: peer}
}
