package delivery

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/failpoint"
)

// Defaults of Config.
const (
	DefaultMinBackoff = 5 * time.Second
	DefaultMaxAge     = 72 * time.Hour
	// DefaultMaxBackoff caps the doubling of the wait between attempts:
	// an endpoint that is down for a day is still tried about once an
	// hour, so it gets its backlog within the hour after it is back.
	DefaultMaxBackoff = time.Hour
	DefaultTimeout    = 10 * time.Second
	DefaultPoll       = 200 * time.Millisecond
	// DefaultLease is how long a claim keeps a delivery from every other
	// sender: the time an attempt may wait for a free slot, the attempt's
	// Timeout, and a margin to record it. A daemon killed while sending
	// leaves its claims behind, and they are sent again once it ran out.
	DefaultLease = 30 * time.Second
	// DefaultPerDestination bounds the attempts in flight to one webhook
	// endpoint (or to the mail channel), so that an endpoint that hangs
	// holds no more than these of the MaxInFlight slots.
	DefaultPerDestination = 4
	DefaultMaxInFlight    = 32
	// DefaultMaxWaiting bounds the claimed deliveries that wait in
	// memory for a slot of their destination.
	DefaultMaxWaiting   = 100
	DefaultBatch        = 64
	DefaultStoreTimeout = 15 * time.Second
	DefaultStatsEvery   = 5 * time.Second
)

// LeaseMargin is what a claim keeps beyond an attempt's Timeout for
// recording the attempt: a Lease must exceed Timeout by more.
const LeaseMargin = 5 * time.Second

// maxPollBackoff bounds the wait after store failures in a row.
const maxPollBackoff = 5 * time.Second

// The results of reserved_delivery_attempts_total.
const (
	resultDelivered = "delivered"
	resultRetry     = "retry"
	resultFailed    = "failed"
	resultGaveUp    = "gave_up"
	// resultDeferred is a claimed delivery that was not sent, because
	// its destination had every slot and every waiting place taken, or
	// it waited for a slot until its claim was about to run out, or this
	// daemon has no channel for it. It is tried again after a backoff,
	// like a failed attempt.
	resultDeferred = "deferred"
)

// Config configures a Dispatcher.
type Config struct {
	// Engine routes events, claims deliveries and records attempts.
	// Required.
	Engine *engine.Engine
	// Channels send the deliveries, by engine.ChannelWebhook,
	// engine.ChannelMail and engine.ChannelReminder; the mail channel
	// sends the reminders too unless another is given for them. A channel
	// that is missing (mail on a daemon without SMTP) is neither routed
	// to nor sent through: its deliveries routed by another daemon are
	// deferred like failed attempts, until they give up.
	Channels map[string]Channel
	// HoldReminder is how long before the deadline of a new hold or an
	// offer its reminder is due (engine.RouteOptions.HoldReminder), on a
	// daemon with a reminder channel; 0 routes none (the reminders
	// another daemon routed are still sent).
	HoldReminder time.Duration
	// MinBackoff is the wait before the first retry; each further retry
	// waits twice as long, up to MaxBackoff, plus up to a quarter more
	// at random (additive jitter: never less than the schedule).
	MinBackoff, MaxBackoff time.Duration
	// MaxAge is how long after it was made (or sent again by an
	// operator) a delivery is retried: one whose next attempt would come
	// later fails ("gave up").
	MaxAge time.Duration
	// Timeout bounds one attempt.
	Timeout time.Duration
	// Poll is how often the dispatcher looks for new events and due
	// deliveries when nothing wakes it (Waker).
	Poll time.Duration
	// Lease is how long a claim lasts (see DefaultLease); it must exceed
	// Timeout by more than a few seconds.
	Lease time.Duration
	// PerDestination bounds the attempts in flight to one destination,
	// MaxInFlight those of the whole dispatcher, and MaxWaiting the
	// claimed deliveries that wait for a slot of one destination.
	PerDestination, MaxInFlight, MaxWaiting int
	// Batch is how many events one pass routes and how many deliveries
	// it claims.
	Batch int
	// StoreTimeout bounds each call to the store: a database that hangs
	// fails the call instead of stopping every delivery.
	StoreTimeout time.Duration
	// StatsEvery is how often the delivery gauges are read from the
	// store.
	StatsEvery time.Duration
	// Waker wakes the dispatcher before its next poll (WakingStore wakes
	// it); nil means it only polls.
	Waker *Waker
	// Now is the clock of backoffs and deadlines; it must be the
	// engine's. Nil means time.Now.
	Now func() time.Time
	// Logger gets every attempt that did not deliver. Nil discards.
	Logger *slog.Logger
}

