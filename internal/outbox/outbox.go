// Package outbox is the dispatcher of reserve's confirmation events: it
// reads the undelivered events that the engine committed together with each
// reservation and cancellation, delivers each one to an HTTP endpoint (POST
// of the event's JSON with header Idempotency-Key: <event id>) and/or into a
// directory (one file <event id>.json per event, written atomically), and
// marks it delivered in a later transaction. Failed deliveries are retried
// with exponential backoff.
//
// Delivery is at least once, and always under the event's own id: a crash
// between delivering and marking delivers the same event id again, never a
// new one, so a receiver that deduplicates by id sees every event once.
//
// An event file is written through a temporary file <event id>.json.tmp-*
// that is renamed into place; a daemon killed in between leaves it behind.
// The dispatcher removes such leftovers when it starts and then once every
// StaleTempAge, but only those last written at least StaleTempAge ago:
// several daemons on one PostgreSQL database may deliver into the same
// directory, and a temporary file that young may be another daemon's write
// in progress. (Removing one would not lose its event, only fail that
// write: its rename fails and the event is delivered again.)
//
// It may import the engine; it must not import the server, the stores or
// any command tree.
package outbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reserve/reserve/internal/atomicfile"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/failpoint"
)

// Defaults of Config.
const (
	DefaultPoll       = 200 * time.Millisecond
	DefaultMinBackoff = 100 * time.Millisecond
	DefaultMaxBackoff = 30 * time.Second
	DefaultTimeout    = 10 * time.Second
	DefaultBatch      = 100
	// DefaultStaleTempAge is far longer than any write of an event file
	// takes, even on a disk that stalls for seconds.
	DefaultStaleTempAge = 10 * time.Minute
	// DefaultStoreTimeout is far longer than a read or a write of the
	// outbox takes on a store that answers.
	DefaultStoreTimeout = 15 * time.Second
)

// eventFileSuffix ends the name of every event file: <event id>.json.
const eventFileSuffix = ".json"

// Config configures a Dispatcher. At least one of URL and Dir is needed.
type Config struct {
	// Engine reads the outbox and marks deliveries. Required.
	Engine *engine.Engine
	// URL receives every event as an HTTP POST.
	URL string
	// Dir receives every event as the file <id>.json.
	Dir string
	// Client sends the POSTs; nil means a client with Timeout.
	Client *http.Client
	// Timeout bounds one POST when Client is nil. Zero means DefaultTimeout.
	Timeout time.Duration
	// Logger gets failures and retries. Nil discards.
	Logger *slog.Logger
	// Poll is how often an idle dispatcher looks for new events (other
	// daemons on a shared database add events too). Zero means DefaultPoll.
	Poll time.Duration
	// MinBackoff and MaxBackoff bound the wait after a failed delivery,
	// which doubles with every failure in a row. Zero means the defaults.
	MinBackoff, MaxBackoff time.Duration
	// Batch is how many events one pass reads. Zero means DefaultBatch.
	Batch int
	// StaleTempAge is how long a temporary event file in Dir must have
	// been left alone before Run takes it for the leftover of a killed
	// daemon and removes it, at start and then once every StaleTempAge.
	// Zero means DefaultStaleTempAge.
	StaleTempAge time.Duration
	// StoreTimeout bounds each call of a pass to the store (the backlog
	// count, the read of pending events, each mark). Run gets the daemon's
	// context, which has no deadline: without the bound, a call on a
	// connection to a database server that hangs (stopped, or cut off
	// without a reset) would wait for ever and stop every delivery, even
	// after a failover to a server that answers. The call fails instead,
	// and the next pass tries again. Zero means DefaultStoreTimeout.
	StoreTimeout time.Duration
}

// Dispatcher delivers the outbox. Run it on one goroutine.
type Dispatcher struct {
	cfg     Config
	client  *http.Client
	log     *slog.Logger
	wake    chan struct{}
	metrics *Metrics
	// afterDeliver, if set, runs between delivering an event and marking
	// it delivered (tests simulate a crash there).
	afterDeliver func(engine.Event) error
}

// Metrics are the dispatcher's Prometheus metrics.
type Metrics struct {
	Backlog    prometheus.Gauge
	Deliveries prometheus.Counter
	Failures   prometheus.Counter
}

// NewMetrics returns the outbox metrics, not yet registered.
func NewMetrics() *Metrics {
	return &Metrics{
		Backlog: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "reserved_outbox_backlog",
			Help: "Confirmation events committed but not yet marked delivered, as of the dispatcher's last pass.",
		}),
		Deliveries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "reserved_outbox_deliveries_total",
			Help: "Confirmation events delivered and marked delivered.",
		}),
		Failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "reserved_outbox_failures_total",
			Help: "Failed delivery attempts of confirmation events (each is retried).",
		}),
	}
}

// Collectors returns the metrics for registration.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.Backlog, m.Deliveries, m.Failures}
}

