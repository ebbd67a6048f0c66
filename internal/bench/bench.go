// Package bench is the load generator behind `reservectl bench`: many
// concurrent clients send idempotent reservations to a running reserved
// (over TCP or the Unix socket), some of them replays of settled intents and
// some of them lost-answer retries, and the run ends with latency
// percentiles, outcome counts and a check through the API that the
// workshop's reserved places equal the reservations the clients were told
// about.
//
// It talks to the daemon through package client only; it must not import
// the server, the daemon, a store or a command tree.
package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
)

// Defaults of Config.
const (
	DefaultClients  = 64
	DefaultDuration = 10 * time.Second
	DefaultTimeout  = 10 * time.Second
	// maxAttempts bounds how often one request is resent with the same key
	// after an unclear answer (transport error, 5xx, garbled answer).
	maxAttempts = 10
	// maxRateLimited bounds how often one request is resent with the same
	// key after the daemon's rate limit refused it (429 rate_limited),
	// each time after its Retry-After; these resends do not count against
	// maxAttempts, since the limit lets the request through in time.
	maxRateLimited = 60
	// maxRetryAfter bounds how long a client waits before a resend when an
	// answer asks it to with Retry-After (503 store_unavailable).
	maxRetryAfter = 10 * time.Second
	// poolSize bounds how many settled intents each client keeps to replay.
	poolSize = 4096
	// createdCapacity is the capacity of a workshop the bench creates.
	createdCapacity = 1_000_000_000
)

// Config describes one bench run. Exactly one of Socket and BaseURL selects
// the daemon.
type Config struct {
	// Socket is the daemon's Unix socket, used when BaseURL is empty.
	Socket string
	// BaseURL selects TCP, e.g. "http://127.0.0.1:8080", with Token.
	BaseURL string
	Token   string
	// Clients is how many clients send concurrently (DefaultClients if 0).
	Clients int
	// Duration bounds the run unless Count is set (DefaultDuration if both
	// are zero).
	Duration time.Duration
	// Count, if positive, is the number of intents to send (new ones and
	// replays; with Batch, batches) instead of a duration.
	Count int
	// Batch, if positive, makes every intent a batch of Batch new
	// reservations, each under its own key, sent as one non-atomic
	// request (POST /api/v1/batches) instead of a single reservation. A
	// replay and a lost-answer retry resend a whole batch, the same items
	// under the same keys. At most engine.MaxBatchItems.
	Batch int
	// Workshop is the workshop to reserve in; empty creates one with a large
	// capacity, which needs an admin. Nobody else should reserve in it
	// during the run, or the check at the end fails.
	Workshop string
	// Keep lists a workshop the run creates; without it the workshop is
	// created hidden, so that it never shows in the workshop list (the
	// browser's), during the run or after it.
	Keep bool
	// Quantity is the places of each reservation (1 if 0).
	Quantity int
	// Keys is the version of the operation keys the clients make: "v7"
	// (time-ordered, as reservectl makes them; the default) or "v4"
	// (random, as earlier clients and many other programs make them).
	Keys string
	// ReplayRatio is the share of intents that resend an intent the same
	// client has already settled, in [0, 1].
	ReplayRatio float64
	// LostAnswerRatio is the share of new intents whose first answer is
	// ignored, as if it had been lost, and that are sent again with the same
	// key, in [0, 1].
	LostAnswerRatio float64
	// Timeout bounds each request (DefaultTimeout if 0).
	Timeout time.Duration
	// Progress, if set, is called about every ProgressInterval (one second
	// if 0) with the counts so far.
	Progress         func(Snapshot)
	ProgressInterval time.Duration
	// afterRequest, if set, is called after every request; tests use it to
	// disturb a run.
	afterRequest func()
	// wait waits d before a resend that an answer's Retry-After asked for,
	// or until ctx is done; nil means a timer (tests record the waits).
	wait func(ctx context.Context, d time.Duration) error
}