// Dispatcher sends the deliveries the engine routes. Every destination
// (a webhook endpoint, the mail channel) has a lane of its own: at most
// PerDestination attempts in flight and MaxWaiting claimed deliveries
// waiting for them, so that a destination that hangs or keeps failing
// fills only its own lane, and every other destination's deliveries go
// out as they come due. Within a lane, one delivery that keeps failing
// delays no other: each waits its own backoff in the store and is
// claimed again when due, by due time.
type Dispatcher struct {
	cfg     Config
	log     *slog.Logger
	waker   *Waker
	metrics metrics
	// lanes and sending belong to Run's goroutine.
	lanes   map[string]*lane
	sending int
	// finished carries the lane of each attempt that ended.
	finished chan string
}

// lane is one destination's attempts in flight and claimed deliveries
// waiting for a slot, oldest claim first.
type lane struct {
	sending int
	waiting []engine.DeliveryJob
}

// metrics are the dispatcher's Prometheus metrics.
type metrics struct {
	pending, failed, scheduled prometheus.Gauge
	oldestAge                  prometheus.GaugeFunc
	attempts                   *prometheus.CounterVec
	// oldest is the creation time of the oldest pending delivery, in
	// Unix nanoseconds, 0 when none is pending.
	oldest atomic.Int64
}