// New returns a dispatcher for cfg; metrics may be nil.
func New(cfg Config, metrics *Metrics) (*Dispatcher, error) {
	if cfg.Engine == nil {
		return nil, errors.New("outbox: no engine")
	}
	if cfg.URL == "" && cfg.Dir == "" {
		return nil, errors.New("outbox: neither a URL nor a directory to deliver to")
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = max(DefaultMaxBackoff, cfg.MinBackoff)
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.StaleTempAge <= 0 {
		cfg.StaleTempAge = DefaultStaleTempAge
	}
	if cfg.StoreTimeout <= 0 {
		cfg.StoreTimeout = DefaultStoreTimeout
	}
	d := &Dispatcher{cfg: cfg, client: cfg.Client, log: cfg.Logger, wake: make(chan struct{}, 1), metrics: metrics}
	if d.client == nil {
		// A redirect is not a delivery: following it would turn the POST
		// into a GET without the event, and its 2xx would mark the event
		// delivered. The 3xx counts as a failed attempt instead.
		d.client = &http.Client{Timeout: cfg.Timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if d.log == nil {
		d.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if d.metrics == nil {
		d.metrics = NewMetrics()
	}
	if cfg.Dir != "" {
		if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
			return nil, fmt.Errorf("outbox: create %s: %w", cfg.Dir, err)
		}
	}
	return d, nil
}

// Wake makes an idle dispatcher look for events now instead of at its next
// poll. It never blocks.
func (d *Dispatcher) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run delivers events until ctx ends, and then returns nil. With a Dir it
// first removes the stale temporary files there, and again every
// StaleTempAge.
func (d *Dispatcher) Run(ctx context.Context) error {
	failures := 0
	var swept time.Time
	for {
		if d.cfg.Dir != "" && time.Since(swept) >= d.cfg.StaleTempAge {
			d.removeStaleTemps()
			swept = time.Now()
		}
		wait := d.cfg.Poll
		n, err := d.Pass(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			if n > 0 {
				failures = 0 // Progress: only failures in a row back off further.
			}
			failures++
			wait = d.backoff(failures)
			d.log.Warn("outbox delivery failed, retrying", "error", err, "failures_in_a_row", failures, "retry_in", wait)
		default:
			failures = 0
			if n == d.cfg.Batch {
				wait = 0 // A full batch: there may be more.
			}
		}
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-d.wake:
				t.Stop()
			case <-t.C:
			}
		}
	}
}

// removeStaleTemps removes the temporary event files in Dir that were last
// written at least StaleTempAge ago. A failure is logged, not fatal:
// leftovers take space but do not stop delivery.
func (d *Dispatcher) removeStaleTemps() {
	n, err := atomicfile.RemoveStaleTemps(d.cfg.Dir, d.cfg.StaleTempAge, isEventFile)
	if n > 0 {
		d.log.Info("removed stale temporary event files", "notify_dir", d.cfg.Dir, "count", n, "older_than", d.cfg.StaleTempAge)
	}
	if err != nil {
		d.log.Warn("could not remove stale temporary event files", "notify_dir", d.cfg.Dir, "error", err)
	}
}

// isEventFile reports whether name is that of an event file.
func isEventFile(name string) bool {
	return len(name) > len(eventFileSuffix) && strings.HasSuffix(name, eventFileSuffix)
}

// backoff is the wait after the n-th failure in a row.
func (d *Dispatcher) backoff(n int) time.Duration {
	b := d.cfg.MinBackoff
	for i := 1; i < n && b < d.cfg.MaxBackoff; i++ {
		b *= 2
	}
	return min(b, d.cfg.MaxBackoff)
}

// Pass delivers one batch of pending events in id order and returns how
// many it delivered; it stops at the first failure and returns it.
func (d *Dispatcher) Pass(ctx context.Context) (int, error) {
	if backlog, err := withStoreTimeout(ctx, d, func(ctx context.Context) (int, error) {
		return d.cfg.Engine.CountPendingEvents(ctx)
	}); err == nil {
		d.metrics.Backlog.Set(float64(backlog))
	}
	evs, err := withStoreTimeout(ctx, d, func(ctx context.Context) ([]engine.Event, error) {
		return d.cfg.Engine.PendingEvents(ctx, d.cfg.Batch)
	})
	if err != nil {
		return 0, err
	}
	for i, ev := range evs {
		if err := d.deliver(ctx, ev); err != nil {
			d.metrics.Failures.Inc()
			return i, fmt.Errorf("deliver event %s: %w", ev.ID, err)
		}
		failpoint.Hit(failpoint.OutboxBeforeMark)
		if d.afterDeliver != nil {
			if err := d.afterDeliver(ev); err != nil {
				return i, err
			}
		}
		if _, err := withStoreTimeout(ctx, d, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, d.cfg.Engine.MarkDelivered(ctx, ev.ID)
		}); err != nil {
			return i, err
		}
		d.metrics.Deliveries.Inc()
		d.metrics.Backlog.Dec()
	}
	return len(evs), nil
}

// withStoreTimeout runs one call of a pass to the store, bounded by
// StoreTimeout.
func withStoreTimeout[T any](ctx context.Context, d *Dispatcher, call func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.StoreTimeout)
	defer cancel()
	return call(ctx)
}

// deliver hands ev to every configured target.
func (d *Dispatcher) deliver(ctx context.Context, ev engine.Event) error {
	payload, err := ev.Payload()
	if err != nil {
		return fmt.Errorf("event %s: %w", ev.ID, err)
	}
	if d.cfg.Dir != "" {
		if err := atomicfile.WriteFile(filepath.Join(d.cfg.Dir, ev.ID+eventFileSuffix), payload); err != nil {
			return err
		}
	}
	if d.cfg.URL != "" {
		return d.post(ctx, ev, payload)
	}
	return nil
}

// post sends ev's payload to the URL; any 2xx answer is a delivery.
func (d *Dispatcher) post(ctx context.Context, ev engine.Event, payload []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.cfg.URL, bytes.NewReader(payload))
	if err != nil {
		return fmt.Errorf("POST %s: %w", d.cfg.URL, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", ev.ID)
	resp, err := d.client.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", d.cfg.URL, err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("POST %s: answered %s", d.cfg.URL, resp.Status)
	}
	return nil
}