// Snapshot is the state of a run in progress.
type Snapshot struct {
	Elapsed     time.Duration
	Requests    int64
	Created     int64
	Unclear     int64
	RateLimited int64
}

// Result is what a run measured. Latencies are those of single HTTP
// requests, in milliseconds: of one reservation each, or with Batch of one
// batch of Batch reservations each (LatencyOf says which).
type Result struct {
	Transport       string        `json:"transport"`
	Target          string        `json:"target"`
	Clients         int           `json:"clients"`
	Workshop        string        `json:"workshop"`
	CreatedWorkshop bool          `json:"created_workshop"`
	HiddenWorkshop  bool          `json:"hidden_workshop"`
	Quantity        int           `json:"quantity"`
	Keys            string        `json:"keys"`
	Batch           int           `json:"batch,omitempty"`
	ReplayRatio     float64       `json:"replay_ratio"`
	LostAnswerRatio float64       `json:"lost_answer_ratio"`
	Elapsed         time.Duration `json:"-"`
	Seconds         float64       `json:"seconds"`
	Requests        int64         `json:"requests"`
	Intents         int64         `json:"intents"`
	RequestsPerSec  float64       `json:"requests_per_second"`
	CreatedPerSec   float64       `json:"reservations_per_second"`
	// LatencyOf is what one latency is of: "request" (one reservation)
	// or "batch of N".
	LatencyOf    string       `json:"latency_of"`
	Latency      Latency      `json:"latency_ms"`
	Outcomes     Outcomes     `json:"outcomes"`
	Verification Verification `json:"verification"`
}

// Latency holds percentiles of request latency in milliseconds.
type Latency struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// Outcomes counts answers. Created and Unavailable count first answers,
// Replayed counts answers marked as replays (of a deliberate replay, of a
// lost-answer retry or of a retry after an unclear answer); with batches
// these three and Rejected count the items, and LostAnswers, Unclear,
// RateLimited, Unsettled and ReplayChanged the batches. RateLimited counts
// the answers 429 rate_limited apart from the other unclear ones: the
// daemon's rate limit, not its speed, set the pace of those requests
// (admins are not limited, so run the bench as one).
type Outcomes struct {
	Created       int64            `json:"created"`
	Replayed      int64            `json:"replayed"`
	Unavailable   int64            `json:"unavailable"`
	LostAnswers   int64            `json:"lost_answers"`
	Unclear       int64            `json:"unclear"`
	RateLimited   int64            `json:"rate_limited"`
	Unsettled     int64            `json:"unsettled"`
	Rejected      map[string]int64 `json:"rejected,omitempty"`
	ReplayChanged int64            `json:"replay_changed"`
}

// Verification compares the workshop's reserved places, read through the
// API before and after the run, with the reservations the clients were
// told about.
type Verification struct {
	ReservedBefore int  `json:"reserved_before"`
	ReservedAfter  int  `json:"reserved_after"`
	Reservations   int  `json:"reservations"`
	OK             bool `json:"ok"`
}

// ErrConfig is wrapped by the error Run returns for a Config it refuses
// before sending anything.
var ErrConfig = errors.New("invalid configuration")

// ErrVerification is wrapped by the error Run returns when the run broke a
// promise: the workshop's count differs from what the clients saw, a replay
// differed from the first answer, an intent was refused, or an intent ended
// without an authoritative answer.
var ErrVerification = errors.New("verification failed")