// New returns a dispatcher for cfg, with the defaults filled in.
func New(cfg Config) (*Dispatcher, error) {
	if cfg.Engine == nil {
		return nil, errors.New("delivery: no engine")
	}
	if cfg.Channels[engine.ChannelWebhook] == nil {
		return nil, errors.New("delivery: no webhook channel")
	}
	if mail := cfg.Channels[engine.ChannelMail]; mail != nil && cfg.Channels[engine.ChannelReminder] == nil {
		cfg.Channels = maps.Clone(cfg.Channels)
		cfg.Channels[engine.ChannelReminder] = mail
	}
	setDefault(&cfg.MinBackoff, DefaultMinBackoff)
	setDefault(&cfg.MaxAge, DefaultMaxAge)
	setDefault(&cfg.MaxBackoff, DefaultMaxBackoff)
	cfg.MaxBackoff = max(cfg.MaxBackoff, cfg.MinBackoff)
	setDefault(&cfg.Timeout, DefaultTimeout)
	setDefault(&cfg.Poll, DefaultPoll)
	setDefault(&cfg.Lease, max(DefaultLease, cfg.Timeout+3*LeaseMargin))
	setDefault(&cfg.PerDestination, DefaultPerDestination)
	setDefault(&cfg.MaxInFlight, DefaultMaxInFlight)
	setDefault(&cfg.MaxWaiting, DefaultMaxWaiting)
	setDefault(&cfg.Batch, DefaultBatch)
	setDefault(&cfg.StoreTimeout, DefaultStoreTimeout)
	setDefault(&cfg.StatsEvery, DefaultStatsEvery)
	if cfg.Lease <= cfg.Timeout+LeaseMargin {
		return nil, fmt.Errorf("delivery: a lease of %v leaves an attempt of up to %v no time to be recorded", cfg.Lease, cfg.Timeout)
	}
	if cfg.MinBackoff > cfg.MaxAge {
		return nil, fmt.Errorf("delivery: the first retry's wait %v is longer than the %v a delivery is retried for", cfg.MinBackoff, cfg.MaxAge)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	d := &Dispatcher{cfg: cfg, log: cfg.Logger, waker: cfg.Waker, lanes: map[string]*lane{}, finished: make(chan string)}
	if d.log == nil {
		d.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if d.waker == nil {
		d.waker = NewWaker()
	}
	d.metrics = metrics{
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "reserved_deliveries_pending",
			Help: "Deliveries (webhooks, mail) not delivered yet and still tried, as last counted (every few seconds); reminders before their time are not counted (reserved_deliveries_scheduled).",
		}),
		scheduled: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "reserved_deliveries_scheduled",
			Help: "Deliveries waiting for a time of their own, never attempted yet: the reminders of holds before their time, as last counted.",
		}),
		failed: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "reserved_deliveries_failed",
			Help: "Deliveries that failed for good (refused, or retried until they gave up) and were not sent again or skipped by an operator, as last counted.",
		}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reserved_delivery_attempts_total",
			Help: "Delivery attempts by channel and result: delivered, retry (failed, tried again later), failed (refused for good), gave_up (failed until its time ran out), deferred (not sent: its destination was busy or this daemon has no such channel; tried again later).",
		}, []string{"channel", "result"}),
	}
	d.metrics.oldestAge = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "reserved_delivery_oldest_pending_age_seconds",
		Help: "How long the pending delivery that has waited longest has been waiting since it was made, sent again by an operator or, a reminder, came due; 0 when none is pending (as last counted).",
	}, func() float64 {
		oldest := d.metrics.oldest.Load()
		if oldest == 0 {
			return 0
		}
		return max(d.cfg.Now().Sub(time.Unix(0, oldest)).Seconds(), 0)
	})
	return d, nil
}

func setDefault[T int | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// Collectors returns the dispatcher's metrics for registration.
func (d *Dispatcher) Collectors() []prometheus.Collector {
	return []prometheus.Collector{d.metrics.pending, d.metrics.failed, d.metrics.scheduled, d.metrics.oldestAge, d.metrics.attempts}
}

// Run routes and sends deliveries until ctx ends. Attempts in flight
// then are abandoned without being recorded: their claims run out, and
// they are sent again (by this daemon when it runs again, or by another
// on the same database). Run returns once they have returned.
func (d *Dispatcher) Run(ctx context.Context) {
	var senders sync.WaitGroup
	defer senders.Wait()
	failures := 0
	var counted time.Time
	nextLook := time.Now() // When to look for work next.
	// Whether to route and claim without looking first: after a wake,
	// when there is work for certain. The first look reads first, so that
	// a daemon started with nothing to deliver writes nothing (a commit
	// that changes nothing still writes to the file).
	mustPass := false
	for {
		d.releaseFinished()
		if time.Since(counted) >= d.cfg.StatsEvery {
			d.count(ctx)
			counted = time.Now()
		}
		// Waiting deliveries are deferred before a pass could claim them
		// again, should their claims have run out.
		d.deferOverdue(ctx)
		if !time.Now().Before(nextLook) {
			wait := d.cfg.Poll
			more, err := d.look(ctx, mustPass)
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				failures++
				wait = min(d.cfg.Poll<<min(failures, 16), max(maxPollBackoff, d.cfg.Poll))
				d.log.Warn("deliveries: routing or claiming failed, trying again", "error", err, "failures_in_a_row", failures, "retry_in", wait)
			case more:
				failures, wait = 0, 0
			default:
				failures = 0
			}
			nextLook, mustPass = time.Now().Add(wait), more
		}
		d.start(ctx, &senders)
		if !time.Now().Before(nextLook) {
			continue
		}
		t := time.NewTimer(time.Until(nextLook))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-d.waker.c:
			nextLook, mustPass = time.Now(), true
		case key := <-d.finished:
			d.release(key)
		case <-t.C:
		}
		t.Stop()
	}
}

