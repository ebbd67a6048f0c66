package server

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reserve/reserve/internal/engine"
)

// idempotentRoutes are the routes of idempotent operations, whose answers
// the replay and conflict ratios count.
var idempotentRoutes = map[string]bool{
	"POST /api/v1/reservations":                true,
	"POST /api/v1/reservations/{id}/cancel":    true,
	"POST /api/v1/holds":                       true,
	"POST /api/v1/holds/{id}/confirm":          true,
	"POST /api/v1/holds/{id}/release":          true,
	"POST /api/v1/admin/deliveries/{id}/retry": true,
	"POST /api/v1/admin/deliveries/{id}/skip":  true,
	"POST /api/v1/waitlist/{id}/leave":         true,
}

// The sliding window of the ratios: ratioSlots slots of ratioSlot each.
const (
	ratioSlot  = 10 * time.Second
	ratioSlots = 30
)

// ratioWindow counts the answers of idempotent operations over the last
// ratioSlots×ratioSlot (five minutes), so that the share of replays and of
// conflicts is a gauge an operator sees rise without writing a rate query.
type ratioWindow struct {
	mu    sync.Mutex
	now   func() time.Time
	slots [ratioSlots]ratioCounts
}

// ratioCounts are the counts of one slot; index is the slot's number since
// the epoch, so that a stale slot is recognised and reset.
type ratioCounts struct {
	index                     int64
	total, replays, conflicts float64
}

func newRatioWindow(now func() time.Time) *ratioWindow { return &ratioWindow{now: now} }

// observe counts one answer of route with outcome.
func (w *ratioWindow) observe(route, outcome string) {
	if !idempotentRoutes[route] {
		return
	}
	idx := w.now().UnixNano() / int64(ratioSlot)
	w.mu.Lock()
	defer w.mu.Unlock()
	s := &w.slots[idx%ratioSlots]
	if s.index != idx {
		*s = ratioCounts{index: idx}
	}
	s.total++
	switch outcome {
	case engine.OutcomeReplayed:
		s.replays++
	case engine.OutcomeConflict:
		s.conflicts++
	}
}

// ratios returns the share of replays and of conflicts among the answers
// in the window, 0 for an empty window.
func (w *ratioWindow) ratios() (replay, conflict float64) {
	idx := w.now().UnixNano() / int64(ratioSlot)
	w.mu.Lock()
	defer w.mu.Unlock()
	var total, replays, conflicts float64
	for _, s := range w.slots {
		if s.index > idx-ratioSlots && s.index <= idx {
			total += s.total
			replays += s.replays
			conflicts += s.conflicts
		}
	}
	if total == 0 {
		return 0, 0
	}
	return replays / total, conflicts / total
}

// collectors returns the gauges of the window.
func (w *ratioWindow) collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "reserved_replay_ratio",
			Help: "Share of the requests of idempotent operations (reservations, cancellations, holds, confirmations, releases) in the last 5 minutes answered by replaying a stored answer (retries).",
		}, func() float64 { r, _ := w.ratios(); return r }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "reserved_conflict_ratio",
			Help: "Share of the requests of idempotent operations (reservations, cancellations, holds, confirmations, releases) in the last 5 minutes refused with operation_conflict (a key reused for another payload).",
		}, func() float64 { _, c := w.ratios(); return c }),
	}
}
