package cli

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/paths/pathstest"
)

// TestSocketPermissionDenied: a socket the caller may not connect to (its
// mode lets only its owner in) and one in a directory the caller may not
// search are local refusals (exit 2, nothing recorded) that say what
// denied the caller: the socket's owner and mode, or the directory.
// Root may connect anywhere, so the caller is uid 65534.
func TestSocketPermissionDenied(t *testing.T) {
	if os.Getenv("TEST_SOCKET") == "" {
		pathstest.NeedRoot(t) // Fails in CI, skips loudly elsewhere.
		dir, err := os.MkdirTemp("", "socket-permission")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		private := filepath.Join(dir, "private")
		if err := os.Mkdir(private, 0o700); err != nil {
			t.Fatal(err)
		}
		socket := filepath.Join(dir, "r.sock")
		ln, err := net.Listen("unix", socket)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		if err := os.Chmod(socket, 0o600); err != nil {
			t.Fatal(err)
		}
		pathstest.RunAsNobody(t, "^TestSocketPermissionDenied$", "TEST_SOCKET="+socket, "TEST_PRIVATE_SOCKET="+filepath.Join(private, "r.sock"))
		return
	}
	socket, hidden := os.Getenv("TEST_SOCKET"), os.Getenv("TEST_PRIVATE_SOCKET")
	state := filepath.Join(t.TempDir(), "intent.json")
	for _, tc := range []struct{ socket, want string }{
		{socket, "cannot connect to reserved at " + socket + ": permission denied: the socket belongs to root (uid 0) with mode 0600, which does not let uid 65534 in; ask its owner, or use a socket of your own (--socket, RESERVED_SOCKET)"},
		{hidden, "cannot connect to reserved at " + hidden + ": permission denied: you may not look into " + filepath.Dir(hidden) + " or a directory above it (uid 65534)"},
	} {
		for _, args := range [][]string{{"whoami"}, {"reserve", "--workshop", "workshop-demo"}} {
			var stdout, stderr bytes.Buffer
			code := Run(context.Background(), append([]string{"--socket", tc.socket, "--state", state}, args...), &stdout, &stderr)
			if code != ExitUsage || !strings.Contains(stderr.String(), tc.want) || strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("reservectl %s on %s = exit %d, %q; want exit %d and the one line %q", args[0], tc.socket, code, stderr.String(), ExitUsage, tc.want)
			}
		}
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("a state file was written: %v", err)
	}
}
