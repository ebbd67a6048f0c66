package server

import (
	"testing"
	"time"
)

func TestRatioWindowCountsTheLastFiveMinutes(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	w := newRatioWindow(func() time.Time { return now })
	if r, c := w.ratios(); r != 0 || c != 0 {
		t.Errorf("empty window = %v %v", r, c)
	}
	for _, o := range []string{"created", "replayed", "replayed", "conflict"} {
		w.observe("POST /api/v1/reservations", o)
	}
	w.observe("GET /api/v1/workshops", "replayed") // Not an idempotent route.
	if r, c := w.ratios(); r != 0.5 || c != 0.25 {
		t.Errorf("ratios = %v %v, want 0.5 0.25", r, c)
	}
	now = now.Add(4 * time.Minute)
	w.observe("POST /api/v1/reservations/{id}/cancel", "cancelled")
	if r, c := w.ratios(); r != 0.4 || c != 0.2 {
		t.Errorf("ratios after 4 minutes = %v %v, want 0.4 0.2", r, c)
	}
	now = now.Add(2 * time.Minute) // The first answers left the window.
	if r, c := w.ratios(); r != 0 || c != 0 {
		t.Errorf("ratios after 6 minutes = %v %v, want 0 0", r, c)
	}
}
