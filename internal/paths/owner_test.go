package paths_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/reserve/reserve/internal/paths"
	"github.com/reserve/reserve/internal/paths/pathstest"
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
