//go:build !failpoint

package failpoint_test

import (
	"testing"
	"time"

	"github.com/reserve/reserve/internal/failpoint"
)

// TestOffBuildChangesNothing proves that outside a failpoint build the
// clock is the one given, even with a clock file named, and that a point
// does nothing, even when armed.
func TestOffBuildChangesNothing(t *testing.T) {
	t.Setenv(failpoint.EnvClock, t.TempDir()+"/clock")
	t.Setenv("GOFAIL_FAILPOINTS", failpoint.ServerAfterCommit+`=return("kill")`)
	fixed := time.Unix(1700000000, 0)
	if got := failpoint.Clock(func() time.Time { return fixed })(); !got.Equal(fixed) {
		t.Errorf("Clock = %v, want %v", got, fixed)
	}
	failpoint.Hit(failpoint.ServerAfterCommit)
	if failpoint.Enabled {
		t.Error("Enabled in a build without the failpoint tag")
	}
}
