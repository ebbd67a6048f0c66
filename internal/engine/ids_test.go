package engine_test

import (
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// TestReservationIDsIncrease: ids made in one millisecond increase in the
// order they were made, and keep the form of an id (the same prefix of
// milliseconds, 32 lowercase hex digits); a later millisecond's ids sort
// after them.
func TestReservationIDsIncrease(t *testing.T) {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	prev := ""
	for i := range 2000 {
		now := at
		if i >= 1000 {
			now = at.Add(time.Millisecond)
		}
		id := engine.NewReservationID(now.Add(time.Duration(i%7) * time.Microsecond))
		if !engine.IsReservationID(id) {
			t.Fatalf("id %d = %q, not of the form of an id", i, id)
		}
		if i > 0 && id <= prev {
			t.Fatalf("id %d = %s, not above the one before it, %s", i, id, prev)
		}
		if i == 1000 && id[:12] == prev[:12] {
			t.Fatalf("id of the next millisecond %s shares its milliseconds with %s", id, prev)
		}
		prev = id
	}
}