// Run runs the bench and returns its result. The result is also returned
// with an error wrapping ErrVerification, so callers can show it.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg, err := withDefaults(cfg)
	if err != nil {
		return Result{}, err
	}
	c, res := newClient(cfg)
	res.Clients, res.Quantity, res.Batch, res.Keys = cfg.Clients, cfg.Quantity, cfg.Batch, cfg.Keys
	res.LatencyOf = "request"
	if cfg.Batch > 0 {
		res.LatencyOf = fmt.Sprintf("batch of %d", cfg.Batch)
	}
	res.ReplayRatio, res.LostAnswerRatio = cfg.ReplayRatio, cfg.LostAnswerRatio

	res.Workshop, res.CreatedWorkshop = cfg.Workshop, cfg.Workshop == ""
	res.HiddenWorkshop = res.CreatedWorkshop && !cfg.Keep
	if res.CreatedWorkshop {
		if res.Workshop, err = createWorkshop(ctx, c, cfg); err != nil {
			return Result{}, err
		}
	}
	before, err := reservedPlaces(ctx, c, cfg, res.Workshop)
	if err != nil {
		return Result{}, err
	}

	r := &run{cfg: cfg, c: c, workshop: res.Workshop, dial: dialer(cfg)}
	r.start = time.Now()
	if cfg.Count == 0 {
		r.end = r.start.Add(cfg.Duration)
	}
	stopProgress := r.progress()
	var wg sync.WaitGroup
	for i := range cfg.Clients {
		if cfg.Batch > 0 {
			wg.Go(func() { r.batchWorker(ctx, i) })
		} else {
			wg.Go(func() { r.worker(ctx, i) })
		}
	}
	wg.Wait()
	res.Elapsed = time.Since(r.start)
	stopProgress()

	after, err := reservedPlaces(ctx, c, cfg, res.Workshop)
	if err != nil {
		return Result{}, err
	}
	r.summarize(&res, before, after)
	return res, r.verify(res)
}