// look routes and claims (pass), unless it need not: then it first reads
// whether there is anything to route or to claim, so that an idle
// dispatcher writes nothing.
func (d *Dispatcher) look(ctx context.Context, mustPass bool) (more bool, err error) {
	if !mustPass {
		var unrouted, pending bool
		var firstDue time.Time
		err := d.storeCall(ctx, func(ctx context.Context) (err error) {
			unrouted, pending, firstDue, err = d.cfg.Engine.DeliveryWork(ctx)
			return err
		})
		if err != nil {
			return false, err
		}
		if !unrouted && (!pending || firstDue.After(d.cfg.Now())) {
			return false, nil
		}
	}
	return d.pass(ctx)
}

// pass routes a batch of events and claims a batch of due deliveries,
// putting each in its destination's lane, and reports whether there may
// be more of either.
func (d *Dispatcher) pass(ctx context.Context) (more bool, err error) {
	err = d.storeCall(ctx, func(ctx context.Context) (err error) {
		_, more, err = d.cfg.Engine.RouteEvents(ctx, d.cfg.Batch, d.routeOptions())
		return err
	})
	if err != nil {
		return false, err
	}
	var jobs []engine.DeliveryJob
	err = d.storeCall(ctx, func(ctx context.Context) (err error) {
		jobs, err = d.cfg.Engine.ClaimDueDeliveries(ctx, d.cfg.Batch, d.cfg.Lease)
		return err
	})
	if err != nil {
		return more, err
	}
	var deferred []outcome
	for _, job := range jobs {
		if d.cfg.Channels[job.Delivery.Channel] == nil {
			deferred = append(deferred, outcome{job, Result{Err: fmt.Sprintf("not sent: this daemon has no %s channel", job.Delivery.Channel)}, resultDeferred})
			continue
		}
		key := laneOf(job.Delivery)
		l := d.lanes[key]
		if l == nil {
			l = &lane{}
			d.lanes[key] = l
		}
		if len(l.waiting) >= d.cfg.MaxWaiting+max(d.cfg.PerDestination-l.sending, 0) {
			deferred = append(deferred, outcome{job, Result{Err: fmt.Sprintf("not sent: its destination had %d attempts in flight and %d more waiting", l.sending, len(l.waiting))}, resultDeferred})
			continue
		}
		l.waiting = append(l.waiting, job)
	}
	d.recordAll(ctx, deferred)
	return more || len(jobs) == d.cfg.Batch, nil
}

// routeOptions says what the events are routed to: mail and reminders
// when this daemon has their channels.
func (d *Dispatcher) routeOptions() engine.RouteOptions {
	opts := engine.RouteOptions{Mail: d.cfg.Channels[engine.ChannelMail] != nil}
	if opts.Mail && d.cfg.Channels[engine.ChannelReminder] != nil {
		opts.HoldReminder = d.cfg.HoldReminder
	}
	return opts
}

// laneOf returns the destination of d: its webhook endpoint, or its
// channel; a reminder goes to the mail server as every mail does, so it
// shares the mail's lane.
func laneOf(d engine.Delivery) string {
	switch d.Channel {
	case engine.ChannelWebhook:
		return engine.ChannelWebhook + " " + d.Endpoint
	case engine.ChannelReminder:
		return engine.ChannelMail
	}
	return d.Channel
}

