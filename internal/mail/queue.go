package mail

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Sender delivers one composed message (Server.Send).
type Sender interface {
	Send(ctx context.Context, from, to string, msg []byte) error
}

// Defaults of QueueConfig.
const (
	DefaultCapacity   = 1000
	DefaultMinBackoff = 5 * time.Second
	DefaultMaxBackoff = 5 * time.Minute
	DefaultMaxAge     = time.Hour
	defaultWorkers    = 4
)

// QueueConfig configures a Queue.
type QueueConfig struct {
	// Sender delivers the messages. Required.
	Sender Sender
	// Logger gets a line for every failed attempt. Nil discards.
	Logger *slog.Logger
	// Capacity bounds the messages held at once, waiting to be sent or to
	// be retried; Enqueue refuses more (ErrQueueFull). Zero means
	// DefaultCapacity.
	Capacity int
	// MinBackoff is the wait before the first retry; each further retry
	// waits twice as long, up to MaxBackoff, with up to a quarter more at
	// random. Zero means the defaults.
	MinBackoff, MaxBackoff time.Duration
	// MaxAge is how long a message that keeps failing temporarily is
	// retried when it has no earlier Deadline. Zero means DefaultMaxAge.
	MaxAge time.Duration
}

// ErrQueueFull is the refusal of a message when the queue holds Capacity
// messages already.
var ErrQueueFull = errors.New("the mail queue is full")

// The reasons of reserved_mail_failed_total.
const (
	failPermanent = "permanent"
	failExpired   = "expired"
	failQueueFull = "queue_full"
)

// Queue sends messages in the background, in memory only: a message
// still queued when the daemon stops is lost.
type Queue struct {
	cfg     QueueConfig
	log     *slog.Logger
	ready   chan *item
	pending atomic.Int64

	sent    prometheus.Counter
	retries prometheus.Counter
	failed  *prometheus.CounterVec
	length  prometheus.GaugeFunc
}

// item is a queued message and how often it was tried.
type item struct {
	id       string // Its Message-ID, for the log.
	from, to string
	raw      []byte
	domain   string // The recipient's domain, for the log.
	deadline time.Time
	attempts int
}

// NewQueue returns a queue for cfg; Start sends what it holds.
func NewQueue(cfg QueueConfig) *Queue {
	if cfg.Capacity <= 0 {
		cfg.Capacity = DefaultCapacity
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = max(DefaultMaxBackoff, cfg.MinBackoff)
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = DefaultMaxAge
	}
	q := &Queue{cfg: cfg, log: cfg.Logger, ready: make(chan *item, cfg.Capacity)}
	if q.log == nil {
		q.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	q.sent = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "reserved_mail_sent_total",
		Help: "Mails the mail server accepted.",
	})
	q.retries = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "reserved_mail_retries_total",
		Help: "Attempts to send a mail that failed temporarily (a 4xx reply, a connection or TLS error) and will be tried again.",
	})
	q.failed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "reserved_mail_failed_total",
		Help: "Mails given up, by reason: permanent (a 5xx reply, or a server off loopback without STARTTLS), expired (still failing temporarily at its deadline), queue_full (refused because the queue held its capacity).",
	}, []string{"reason"})
	for _, r := range []string{failPermanent, failExpired, failQueueFull} {
		q.failed.WithLabelValues(r)
	}
	q.length = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "reserved_mail_queue_length",
		Help: "Mails held in memory, waiting to be sent or retried.",
	}, func() float64 { return float64(q.pending.Load()) })
	return q
}

// Collectors returns the queue's metrics.
func (q *Queue) Collectors() []prometheus.Collector {
	return []prometheus.Collector{q.sent, q.retries, q.failed, q.length}
}

// Enqueue composes m and queues it for sending; it never waits for the
// mail server. A full queue refuses it with ErrQueueFull (logged and
// counted).
func (q *Queue) Enqueue(m Message) error {
	raw, err := Compose(m, time.Now())
	if err != nil {
		return fmt.Errorf("compose mail: %w", err)
	}
	_, domain, _ := strings.Cut(m.To.Address, "@")
	it := &item{id: messageID(raw), from: m.From.Address, to: m.To.Address, raw: raw, domain: domain, deadline: m.Deadline}
	if d := time.Now().Add(q.cfg.MaxAge); it.deadline.IsZero() || it.deadline.After(d) {
		it.deadline = d
	}
	if q.pending.Add(1) > int64(q.cfg.Capacity) {
		q.pending.Add(-1)
		q.failed.WithLabelValues(failQueueFull).Inc()
		q.log.Error("mail not sent: the mail queue is full", "to_domain", domain, "capacity", q.cfg.Capacity)
		return ErrQueueFull
	}
	q.ready <- it // Never waits: the channel holds Capacity.
	return nil
}

// Start sends queued messages until ctx ends or the returned function is
// called; that function waits for attempts under way.
func (q *Queue) Start(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range defaultWorkers {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case it := <-q.ready:
					q.attempt(ctx, it)
				}
			}
		})
	}
	var once sync.Once
	return func() { once.Do(func() { cancel(); wg.Wait() }) }
}

// attempt tries to send it once and settles what follows: done, given
// up, or queued again after a backoff.
func (q *Queue) attempt(ctx context.Context, it *item) {
	it.attempts++
	err := q.cfg.Sender.Send(ctx, it.from, it.to, it.raw)
	if err == nil {
		q.pending.Add(-1)
		q.sent.Inc()
		return
	}
	if ctx.Err() != nil {
		return // Stopping: the message is dropped with the queue.
	}
	attrs := []any{"message_id", it.id, "to_domain", it.domain, "attempt", it.attempts, "error", err}
	if Permanent(err) {
		q.pending.Add(-1)
		q.failed.WithLabelValues(failPermanent).Inc()
		q.log.Error("mail given up: the mail server refused it for good", attrs...)
		return
	}
	wait := q.backoff(it.attempts)
	if time.Now().Add(wait).After(it.deadline) {
		q.pending.Add(-1)
		q.failed.WithLabelValues(failExpired).Inc()
		q.log.Error("mail given up: it kept failing until its deadline", append(attrs, "deadline", it.deadline)...)
		return
	}
	q.retries.Inc()
	q.log.Warn("mail not sent yet, will retry", append(attrs, "retry_in", wait)...)
	time.AfterFunc(wait, func() { q.ready <- it })
}

// backoff is the wait after the n-th failed attempt.
func (q *Queue) backoff(n int) time.Duration {
	d := q.cfg.MinBackoff
	for i := 1; i < n && d < q.cfg.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, q.cfg.MaxBackoff)
	return d + rand.N(d/4+1)
}

// messageID returns the Message-ID field of a composed message.
func messageID(raw []byte) string {
	for line := range strings.SplitSeq(string(raw), "\r\n") {
		if line == "" {
			break
		}
		if v, ok := strings.CutPrefix(line, "Message-ID: "); ok {
			return v
		}
	}
	return ""
}
