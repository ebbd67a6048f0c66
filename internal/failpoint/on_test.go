//go:build failpoint

package failpoint_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/failpoint"
)

// TestClockFollowsTheFile runs with go test -tags failpoint: the clock is
// shifted by the duration in the clock file, read at every call.
func TestClockFollowsTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clock")
	t.Setenv(failpoint.EnvClock, path)
	fixed := time.Unix(1700000000, 0)
	clock := failpoint.Clock(func() time.Time { return fixed })
	if got := clock(); !got.Equal(fixed) {
		t.Errorf("without a file: %v, want %v", got, fixed)
	}
	if err := os.WriteFile(path, []byte("25h\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := clock(); !got.Equal(fixed.Add(25 * time.Hour)) {
		t.Errorf("with 25h: %v, want %v", got, fixed.Add(25*time.Hour))
	}
}
