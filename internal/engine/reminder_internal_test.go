package engine

import (
	"testing"
	"time"
)

// TestReminderDueLongLead: a lead longer than half of any hold gets no
// reminder, however long it is. Twice a lead beyond half the largest
// Duration wraps around to a negative length, which every hold is longer
// than: each would get a reminder due long before it was made, mailed
// right after its first mail.
func TestReminderDueLongLead(t *testing.T) {
	created := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	ev := Event{ID: "e", Type: EventHoldCreated, CreatedAt: created, HoldExpiresAt: created.Add(2 * time.Hour)}
	if due, ok := reminderDue(ev, time.Hour); !ok || !due.Equal(created.Add(time.Hour)) {
		t.Fatalf("a two-hour hold with a one-hour lead: reminder %v %v, want at %v", due, ok, created.Add(time.Hour))
	}
	for _, lead := range []time.Duration{time.Hour + time.Second, 1 << 62, 1<<63 - 1} {
		if due, ok := reminderDue(ev, lead); ok {
			t.Errorf("a two-hour hold with a lead of %v gets a reminder due at %v, before it was made", lead, due)
		}
	}
}
