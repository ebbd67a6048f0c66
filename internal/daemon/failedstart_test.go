package daemon_test

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/reserve/reserve/internal/server/servertest"
)

// TestFailedStartLeavesNoSocketDirectory: a start that fails after the
// socket was bound (the TCP address is taken, or the store cannot be
// opened) removes the socket and also the directories it created for it,
// so that a refused start leaves nothing behind.
func TestFailedStartLeavesNoSocketDirectory(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"TCPAddressInUse", []string{"--db", filepath.Join(dir, "new.db"), "--listen", taken.Addr().String()}},
		{"StoreOpenFails", []string{"--db", empty, "--listen", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sockDir := filepath.Join(servertest.ShortTempDir(t), "run", "reserved")
			socket := filepath.Join(sockDir, "r.sock")
			p := launch(t, env(dir), append([]string{"serve", "--socket", socket}, tc.args...)...)
			if code := p.wait(t); code == 0 {
				t.Fatalf("reserved started: %s", p.logs)
			}
			mustNotExist(t, socket)
			mustNotExist(t, sockDir)
			mustNotExist(t, filepath.Dir(sockDir))
		})
	}
}
