// Package pathstest makes sockets that belong to another user, for the
// tests of the socket owner check in the daemon and its clients.
package pathstest

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// ForeignUID is the unprivileged user (nobody) the sockets are given to.
const ForeignUID = 65534

// ForeignSocket listens on a socket named name in a new directory of mode
// dirMode (0o777|os.ModeSticky for one like /tmp) and gives the socket file
// to ForeignUID. The listener is closed when the test ends. Giving a file
// away needs root: without it the test is skipped, and it fails when
// RESERVE_CI is set, because CI must run it.
func ForeignSocket(t testing.TB, dirMode os.FileMode, name string) (string, net.Listener) {
	t.Helper()
	if os.Getuid() != 0 {
		if os.Getenv("RESERVE_CI") != "" {
			t.Fatal("giving a socket to another user needs root, and CI (RESERVE_CI) must run this test")
		}
		t.Skip("giving a socket to another user needs root")
	}
	dir := filepath.Join(t.TempDir(), "d")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, dirMode); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	if err := os.Chown(path, ForeignUID, ForeignUID); err != nil {
		t.Fatal(err)
	}
	return path, ln
}
