package server

import (
	"net/http"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/version"
)

// Metrics are the daemon's Prometheus metrics, in a registry of their own.
// Create them before the store so the store's commit hook can feed them.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	commits  prometheus.Histogram
	batches  prometheus.Histogram
	// batchCommits is batches per commit.
	batchCommits prometheus.Histogram
	connCap      *prometheus.CounterVec
	holds        *prometheus.CounterVec
	ratios       *ratioWindow
}

// The events of reserved_holds_total.
const (
	holdHeld      = "held"
	holdConfirmed = "confirmed"
	holdReleased  = "released"
	holdExpired   = "expired"
)

// NewMetrics registers the request, latency, group-commit and connection
// cap metrics, the replay and conflict ratios of the last five minutes, plus the Go runtime
// and process collectors.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reserved_http_requests_total",
			Help: "HTTP requests by route pattern and outcome: created (a reservation made, also by confirming a hold), replayed, conflict, rejected, rate_limited (refused by the rate limit before it was decided), error, ok, or the status of another answer decided now (unavailable, cancelled, already_cancelled, held, released, expired, already_confirmed, already_released, registration_not_open, registration_closed, limit_reached, requeued, skipped, already_delivered, already_skipped).",
		}, []string{"route", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "reserved_http_request_duration_seconds",
			Help:    "Time from reading a request's header to the end of its answer, by route pattern.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"route"}),
		commits: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "reserved_reservations_per_commit",
			Help:    "Store writes (mostly reservations) that shared one durable group commit.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 11),
		}),
		batches: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "reserved_batch_items",
			Help:    "Items per decided batch (POST /api/v1/batches). Each batch is one store write: reserved_reservations_per_commit counts how many batches and single operations shared a commit.",
			Buckets: []float64{1, 10, 50, 100, 200, 500, 1000},
		}),
		batchCommits: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "reserved_batches_per_commit",
			Help:    "Batches that shared one durable group commit, for the commits with at least one batch.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 11),
		}),
		connCap: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reserved_connections_at_cap_total",
			Help: "Connections a listener at its connection cap closed, by listener (socket, tcp) and action (shed_idle: the longest idle one, to admit a new one; shed_waiting: with none idle, the one waiting longest for its first request header; refused_new: a new one, because every one was busy with a request; on the socket, refused_unreserved: a new one of a uid that is not an admin, because such uids held every slot not kept for admins, each busy; refused_share: a new one, because its uid held its whole share, each busy).",
		}, []string{"listener", "action"}),
		holds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reserved_holds_total",
			Help: "Holds by event, each hold counted at most once per event: held (a hold request decided held), confirmed (a confirmation made the hold a reservation), released (a release gave its places back), expired (its deadline passed while it was open and its places were given back, by the hold janitor, by a confirmation or release that found it so, or by a reservation, hold request or batch item that needed its places). Replays count nothing.",
		}, []string{"event"}),
	}
	for _, e := range []string{holdHeld, holdConfirmed, holdReleased, holdExpired} {
		m.holds.WithLabelValues(e)
	}
	m.ratios = newRatioWindow(time.Now)
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "reserved_build_info",
		Help: "Always 1; its labels say what is running: the version, the version control revision it was built from (with -modified when the tree had uncommitted changes, unknown when the build recorded none) and the Go release.",
	}, []string{"version", "revision", "goversion"})
	build.WithLabelValues(version.String(), version.RevisionLabel(), runtime.Version()).Set(1)
	m.reg.MustRegister(build)
	m.reg.MustRegister(m.requests, m.latency, m.commits, m.batches, m.batchCommits, m.connCap, m.holds,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reg.MustRegister(m.ratios.collectors()...)
	return m
}

// Register adds more collectors (the outbox's) to the served metrics.
func (m *Metrics) Register(cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := m.reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// trackConnections reports how many connections a capped listener of kind
// (socket, tcp) holds, how many of them are idle, the ones it closes first
// at its cap, and how many wait for their first request header, the ones
// it closes next. A second listener of one kind is not reported.
func (m *Metrics) trackConnections(kind string, open, idle, waiting func() int) {
	for state, count := range map[string]func() int{"open": open, "idle": idle, "waiting": waiting} {
		m.reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "reserved_connections",
			Help:        "Connections a listener holds, by listener (socket, tcp) and state (open: all of them; idle: those waiting for their next request, which a listener at its cap closes first; waiting: those that have not finished their first request header, which it closes next).",
			ConstLabels: prometheus.Labels{"listener": kind, "state": state},
		}, func() float64 { return float64(count()) }))
	}
}

// ObserveCommit records the size of one group commit and, for a commit
// with batches, how many. It has the signature of boltstore.Options.OnCommit.
func (m *Metrics) ObserveCommit(calls, batches int) {
	m.commits.Observe(float64(calls))
	if batches > 0 {
		m.batchCommits.Observe(float64(batches))
	}
}

// observeBatch records the items of one decided batch.
func (m *Metrics) observeBatch(items int) { m.batches.Observe(float64(items)) }

// HoldsExpired counts n holds past their deadline that the hold janitor
// cleaned up.
func (m *Metrics) HoldsExpired(n int) { m.holds.WithLabelValues(holdExpired).Add(float64(n)) }

// countHold counts what the first decision out did to holds: the holds
// past their deadline it found open and gave the places of back, and the
// hold it made, confirmed or released.
func (m *Metrics) countHold(out engine.Outcome) {
	m.countExpired(out)
	a := out.Answer
	switch {
	case a.Kind == engine.OperationHold && a.Status == engine.StatusHeld:
		m.holds.WithLabelValues(holdHeld).Inc()
	case a.Kind == engine.OperationConfirm && a.Status == engine.StatusReserved:
		m.holds.WithLabelValues(holdConfirmed).Inc()
	case a.Kind == engine.OperationRelease && a.Status == engine.StatusReleased:
		m.holds.WithLabelValues(holdReleased).Inc()
	}
}

// countExpired counts the holds past their deadline that the first
// decision out cleaned up.
func (m *Metrics) countExpired(out engine.Outcome) {
	if out.ExpiredHolds > 0 {
		m.holds.WithLabelValues(holdExpired).Add(float64(out.ExpiredHolds))
	}
}

func (m *Metrics) observe(route, outcome string, d time.Duration) {
	m.requests.WithLabelValues(route, outcome).Inc()
	m.latency.WithLabelValues(route).Observe(d.Seconds())
	m.ratios.observe(route, outcome)
}

func (m *Metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