func withDefaults(cfg Config) (Config, error) {
	if cfg.Clients == 0 {
		cfg.Clients = DefaultClients
	}
	if cfg.Duration == 0 && cfg.Count == 0 {
		cfg.Duration = DefaultDuration
	}
	if cfg.Quantity == 0 {
		cfg.Quantity = 1
	}
	if cfg.Keys == "" {
		cfg.Keys = "v7"
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.ProgressInterval == 0 {
		cfg.ProgressInterval = time.Second
	}
	if cfg.wait == nil {
		cfg.wait = client.Sleep
	}
	var err error
	switch {
	case cfg.Clients < 1:
		err = fmt.Errorf("clients must be at least 1, not %d", cfg.Clients)
	case cfg.Count < 0 || cfg.Duration < 0:
		err = errors.New("count and duration must not be negative")
	case cfg.ReplayRatio < 0 || cfg.ReplayRatio > 1:
		err = fmt.Errorf("replay ratio must be between 0 and 1, not %g", cfg.ReplayRatio)
	case cfg.LostAnswerRatio < 0 || cfg.LostAnswerRatio > 1:
		err = fmt.Errorf("lost-answer ratio must be between 0 and 1, not %g", cfg.LostAnswerRatio)
	case cfg.Workshop != "" && engine.ValidateWorkshopID(cfg.Workshop) != nil:
		err = fmt.Errorf("workshop %w", engine.ValidateWorkshopID(cfg.Workshop))
	case cfg.Batch < 0 || cfg.Batch > engine.MaxBatchItems:
		err = fmt.Errorf("batch must be from 1 to %d reservations, not %d", engine.MaxBatchItems, cfg.Batch)
	case cfg.Keys != "v7" && cfg.Keys != "v4":
		err = fmt.Errorf("keys must be v7 or v4, not %q", cfg.Keys)
	case cfg.Quantity < 1 || cfg.Quantity > createdCapacity:
		err = fmt.Errorf("quantity must be from 1 to %d, not %d", createdCapacity, cfg.Quantity)
	case cfg.BaseURL != "":
		if u, perr := url.Parse(cfg.BaseURL); perr != nil || u.Scheme != "http" || u.Host == "" {
			err = fmt.Errorf("the bench speaks plain HTTP: the server URL must look like http://host:port, not %q", cfg.BaseURL)
		}
	}
	if err != nil {
		return cfg, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return cfg, nil
}

// newClient returns an API client whose transport keeps one connection per
// bench client, so the run measures requests rather than connection set-up.
func newClient(cfg Config) (*client.Client, Result) {
	tr := &http.Transport{MaxIdleConns: cfg.Clients, MaxIdleConnsPerHost: cfg.Clients, IdleConnTimeout: time.Minute}
	res := Result{Transport: "tcp", Target: cfg.BaseURL}
	c := &client.Client{BaseURL: cfg.BaseURL, Token: cfg.Token, HTTPClient: &http.Client{Transport: tr}}
	if cfg.BaseURL == "" {
		c = &client.Client{Socket: cfg.Socket}
		res.Transport, res.Target = "socket", c.Where()
		socket := res.Target
		var d net.Dialer
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", socket)
		}
		c.HTTPClient = &http.Client{Transport: tr}
	}
	return c, res
}

// createWorkshop creates a workshop of its own for the run, hidden unless
// cfg.Keep.
func createWorkshop(ctx context.Context, c *client.Client, cfg Config) (string, error) {
	suffix := make([]byte, 4)
	rand.Read(suffix)
	id := "bench-" + hex.EncodeToString(suffix)
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	spec := engine.WorkshopSpec{Capacity: createdCapacity, MaxQuantity: cfg.Quantity, Title: "reservectl bench"}
	if !cfg.Keep {
		// Sent only when it hides the workshop, so that --keep works
		// with a daemon that has no hidden workshops.
		hidden := true
		spec.Hidden = &hidden
	}
	if _, _, err := c.PutWorkshop(ctx, id, spec, nil); err != nil {
		if code := engine.ErrorCode(err); code == engine.CodeForbidden || code == engine.CodeUnauthenticated {
			return "", fmt.Errorf("create workshop %s: %w (creating the bench's workshop needs an admin; name an existing one with --workshop)", id, err)
		}
		return "", fmt.Errorf("create workshop %s: %w", id, err)
	}
	return id, nil
}

func reservedPlaces(ctx context.Context, c *client.Client, cfg Config, id string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	w, err := c.Workshop(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("read workshop %s: %w", id, err)
	}
	return w.Reserved, nil
}

// run is the shared state of the clients of one run.
type run struct {
	cfg        Config
	c          *client.Client // For everything but the load itself.
	dial       func(context.Context) (net.Conn, error)
	workshop   string
	start, end time.Time
	issued     atomic.Int64 // Intents claimed so far (Count mode).

	requests, created, unclear, rateLimited atomic.Int64

	mu        sync.Mutex
	latencies []time.Duration
	outcomes  Outcomes
	intents   int64
	reserved  int // Distinct keys whose authoritative answer is 201.
}

// settled is an intent with its authoritative answer, kept for replays.
type settled struct {
	key    engine.OperationKey
	status int
	body   []byte
}

// dialer returns how the bench's own connections reach the daemon.
func dialer(cfg Config) func(context.Context) (net.Conn, error) {
	var d net.Dialer
	if cfg.BaseURL == "" {
		socket := (&client.Client{Socket: cfg.Socket}).Where()
		return func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "unix", socket) }
	}
	u, _ := url.Parse(cfg.BaseURL) // withDefaults checked it.
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	return func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
}

// host is the Host header of the bench's requests.
func (r *run) host() string {
	if r.cfg.BaseURL == "" {
		return "reserved.sock"
	}
	u, _ := url.Parse(r.cfg.BaseURL)
	return u.Host
}

// claim reports whether the client may send one more intent.
func (r *run) claim() bool {
	if r.cfg.Count > 0 {
		return r.issued.Add(1) <= int64(r.cfg.Count)
	}
	return time.Now().Before(r.end)
}

