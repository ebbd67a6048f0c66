package daemon_test

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/reserve/reserve/internal/filelock"
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

// TestSocketLockIsRespected: a daemon that starts while another holds
// the socket's lock (as one does from before it probes a stale socket
// until it stops) refuses the socket at once and leaves it alone, so that
// of two daemons starting together on a stale socket the second never
// removes the socket the first has just made.
func TestSocketLockIsRespected(t *testing.T) {
	dir := t.TempDir()
	socket := filepath.Join(servertest.ShortTempDir(t), "r.sock")
	staleSocket(t, socket)
	lock, err := filelock.TryLock(socket + ".lock")
	if err != nil {
		t.Fatal(err)
	}
	mustFail(t, env(dir), "reserved: another reserved is already serving on socket "+socket+" (or starting on it: it holds "+socket+".lock)\n",
		"serve", "--db", filepath.Join(dir, "reserved.db"), "--socket", socket, "--listen", "")
	if fi, err := os.Lstat(socket); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Errorf("the socket was touched: %v %v", fi, err)
	}
	mustNotExist(t, filepath.Join(dir, "reserved.db"))
	lock.Close()
	p := launch(t, env(dir), "serve", "--db", filepath.Join(dir, "reserved.db"), "--socket", socket, "--listen", "", "--log-format", "json")
	p.socket = socket
	p.waitServing(t)
	if code := p.stop(t); code != 0 {
		t.Errorf("exit code = %d", code)
	}
}
