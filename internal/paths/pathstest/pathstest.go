// Package pathstest makes sockets and files that belong to another user, for
// the tests of the ownership rule that the socket check and package
// safefile apply.
package pathstest

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/reserve/reserve/internal/testskip"
)

// ForeignUID is the unprivileged user (nobody) the sockets and files are
// given to.
const ForeignUID = 65534

// NeedRoot skips t unless it runs as root, which giving a file to another
// user needs, and fails it instead when RESERVE_CI is set, because CI must
// run it.
func NeedRoot(t testing.TB) {
	t.Helper()
	NeedRootFor(t, "giving a file to another user", "the ownership rule")
}

// NeedRootFor skips t, saying that doing needs root and what it checks,
// unless it runs as root, and fails it instead when RESERVE_CI is set,
// because CI must run it.
func NeedRootFor(t testing.TB, doing, checks string) {
	t.Helper()
	if os.Getuid() == 0 {
		return
	}
	if os.Getenv("RESERVE_CI") != "" {
		t.Fatalf("%s needs root, and CI (RESERVE_CI) must run this test", doing)
	}
	testskip.Missing(t, "root", "%s needs root: run the tests as root to check %s (CI, with RESERVE_CI set, must)", doing, checks)
}

// Dir makes a new directory of mode dirMode (0o777|os.ModeSticky for one
// like /tmp) and returns its path.
func Dir(t testing.TB, dirMode os.FileMode) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "d")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, dirMode); err != nil {
		t.Fatal(err)
	}
	return dir
}

// ForeignSocket listens on a socket named name in a new directory of mode
// dirMode and gives the socket file to ForeignUID. The listener is closed
// when the test ends. It needs root (NeedRoot).
func ForeignSocket(t testing.TB, dirMode os.FileMode, name string) (string, net.Listener) {
	t.Helper()
	NeedRoot(t)
	path := filepath.Join(Dir(t, dirMode), name)
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

// ForeignFile writes data to the file path (mode 0644) and gives it to
// ForeignUID. It needs root (NeedRoot).
func ForeignFile(t testing.TB, path string, data []byte) {
	t.Helper()
	NeedRoot(t)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, ForeignUID, ForeignUID); err != nil {
		t.Fatal(err)
	}
}
