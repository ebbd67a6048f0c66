package engine_test

import (
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// TestIDsOfOneMillisecondInterleaved: two decisions read the clock in
// one millisecond and a third, between them, reads the one before (a
// decision that read the clock earlier and took the id source later, or a
// clock stepped back). The later id of the millisecond must still sort
// after the earlier one.
func TestIDsOfOneMillisecondInterleaved(t *testing.T) {
	ms := time.Date(2026, 12, 2, 4, 0, 0, 5e6, time.UTC)
	for i := 0; i < 64; i++ {
		ms = ms.Add(10 * time.Millisecond)
		first := engine.NewReservationID(ms)
		engine.NewReservationID(ms.Add(-time.Millisecond))
		later := engine.NewReservationID(ms)
		if later <= first {
			t.Fatalf("in millisecond %s, id %s was made after %s but sorts before it", ms.Format(time.RFC3339Nano), later, first)
		}
	}
}