// deferOverdue records as deferred the waiting deliveries whose claim
// would run out before an attempt started now could be recorded. A
// lane's deliveries wait in the order they were claimed, so their
// claims run out in that order too.
func (d *Dispatcher) deferOverdue(ctx context.Context) {
	latest := d.cfg.Now().Add(d.cfg.Timeout + LeaseMargin) // Claims must last beyond it.
	var deferred []outcome
	for key, l := range d.lanes {
		for len(l.waiting) > 0 && !l.waiting[0].Delivery.NextAttemptAt.After(latest) {
			deferred = append(deferred, outcome{l.waiting[0], Result{Err: fmt.Sprintf("not sent: waited for one of the %d attempts in flight to its destination until its claim ran out", l.sending)}, resultDeferred})
			l.waiting[0] = engine.DeliveryJob{}
			l.waiting = l.waiting[1:]
		}
		d.dropIfIdle(key, l)
	}
	d.recordAll(ctx, deferred)
}

// start starts the waiting deliveries that have a slot, of their lane
// and of the dispatcher, each on its own goroutine.
func (d *Dispatcher) start(ctx context.Context, senders *sync.WaitGroup) {
	for key, l := range d.lanes {
		for len(l.waiting) > 0 && l.sending < d.cfg.PerDestination && d.sending < d.cfg.MaxInFlight {
			job := l.waiting[0]
			l.waiting[0] = engine.DeliveryJob{}
			l.waiting = l.waiting[1:]
			l.sending++
			d.sending++
			senders.Go(func() {
				d.send(ctx, job)
				select {
				case d.finished <- key:
				case <-ctx.Done():
				}
			})
		}
		if d.sending >= d.cfg.MaxInFlight {
			return
		}
	}
}

// releaseFinished frees the slots of the attempts that ended, without
// waiting for any.
func (d *Dispatcher) releaseFinished() {
	for {
		select {
		case key := <-d.finished:
			d.release(key)
		default:
			return
		}
	}
}

// release frees the slot of an attempt of lane key that ended, and
// starts the next waiting one.
func (d *Dispatcher) release(key string) {
	l := d.lanes[key]
	l.sending--
	d.sending--
	d.dropIfIdle(key, l)
}

func (d *Dispatcher) dropIfIdle(key string, l *lane) {
	if l.sending == 0 && len(l.waiting) == 0 {
		delete(d.lanes, key)
	}
}

// send makes one attempt of job and records it, unless ctx ended
// meanwhile: then the attempt is abandoned, and its claim runs out.
func (d *Dispatcher) send(ctx context.Context, job engine.DeliveryJob) {
	actx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	res := d.cfg.Channels[job.Delivery.Channel].Send(actx, job)
	timedOut := errors.Is(actx.Err(), context.DeadlineExceeded)
	cancel()
	failpoint.Hit(failpoint.DeliveryBeforeFinish)
	if ctx.Err() != nil {
		return
	}
	if timedOut && !res.Delivered && !res.Permanent {
		res.Err = fmt.Sprintf("no answer within %v: %s", d.cfg.Timeout, res.Err)
	}
	d.record(ctx, outcome{job: job, res: res})
}

// outcome is an attempt of a claimed delivery, or the deferral of one
// (result resultDeferred), to be recorded.
type outcome struct {
	job    engine.DeliveryJob
	res    Result
	result string
}

// recordAll records outcomes concurrently, so that a store that commits
// in groups records them together, and returns when all are recorded.
func (d *Dispatcher) recordAll(ctx context.Context, outcomes []outcome) {
	var wg sync.WaitGroup
	for _, o := range outcomes {
		wg.Go(func() { d.record(ctx, o) })
	}
	wg.Wait()
}

