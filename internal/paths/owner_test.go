package paths_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/paths"
	"github.com/reserve/reserve/internal/paths/pathstest"
	"github.com/reserve/reserve/internal/safefile"
)

func TestCheckSocketOwner(t *testing.T) {
	if err := paths.CheckSocketOwner(filepath.Join(t.TempDir(), "missing.sock")); err != nil {
		t.Errorf("a missing socket: %v", err)
	}
	// In a world-writable, sticky directory such as /tmp another user's
	// socket is refused.
	path, _ := pathstest.ForeignSocket(t, 0o777|os.ModeSticky, "r.sock")
	var owner *paths.SocketOwnerError
	if err := paths.CheckSocketOwner(path); !errors.As(err, &owner) || owner.Owner != pathstest.ForeignUID || owner.Path != path {
		t.Errorf("another user's socket in a world-writable directory: %v, want a SocketOwnerError naming uid 65534", err)
	}
	// The caller's own socket there is fine.
	if err := os.Chown(path, os.Getuid(), os.Getgid()); err != nil {
		t.Fatal(err)
	}
	if err := paths.CheckSocketOwner(path); err != nil {
		t.Errorf("the caller's own socket: %v", err)
	}
	// In a directory only its owner can write to, as a shared daemon's
	// /run/reserved, the directory decides and another user's socket passes.
	if path, _ := pathstest.ForeignSocket(t, 0o755, "r.sock"); paths.CheckSocketOwner(path) != nil {
		t.Errorf("another user's socket in a private directory was refused: %v", paths.CheckSocketOwner(path))
	}
}

// TestCheckSocketPeer applies the rule to the uid that answered on a
// connection (which the client reads from the kernel after connecting).
func TestCheckSocketPeer(t *testing.T) {
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(open, "r.sock")
	var owner *paths.SocketOwnerError
	if err := paths.CheckSocketPeer(path, 4242); !errors.As(err, &owner) || !owner.Peer || owner.Owner != 4242 || !strings.Contains(err.Error(), "is served by uid 4242") {
		t.Errorf("a peer of another user in a world-writable directory: %v", err)
	}
	for _, uid := range []uint32{uint32(os.Getuid()), 0} {
		if err := paths.CheckSocketPeer(path, uid); err != nil {
			t.Errorf("peer uid %d: %v", uid, err)
		}
	}
	if err := paths.CheckSocketPeer(filepath.Join(t.TempDir(), "r.sock"), 4242); err != nil {
		t.Errorf("a peer of another user in a private directory: %v", err)
	}
}

// TestSocketDirectoryOfAnotherUser: a shared daemon's directory (mode 0755,
// owned by the daemon's user, like /run/reserved) holding the daemon's
// socket is used; the same directory made by another user inside a sticky
// directory anyone can write to (like /tmp) is refused, naming it.
func TestSocketDirectoryOfAnotherUser(t *testing.T) {
	pathstest.NeedRoot(t)
	for _, tc := range []struct {
		parent os.FileMode
		refuse bool
	}{{0o755, false}, {0o777 | os.ModeSticky, true}} {
		dir := filepath.Join(pathstest.Dir(t, tc.parent), "reserved")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "reserved.sock")
		ln, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		for _, p := range []string{dir, path} {
			if err := os.Chown(p, pathstest.ForeignUID, pathstest.ForeignUID); err != nil {
				t.Fatal(err)
			}
		}
		errFile, errPeer := paths.CheckSocketOwner(path), paths.CheckSocketPeer(path, pathstest.ForeignUID)
		if !tc.refuse {
			if errFile != nil || errPeer != nil {
				t.Errorf("the daemon's socket in its own directory: %v, %v", errFile, errPeer)
			}
			continue
		}
		want := "socket " + path + " lies below " + dir + ", which belongs to uid 65534, not to you or root: refusing to use it (use another socket: --socket, RESERVED_SOCKET or XDG_RUNTIME_DIR)"
		for _, err := range []error{errFile, errPeer} {
			var owner *paths.SocketOwnerError
			if !errors.As(err, &owner) || owner.Elem != dir || err.Error() != want {
				t.Errorf("another user's directory in a sticky directory: %v, want %q", err, want)
			}
		}
	}
}

// TestSocketRefusalSaysWhy: the message of a refused socket names the part
// of the rule it broke, not always the same one.
func TestSocketRefusalSaysWhy(t *testing.T) {
	const path = "/run/d/r.sock"
	for _, tt := range []struct {
		err  paths.SocketOwnerError
		want string
	}{
		{paths.SocketOwnerError{Path: path, Owner: 7, Why: safefile.WhyOwner},
			"socket /run/d/r.sock belongs to uid 7, not to you or root, and lies in /run/d, where others than its owner can create files: refusing to use it (ask uid 7 or root to remove it, or use another socket: --socket, RESERVED_SOCKET or XDG_RUNTIME_DIR)"},
		{paths.SocketOwnerError{Path: path, Owner: 7, Why: safefile.WhyOwner, Peer: true},
			"socket /run/d/r.sock is served by uid 7, not to you or root, and lies in /run/d, where others than its owner can create files: refusing to use it (ask uid 7 or root to remove it, or use another socket: --socket, RESERVED_SOCKET or XDG_RUNTIME_DIR)"},
		{paths.SocketOwnerError{Path: path, Owner: 1234, Other: 65534, Why: safefile.WhySecondOwner},
			"socket /run/d/r.sock belongs to uid 1234, while uid 65534 controls /run/d, the directory it lies in: refusing to use it (ask uid 1234 or root to remove it, or use another socket: --socket, RESERVED_SOCKET or XDG_RUNTIME_DIR)"},
		{paths.SocketOwnerError{Path: path, Owner: 7, Why: safefile.WhySymlink},
			"socket /run/d/r.sock is a symbolic link of uid 7, not of you or root: refusing to use it (ask uid 7 or root to remove it, or use another socket: --socket, RESERVED_SOCKET or XDG_RUNTIME_DIR)"},
	} {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("%+v:\n got %s\nwant %s", tt.err, got, tt.want)
		}
	}
}
