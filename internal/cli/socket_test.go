package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/paths/pathstest"
)

// TestSocketOfAnotherUserIsALocalRefusal: a socket that belongs to another
// user is refused before anything is sent, so reservectl exits 2, as for
// every local refusal, and records no intent; a read-only command exits 2
// too.
func TestSocketOfAnotherUserIsALocalRefusal(t *testing.T) {
	socket, _ := pathstest.ForeignSocket(t, 0o777|os.ModeSticky, "reserved.sock")
	state := filepath.Join(t.TempDir(), "intent.json")
	for _, args := range [][]string{
		{"reserve", "--workshop", "workshop-demo", "--quantity", "1"},
		{"workshops"},
	} {
		var stdout, stderr bytes.Buffer
		code := Run(context.Background(), append([]string{"--socket", socket, "--state", state}, args...), &stdout, &stderr)
		if code != ExitUsage || !strings.Contains(stderr.String(), "belongs to uid") {
			t.Errorf("reservectl %s = exit %d, %q; want exit %d naming the socket's owner", strings.Join(args, " "), code, stderr.String(), ExitUsage)
		}
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("a state file was written: %v", err)
	}
}