// record records outcome o with the engine, counts it and logs it. A
// failure to record it is logged: its claim runs out and it is sent
// again.
func (d *Dispatcher) record(ctx context.Context, o outcome) {
	now := d.cfg.Now()
	attempt, result := d.attemptOf(o.job.Delivery, o.res, now)
	if o.result == resultDeferred && result == resultRetry {
		result = resultDeferred
	}
	err := d.storeCall(ctx, func(ctx context.Context) error {
		return d.cfg.Engine.FinishDelivery(ctx, o.job.Delivery, attempt)
	})
	dl := o.job.Delivery
	attrs := []any{"delivery", dl.ID, "event_type", dl.EventType, "channel", dl.Channel, "endpoint", dl.Endpoint, "attempt", dl.Attempts, "status", o.res.Status, "error", o.res.Err}
	if err != nil {
		if ctx.Err() == nil {
			d.log.Warn("deliveries: an attempt could not be recorded; it is made again once its claim runs out", append(attrs, "record_error", err)...)
		}
		return
	}
	d.metrics.attempts.WithLabelValues(dl.Channel, result).Inc()
	switch result {
	case resultRetry, resultDeferred:
		d.log.Info("delivery not made yet, will retry", append(attrs, "result", result, "next_attempt_at", attempt.NextAttemptAt)...)
	case resultFailed, resultGaveUp:
		d.log.Warn("delivery failed for good; an operator may send it again", append(attrs, "result", result, "reason", attempt.Error)...)
	}
}

// attemptOf returns how an attempt of the claimed delivery dl that
// ended in res at now is recorded, and its result for the metrics:
// delivered; failed at once when res is permanent; otherwise pending,
// due again after the backoff of its attempts (at least the wait the
// receiver asked for, up to MaxBackoff), or failed, having given up,
// when that would fall after MaxAge from its Since.
func (d *Dispatcher) attemptOf(dl engine.Delivery, res Result, now time.Time) (engine.Attempt, string) {
	a := engine.Attempt{Status: res.Status, Error: res.Err}
	if a.Status == 0 {
		a.Status = dl.LastStatus // The status of the last attempt that got one.
	}
	switch {
	case res.Delivered:
		a.State, a.Error = engine.DeliveryDelivered, ""
		return a, resultDelivered
	case res.Permanent:
		a.State = engine.DeliveryFailed
		return a, resultFailed
	}
	next := now.Add(max(d.backoff(dl.Attempts), min(res.RetryAfter, d.cfg.MaxBackoff)))
	if next.After(dl.Since.Add(d.cfg.MaxAge)) {
		a.State = engine.DeliveryFailed
		a.Error = fmt.Sprintf("gave up after %d attempts over %v: %s", dl.Attempts, now.Sub(dl.Since).Round(time.Second), res.Err)
		return a, resultGaveUp
	}
	a.State, a.NextAttemptAt = engine.DeliveryPending, next.UTC().Truncate(time.Microsecond)
	return a, resultRetry
}

// backoff is the wait after the n-th attempt: MinBackoff doubled for
// every attempt before it, up to MaxBackoff, plus up to a quarter more at
// random.
func (d *Dispatcher) backoff(n int) time.Duration {
	b := d.cfg.MinBackoff
	for i := 1; i < n && b < d.cfg.MaxBackoff; i++ {
		b *= 2
	}
	b = min(b, d.cfg.MaxBackoff)
	return b + rand.N(b/4+1)
}

// count reads the delivery statistics into the gauges; a failure leaves
// them as they were.
func (d *Dispatcher) count(ctx context.Context) {
	var s engine.DeliveryStats
	err := d.storeCall(ctx, func(ctx context.Context) (err error) {
		s, err = d.cfg.Engine.CountDeliveries(ctx)
		return err
	})
	if err != nil {
		if ctx.Err() == nil {
			d.log.Warn("deliveries: counting failed", "error", err)
		}
		return
	}
	d.metrics.pending.Set(float64(s.Pending))
	d.metrics.failed.Set(float64(s.Failed))
	d.metrics.scheduled.Set(float64(s.Scheduled))
	oldest := int64(0)
	if !s.OldestPending.IsZero() {
		oldest = s.OldestPending.UnixNano()
	}
	d.metrics.oldest.Store(oldest)
}

// storeCall runs one call to the store, bounded by StoreTimeout.
func (d *Dispatcher) storeCall(ctx context.Context, call func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.StoreTimeout)
	defer cancel()
	return call(ctx)
}