// worker is one bench client.
func (r *run) worker(ctx context.Context, id int) {
	rng := mrand.New(mrand.NewPCG(uint64(id), uint64(time.Now().UnixNano())))
	wc := newWire(r.dial, r.host(), r.cfg.Token, engine.Request{Workshop: r.workshop, Quantity: r.cfg.Quantity})
	var (
		pool     []settled
		lat      = make([]time.Duration, 0, 1024)
		out      = Outcomes{Rejected: map[string]int64{}}
		reserved int
		intents  int64
	)
	send := func(key engine.OperationKey) (client.Result, error) {
		return untilDecided(ctx, r, wc, &lat, &out, func() (client.Result, bool, error) {
			res, err := wc.reserve(ctx, key, r.cfg.Timeout)
			return res, res.Decided, err
		})
	}
	for ctx.Err() == nil && r.claim() {
		intents++
		if len(pool) > 0 && rng.Float64() < r.cfg.ReplayRatio {
			s := pool[rng.IntN(len(pool))]
			res, err := send(s.key)
			switch {
			case err != nil || !res.Decided:
				out.Unsettled++
			case res.Problem != nil:
				out.Rejected[res.Problem.Code]++
			case !res.Replayed || res.Status != s.status || string(res.Body) != string(s.body):
				out.ReplayChanged++
			default:
				out.Replayed++
			}
			continue
		}
		key := newKey(r.cfg.Keys)
		var first []byte
		if rng.Float64() < r.cfg.LostAnswerRatio {
			res, err := send(key) // The answer is "lost": only counted.
			out.LostAnswers++
			if err == nil && res.Answer.Status != "" {
				r.count(&out, res)
				first = res.Body
			}
		}
		res, err := send(key)
		switch {
		case err != nil || !res.Decided:
			out.Unsettled++
			continue
		case res.Problem != nil:
			out.Rejected[res.Problem.Code]++
			continue
		case first != nil && (!res.Replayed || string(res.Body) != string(first)):
			out.ReplayChanged++
		}
		r.count(&out, res)
		if res.Answer.Status == engine.StatusReserved {
			reserved++
		}
		if len(pool) < poolSize {
			pool = append(pool, settled{key, res.Status, res.Body})
		} else {
			pool[rng.IntN(poolSize)] = settled{key, res.Status, res.Body}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.latencies = append(r.latencies, lat...)
	r.reserved += reserved
	r.intents += intents
	r.outcomes.add(out)
}

// settledBatch is a batch with the answers to its items, kept for
// replays.
type settledBatch struct {
	items   []client.BatchItem
	answers []client.Result
}

// batchWorker is one bench client that sends batches of cfg.Batch new
// reservations.
func (r *run) batchWorker(ctx context.Context, id int) {
	rng := mrand.New(mrand.NewPCG(uint64(id), uint64(time.Now().UnixNano())))
	req := engine.Request{Workshop: r.workshop, Quantity: r.cfg.Quantity}
	wc := newWire(r.dial, r.host(), r.cfg.Token, req)
	var (
		pool     []settledBatch
		maxPool  = max(1, poolSize/r.cfg.Batch)
		lat      = make([]time.Duration, 0, 1024)
		out      = Outcomes{Rejected: map[string]int64{}}
		reserved int
		intents  int64
	)
	send := func(items []client.BatchItem) (client.BatchReply, error) {
		return untilDecided(ctx, r, wc, &lat, &out, func() (client.BatchReply, bool, error) {
			reply, err := wc.batch(ctx, items, r.cfg.Timeout)
			return reply, reply.Decided, err
		})
	}
	// refused counts a batch refused as a whole, and reports whether it
	// was; an undecided one counts as unsettled.
	refused := func(reply client.BatchReply, err error) bool {
		switch {
		case err != nil || !reply.Decided:
			out.Unsettled++
		case reply.Problem != nil:
			out.Rejected[reply.Problem.Code]++
		case reply.Refused:
			out.Rejected[engine.CodeBatchRefused]++
		default:
			return false
		}
		return true
	}
	for ctx.Err() == nil && r.claim() {
		intents++
		if len(pool) > 0 && rng.Float64() < r.cfg.ReplayRatio {
			s := pool[rng.IntN(len(pool))]
			reply, err := send(s.items)
			if refused(reply, err) {
				continue
			}
			if !sameAnswers(reply.Items, s.answers) {
				out.ReplayChanged++
				continue
			}
			out.Replayed += int64(len(reply.Items))
			continue
		}
		items := make([]client.BatchItem, r.cfg.Batch)
		for i := range items {
			items[i] = client.BatchItem{Key: newKey(r.cfg.Keys), Request: req}
		}
		var first []client.Result
		if rng.Float64() < r.cfg.LostAnswerRatio {
			reply, err := send(items) // The answer is "lost": only counted.
			out.LostAnswers++
			if err == nil && reply.Decided && reply.Items != nil && !reply.Refused {
				for _, it := range reply.Items {
					if it.Answer.Status != "" {
						r.count(&out, it)
					}
				}
				first = reply.Items
			}
		}
		reply, err := send(items)
		if refused(reply, err) {
			continue
		}
		if first != nil && !sameAnswers(reply.Items, first) {
			out.ReplayChanged++
		}
		keep := true
		for _, it := range reply.Items {
			if it.Problem != nil {
				out.Rejected[it.Problem.Code]++
				keep = false
				continue
			}
			r.count(&out, it)
			if it.Answer.Status == engine.StatusReserved {
				reserved++
			}
		}
		if !keep {
			continue
		}
		if s := (settledBatch{items, reply.Items}); len(pool) < maxPool {
			pool = append(pool, s)
		} else {
			pool[rng.IntN(maxPool)] = s
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.latencies = append(r.latencies, lat...)
	r.reserved += reserved
	r.intents += intents
	r.outcomes.add(out)
}

// untilDecided sends one request after another with send, which reports
// whether its answer decides, until one does, up to maxAttempts unclear
// answers and maxRateLimited answers rate_limited, or until ctx ends:
// every request is counted with its latency in lat, every undecided answer
// in out, and a resend waits for the Retry-After the last answer on wc
// asked for (a rate_limited one at least a second).
func untilDecided[T any](ctx context.Context, r *run, wc *wire, lat *[]time.Duration, out *Outcomes, send func() (T, bool, error)) (T, error) {
	for attempt, limited := 1, 0; ; {
		start := time.Now()
		v, decided, err := send()
		*lat = append(*lat, time.Since(start))
		r.requests.Add(1)
		if r.cfg.afterRequest != nil {
			r.cfg.afterRequest()
		}
		if (err == nil && decided) || ctx.Err() != nil {
			return v, err
		}
		wait := wc.retryAfter
		if err == nil && wc.rateLimited {
			out.RateLimited++
			r.rateLimited.Add(1)
			if limited++; limited == maxRateLimited {
				return v, err
			}
			wait = max(wait, time.Second)
		} else {
			if attempt == maxAttempts {
				return v, err
			}
			attempt++
			out.Unclear++
			r.unclear.Add(1)
		}
		if wait > 0 && r.cfg.wait(ctx, wait) != nil {
			return v, err
		}
	}
}

// sameAnswers reports whether got repeats want item by item: every
// answered item marked as a replay, every refused item refused again, each
// with the first answer's status and byte-identical body.
func sameAnswers(got, want []client.Result) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		// A refused item stored nothing, so it is refused again rather
		// than replayed: only the same problem is asked of it.
		replayed := got[i].Replayed || (got[i].Problem != nil && want[i].Problem != nil)
		if !replayed || got[i].Status != want[i].Status || string(got[i].Body) != string(want[i].Body) {
			return false
		}
	}
	return true
}

// count records a first answer (created or unavailable) or a replay.
func (r *run) count(out *Outcomes, res client.Result) {
	switch {
	case res.Replayed:
		out.Replayed++
	case res.Answer.Status == engine.StatusReserved:
		out.Created++
		r.created.Add(1)
	default:
		out.Unavailable++
	}
}

func (o *Outcomes) add(p Outcomes) {
	o.Created += p.Created
	o.Replayed += p.Replayed
	o.Unavailable += p.Unavailable
	o.LostAnswers += p.LostAnswers
	o.Unclear += p.Unclear
	o.RateLimited += p.RateLimited
	o.Unsettled += p.Unsettled
	o.ReplayChanged += p.ReplayChanged
	for code, n := range p.Rejected {
		if o.Rejected == nil {
			o.Rejected = map[string]int64{}
		}
		o.Rejected[code] += n
	}
}

// progress calls cfg.Progress until the returned function is called.
func (r *run) progress() (stop func()) {
	if r.cfg.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(r.cfg.ProgressInterval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				r.cfg.Progress(Snapshot{Elapsed: time.Since(r.start), Requests: r.requests.Load(), Created: r.created.Load(), Unclear: r.unclear.Load(), RateLimited: r.rateLimited.Load()})
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// summarize fills res from the clients' records and the workshop's counts.
func (r *run) summarize(res *Result, before, after int) {
	res.Seconds = res.Elapsed.Seconds()
	res.Requests = int64(len(r.latencies))
	res.Outcomes = r.outcomes
	o := res.Outcomes
	res.Intents = r.intents
	if res.Seconds > 0 {
		res.RequestsPerSec = float64(res.Requests) / res.Seconds
		res.CreatedPerSec = float64(o.Created) / res.Seconds
	}
	slices.Sort(r.latencies)
	res.Latency = Latency{P50: percentile(r.latencies, 0.50), P95: percentile(r.latencies, 0.95), P99: percentile(r.latencies, 0.99), Max: percentile(r.latencies, 1)}
	reservations := r.reserved * r.cfg.Quantity
	res.Verification = Verification{ReservedBefore: before, ReservedAfter: after, Reservations: reservations}
	res.Verification.OK = after-before == reservations && o.ReplayChanged == 0 && o.Unsettled == 0 && len(o.Rejected) == 0
}

// percentile returns the q-quantile of sorted latencies in milliseconds.
func percentile(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	i = min(max(i, 0), len(sorted)-1)
	return float64(sorted[i].Microseconds()) / 1000
}

// verify explains a failed verification.
func (r *run) verify(res Result) error {
	v, o := res.Verification, res.Outcomes
	if v.OK {
		return nil
	}
	var errs []error
	if got := v.ReservedAfter - v.ReservedBefore; got != v.Reservations {
		errs = append(errs, fmt.Errorf("workshop %s gained %d reserved places, but the clients were told of %d (did something else reserve in it?)", res.Workshop, got, v.Reservations))
	}
	if o.ReplayChanged > 0 {
		errs = append(errs, fmt.Errorf("%d repeated intents got an answer other than their first one", o.ReplayChanged))
	}
	if o.Unsettled > 0 {
		why := fmt.Sprintf("after %d attempts each", maxAttempts)
		if o.RateLimited > 0 {
			why += fmt.Sprintf(" (the daemon's rate limit refused %d requests: run the bench as an admin, who is not limited)", o.RateLimited)
		}
		errs = append(errs, fmt.Errorf("%d intents got no authoritative answer %s", o.Unsettled, why))
	}
	for code, n := range o.Rejected {
		errs = append(errs, fmt.Errorf("%d intents were refused with %s", n, code))
	}
	return fmt.Errorf("%w: %w", ErrVerification, errors.Join(errs...))
}

// newKey makes an operation key of the version keys names ("v7" or "v4").
func newKey(keys string) engine.OperationKey {
	if keys == "v4" {
		return engine.OperationKey(uuid.NewString())
	}
	return engine.OperationKey(uuid.Must(uuid.NewV7()).String())
}
