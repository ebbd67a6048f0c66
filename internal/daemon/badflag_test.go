package daemon_test

import (
	"path/filepath"
	"testing"

	"github.com/reserve/reserve/internal/server/servertest"
)

// TestBadRetentionLeavesNothing: a start refused for a negative receipt
// retention, a flag of the background work, removes the socket and its
// directories and, being bad input, leaves no database behind: the flag
// is checked before the store is opened.
func TestBadRetentionLeavesNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"NegativeRetention", []string{"--receipt-retention", "-1s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			sockDir := filepath.Join(servertest.ShortTempDir(t), "run", "reserved")
			socket := filepath.Join(sockDir, "r.sock")
			db := filepath.Join(dir, "data", "reserved.db")
			p := launch(t, env(dir), append([]string{"serve", "--socket", socket, "--listen", "", "--db", db}, tc.args...)...)
			code := p.wait(t)
			t.Logf("exit %d: %s", code, p.logs)
			if code == 0 {
				t.Fatalf("reserved started: %s", p.logs)
			}
			mustNotExist(t, socket)
			mustNotExist(t, socket+".lock")
			mustNotExist(t, sockDir)
			mustNotExist(t, db)
		})
	}
}
