package delivery_test

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/reserve/reserve/internal/delivery"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/engine/memstore"
)

var admin = engine.Principal{Actor: "root", Admin: true}

// waitTimeout bounds every wait; it only ends a hung test clearly.
const waitTimeout = 20 * time.Second

// eventually polls cond until it holds, failing after waitTimeout.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, waitTimeout)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// clock is the engine's and the dispatcher's clock, moved by the test.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
}

func (c *clock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// hit is one request a receiver got.
type hit struct {
	header http.Header
	body   []byte
}

func (h hit) id() string { return h.header.Get(delivery.HeaderWebhookID) }

// receiver is a webhook endpoint for the tests. answer writes the answer
// to its n-th request (from 0); a request it does not answer hangs until
// the test ends.
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	hits   []hit
	answer func(w http.ResponseWriter, h hit, n int) bool
	end    chan struct{}
}

func newReceiver(t *testing.T, answer func(w http.ResponseWriter, h hit, n int) bool) *receiver {
	r := &receiver{answer: answer, end: make(chan struct{})}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		h := hit{header: req.Header.Clone(), body: body}
		r.mu.Lock()
		n := len(r.hits)
		r.hits = append(r.hits, h)
		r.mu.Unlock()
		if !r.answer(w, h, n) {
			<-r.end
		}
	}))
	t.Cleanup(r.srv.Close)
	t.Cleanup(func() { close(r.end) }) // Runs first: releases the hanging requests.
	return r
}

func (r *receiver) got() []hit {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hit(nil), r.hits...)
}

// status answers every request with code.
func status(code int) func(http.ResponseWriter, hit, int) bool {
	return func(w http.ResponseWriter, _ hit, _ int) bool {
		w.WriteHeader(code)
		return true
	}
}

// fixture is an engine on a memory store with a workshop, the clock of
// both, and a dispatcher it runs until the test ends.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	eng   *engine.Engine
	clock *clock
	d     *delivery.Dispatcher
	lease time.Duration
	store *countingStore
}

// countingStore counts the transactions begun on its store.
type countingStore struct {
	engine.Store
	updates, views atomic.Int64
}

func (s *countingStore) Update(ctx context.Context, fn func(engine.Tx) error) error {
	s.updates.Add(1)
	return s.Store.Update(ctx, fn)
}

func (s *countingStore) View(ctx context.Context, fn func(engine.Tx) error) error {
	s.views.Add(1)
	return s.Store.View(ctx, fn)
}

func newFixture(t *testing.T, cfg delivery.Config) *fixture {
	t.Helper()
	// Microseconds, the precision of the claims: a delivery of an event
	// made now is due at once.
	clk := &clock{now: time.Now().UTC().Truncate(time.Microsecond)}
	waker := delivery.NewWaker()
	counting := &countingStore{Store: memstore.New(memstore.Options{})}
	eng := engine.New(delivery.WakingStore(counting, waker), engine.WithClock(clk.Now))
	f := &fixture{t: t, ctx: context.Background(), eng: eng, clock: clk, store: counting}
	if _, _, err := eng.PutWorkshop(f.ctx, "kiln", engine.WorkshopSpec{Capacity: 10000, MaxQuantity: 5}, nil); err != nil {
		t.Fatal(err)
	}
	cfg.Engine, cfg.Now, cfg.Waker = eng, clk.Now, waker
	channels := map[string]delivery.Channel{engine.ChannelWebhook: delivery.NewWebhook(nil)}
	maps.Copy(channels, cfg.Channels)
	cfg.Channels = channels
	if cfg.Poll == 0 {
		cfg.Poll = 5 * time.Millisecond
	}
	if cfg.Lease == 0 {
		cfg.Lease = max(delivery.DefaultLease, cfg.Timeout+time.Minute)
	}
	f.lease = cfg.Lease
	d, err := delivery.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.d = d
	return f
}

// run runs the dispatcher until the test ends, or until stop, which
// returns once Run has returned.
func (f *fixture) run() (stop func()) {
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.d.Run(ctx)
	}()
	stop = func() {
		cancel()
		<-done
	}
	f.t.Cleanup(stop)
	return stop
}

func (f *fixture) endpoint(r *receiver, path string) engine.WebhookEndpoint {
	f.t.Helper()
	w, err := f.eng.AddWebhook(f.ctx, admin, r.srv.URL+path, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	return w
}

// reserve reserves quantity places for actor and returns the reservation
// id.
func (f *fixture) reserve(actor string, quantity int) string {
	f.t.Helper()
	o, err := f.eng.Reserve(f.ctx, actor, engine.OperationKey(uuid.NewString()), engine.Request{Workshop: "kiln", Quantity: quantity})
	if err != nil || o.Answer.Status != engine.StatusReserved {
		f.t.Fatalf("reserve: %+v, %v", o, err)
	}
	return o.Answer.ReservationID
}

// deliveries returns the deliveries in state.
func (f *fixture) deliveries(state engine.DeliveryState) []engine.Delivery {
	f.t.Helper()
	page, err := f.eng.Deliveries(f.ctx, admin, engine.DeliveryFilter{State: state, Limit: engine.MaxDeliveryPage})
	if err != nil {
		f.t.Fatal(err)
	}
	return page.Deliveries
}

// only returns the one delivery in state, once there is one.
func (f *fixture) only(state engine.DeliveryState) engine.Delivery {
	f.t.Helper()
	var ds []engine.Delivery
	eventually(f.t, "one delivery "+string(state), func() bool {
		ds = f.deliveries(state)
		return len(ds) == 1
	})
	return ds[0]
}

// pendingAfter returns the one pending delivery once its attempts number
// attempts and the last one was recorded: it is no longer claimed (due
// when its claim runs out).
func (f *fixture) pendingAfter(attempts int) engine.Delivery {
	f.t.Helper()
	var d engine.Delivery
	eventually(f.t, "the attempt recorded", func() bool {
		ds := f.deliveries(engine.DeliveryPending)
		if len(ds) != 1 {
			return false
		}
		d = ds[0]
		return d.Attempts == attempts && !d.NextAttemptAt.Equal(d.LastAttemptAt.Add(f.lease))
	})
	return d
}

func TestSignatureVerifiesWithTheReferenceLibrary(t *testing.T) {
	f := newFixture(t, delivery.Config{})
	r := newReceiver(t, status(http.StatusNoContent))
	w := f.endpoint(r, "/hook")
	f.run()
	res := f.reserve("alice", 2)
	f.only(engine.DeliveryDelivered)
	hits := r.got()
	if len(hits) != 1 {
		t.Fatalf("%d requests, want 1", len(hits))
	}
	h := hits[0]
	wh, err := standardwebhooks.NewWebhook(w.Secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(h.body, h.header); err != nil {
		t.Fatalf("the reference library does not verify the delivery: %v\n%v\n%s", err, h.header, h.body)
	}
	other, _ := standardwebhooks.NewWebhook("whsec_" + strings.Repeat("A", 44))
	if err := other.Verify(h.body, h.header); err == nil {
		t.Fatal("another secret verifies the delivery too")
	}
	if ct, ua := h.header.Get("Content-Type"), h.header.Get("User-Agent"); ct != "application/json" || !strings.HasPrefix(ua, "reserved/") {
		t.Errorf("Content-Type %q, User-Agent %q", ct, ua)
	}
	var body struct {
		Type      string               `json:"type"`
		Timestamp time.Time            `json:"timestamp"`
		Data      delivery.WebhookData `json:"data"`
	}
	if err := json.Unmarshal(h.body, &body); err != nil {
		t.Fatal(err)
	}
	want := delivery.WebhookData{ReservationID: res, Workshop: "kiln", Quantity: 2, Actor: "alice"}
	if body.Type != engine.WebhookReservationCreated || body.Data.Operation == "" || body.Timestamp.IsZero() {
		t.Errorf("body %s", h.body)
	}
	body.Data.Operation = ""
	if body.Data != want {
		t.Errorf("data %+v, want %+v", body.Data, want)
	}
}

func TestRetrySendsTheSameIDAndBody(t *testing.T) {
	f := newFixture(t, delivery.Config{})
	r := newReceiver(t, func(w http.ResponseWriter, _ hit, n int) bool {
		if n == 0 {
			http.Error(w, "not now", http.StatusServiceUnavailable)
		}
		return true
	})
	f.endpoint(r, "/hook")
	f.run()
	f.reserve("alice", 1)
	d := f.pendingAfter(1)
	if d.LastStatus != http.StatusServiceUnavailable || !strings.Contains(d.LastError, "503") || !strings.Contains(d.LastError, "not now") {
		t.Fatalf("after a 503: %+v", d)
	}
	if wait := d.NextAttemptAt.Sub(d.LastAttemptAt); wait < delivery.DefaultMinBackoff || wait > delivery.DefaultMinBackoff*5/4 {
		t.Errorf("first retry after %v, want %v plus up to a quarter", wait, delivery.DefaultMinBackoff)
	}
	f.clock.Set(d.NextAttemptAt)
	done := f.only(engine.DeliveryDelivered)
	hits := r.got()
	if len(hits) != 2 || done.Attempts != 2 || done.LastStatus != http.StatusOK || done.LastError != "" {
		t.Fatalf("%d requests, delivery %+v", len(hits), done)
	}
	if hits[0].id() != hits[1].id() || hits[0].id() != done.EventID || string(hits[0].body) != string(hits[1].body) {
		t.Errorf("the retry differs: %s %s / %s %s", hits[0].id(), hits[0].body, hits[1].id(), hits[1].body)
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	for _, tc := range []struct {
		name, header string
		want         time.Duration
	}{
		{"seconds", "120", 120 * time.Second},
		{"date", time.Now().Add(10 * time.Minute).UTC().Format(http.TimeFormat), 10 * time.Minute},
		{"beyond the cap", "86400", delivery.DefaultMaxBackoff},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, delivery.Config{})
			r := newReceiver(t, func(w http.ResponseWriter, _ hit, _ int) bool {
				w.Header().Set("Retry-After", tc.header)
				w.WriteHeader(http.StatusTooManyRequests)
				return true
			})
			f.endpoint(r, "/hook")
			f.run()
			f.reserve("alice", 1)
			d := f.pendingAfter(1)
			// An HTTP date has whole seconds, and is read a moment later.
			if wait := d.NextAttemptAt.Sub(d.LastAttemptAt); wait < tc.want-2*time.Second || wait > tc.want {
				t.Errorf("next attempt after %v, want %v", wait, tc.want)
			}
		})
	}
}

func TestRefusalsFailAtOnce(t *testing.T) {
	for _, code := range []int{http.StatusBadRequest, http.StatusGone, http.StatusFound} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			f := newFixture(t, delivery.Config{})
			r := newReceiver(t, func(w http.ResponseWriter, _ hit, _ int) bool {
				if code == http.StatusFound {
					w.Header().Set("Location", "/elsewhere")
				}
				http.Error(w, "no such thing", code)
				return true
			})
			f.endpoint(r, "/hook")
			f.run()
			f.reserve("alice", 1)
			d := f.only(engine.DeliveryFailed)
			if d.Attempts != 1 || d.LastStatus != code || !strings.Contains(d.LastError, "answered") {
				t.Errorf("delivery %+v", d)
			}
			if n := len(r.got()); n != 1 {
				t.Errorf("%d requests, want 1 (a redirect is not followed)", n)
			}
		})
	}
}

func TestRemovedEndpointFailsAtOnce(t *testing.T) {
	f := newFixture(t, delivery.Config{})
	r := newReceiver(t, status(http.StatusInternalServerError))
	w := f.endpoint(r, "/hook")
	f.run()
	f.reserve("alice", 1)
	d := f.pendingAfter(1)
	if err := f.eng.RemoveWebhook(f.ctx, admin, w.ID); err != nil {
		t.Fatal(err)
	}
	f.clock.Set(d.NextAttemptAt)
	d = f.only(engine.DeliveryFailed)
	if d.Attempts != 2 || !strings.Contains(d.LastError, w.ID+" was removed") || d.LastStatus != http.StatusInternalServerError {
		t.Errorf("delivery %+v", d)
	}
	if n := len(r.got()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestGivesUpAfterMaxAge(t *testing.T) {
	f := newFixture(t, delivery.Config{MinBackoff: 10 * time.Minute, MaxAge: time.Hour})
	r := newReceiver(t, status(http.StatusBadGateway))
	f.endpoint(r, "/hook")
	f.run()
	f.reserve("alice", 1)
	// Attempts at 0, 10m and 30m (each wait up to a quarter longer); the
	// next would come at 70m or later, beyond the hour.
	for attempt := 1; attempt < 3; attempt++ {
		d := f.pendingAfter(attempt)
		f.clock.Set(d.NextAttemptAt)
	}
	d := f.only(engine.DeliveryFailed)
	if d.Attempts != 3 || !strings.HasPrefix(d.LastError, "gave up after 3 attempts over ") || !strings.Contains(d.LastError, "502") {
		t.Errorf("delivery %+v", d)
	}
	if n := len(r.got()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

// TestDefaultMaxAgeIs72Hours: without a MaxAge, a delivery that keeps
// failing is retried for 72 hours from its event, as the webhook docs
// and --delivery-max-age's default promise: an attempt whose retry
// would come just before that is retried, one whose retry would come
// just after it gives up.
func TestDefaultMaxAgeIs72Hours(t *testing.T) {
	if delivery.DefaultMaxAge != 72*time.Hour {
		t.Errorf("DefaultMaxAge = %v, want 72h", delivery.DefaultMaxAge)
	}
	// Every wait is 1 s plus up to a quarter second.
	f := newFixture(t, delivery.Config{MinBackoff: time.Second, MaxBackoff: time.Second})
	r := newReceiver(t, status(http.StatusServiceUnavailable))
	f.endpoint(r, "/hook")
	f.run()
	f.reserve("alice", 1)
	since := f.pendingAfter(1).Since
	horizon := since.Add(72 * time.Hour)
	// At 72 h less 2 s the retry comes before 72 h - 0.75 s: still on.
	f.clock.Set(horizon.Add(-2 * time.Second))
	d := f.pendingAfter(2)
	if d.NextAttemptAt.After(horizon) {
		t.Fatalf("the retry at %v is after the horizon %v", d.NextAttemptAt, horizon)
	}
	// At 72 h less half a second it would come after 72 h: it gives up.
	f.clock.Set(horizon.Add(-time.Second / 2))
	d = f.only(engine.DeliveryFailed)
	if d.Attempts != 3 || !strings.HasPrefix(d.LastError, "gave up after 3 attempts over 72h0m0s") {
		t.Errorf("delivery %+v, want it given up after 3 attempts over 72h", d)
	}
}

// TestFailingEventDelaysNoOther makes the first event's attempt hang and
// the second's fail, and proves that a third, on the same endpoint, is
// delivered meanwhile, without the clock moving.
func TestFailingEventDelaysNoOther(t *testing.T) {
	f := newFixture(t, delivery.Config{Timeout: time.Hour})
	var hanging, failing string
	r := newReceiver(t, func(w http.ResponseWriter, h hit, _ int) bool {
		switch {
		case strings.Contains(string(h.body), hanging):
			return false
		case strings.Contains(string(h.body), failing):
			w.WriteHeader(http.StatusInternalServerError)
		}
		return true
	})
	f.endpoint(r, "/hook")
	hanging, failing = f.reserve("alice", 1), f.reserve("bob", 1)
	healthy := f.reserve("carol", 1)
	f.run()
	f.only(engine.DeliveryDelivered)
	if !slices.ContainsFunc(r.got(), func(h hit) bool { return strings.Contains(string(h.body), healthy) }) {
		t.Errorf("the event of %s was not the one delivered", healthy)
	}
	eventually(t, "the failed attempt recorded", func() bool {
		for _, d := range f.deliveries(engine.DeliveryPending) {
			if d.LastStatus == http.StatusInternalServerError {
				return true
			}
		}
		return false
	})
}

// TestHangingEndpointDelaysNoOther sends many events to an endpoint that
// never answers and to one that does: the second gets every one while
// the first holds its few slots, and the deliveries waiting for them are
// deferred before their claims run out.
func TestHangingEndpointDelaysNoOther(t *testing.T) {
	const events = 20
	cfg := delivery.Config{PerDestination: 2, MaxWaiting: events, Batch: 4, Timeout: time.Minute, Lease: 2 * time.Minute}
	f := newFixture(t, cfg)
	hang := newReceiver(t, func(http.ResponseWriter, hit, int) bool { return false })
	healthy := newReceiver(t, status(http.StatusOK))
	f.endpoint(hang, "/hang")
	f.endpoint(healthy, "/ok")
	for i := range events {
		f.reserve("alice", 1+i%2)
	}
	f.run()
	eventually(t, "every event at the healthy endpoint", func() bool { return len(healthy.got()) == events })
	if n := len(hang.got()); n != cfg.PerDestination {
		t.Errorf("the hanging endpoint got %d requests, want %d in flight", n, cfg.PerDestination)
	}
	// An attempt started now could end after the claims: they are
	// deferred, while they last.
	f.clock.Advance(cfg.Lease - cfg.Timeout)
	eventually(t, "the waiting deliveries deferred", func() bool {
		n := 0
		for _, d := range f.deliveries(engine.DeliveryPending) {
			if strings.HasPrefix(d.LastError, "not sent: waited for one of the 2 attempts in flight to its destination until its claim ran out") {
				n++
			}
		}
		return n == events-cfg.PerDestination
	})
}

// TestFullLaneDefers proves that the deliveries claimed for an endpoint
// whose slots and waiting places are all taken are deferred at once.
func TestFullLaneDefers(t *testing.T) {
	const events = 20
	cfg := delivery.Config{PerDestination: 2, MaxWaiting: 3, Batch: 4, Timeout: time.Minute}
	f := newFixture(t, cfg)
	hang := newReceiver(t, func(http.ResponseWriter, hit, int) bool { return false })
	f.endpoint(hang, "/hang")
	for range events {
		f.reserve("alice", 1)
	}
	f.run()
	eventually(t, "the requests in flight", func() bool { return len(hang.got()) == cfg.PerDestination })
	eventually(t, "the deliveries beyond the lane deferred", func() bool {
		n := 0
		for _, d := range f.deliveries(engine.DeliveryPending) {
			if strings.HasPrefix(d.LastError, "not sent: its destination had 2 attempts in flight and 3 more waiting") {
				n++
			}
		}
		return n == events-cfg.PerDestination-cfg.MaxWaiting
	})
}

// TestWakesOnNewEvents polls once an hour: the second event goes out only
// because the store wakes the dispatcher when it is committed.
func TestWakesOnNewEvents(t *testing.T) {
	f := newFixture(t, delivery.Config{Poll: time.Hour})
	r := newReceiver(t, status(http.StatusOK))
	f.endpoint(r, "/hook")
	f.reserve("alice", 1)
	f.run()
	eventually(t, "the first event", func() bool { return len(r.got()) == 1 })
	f.reserve("bob", 1)
	eventually(t, "the second event", func() bool { return len(r.got()) == 2 })
}

// TestStopAbandonsAttemptsInFlight stops the dispatcher while an attempt
// hangs: Run returns, and the attempt is not recorded, so its claim runs
// out and it is made again.
func TestStopAbandonsAttemptsInFlight(t *testing.T) {
	f := newFixture(t, delivery.Config{Timeout: time.Hour})
	r := newReceiver(t, func(http.ResponseWriter, hit, int) bool { return false })
	f.endpoint(r, "/hang")
	f.reserve("alice", 1)
	stop := f.run()
	eventually(t, "the attempt under way", func() bool { return len(r.got()) == 1 })
	stop()
	d := f.only(engine.DeliveryPending)
	if d.Attempts != 1 || d.LastError != "" || !d.NextAttemptAt.Equal(d.LastAttemptAt.Add(f.lease)) {
		t.Errorf("delivery %+v, want it claimed and nothing recorded", d)
	}
}

// TestMetrics counts an attempt of each result and reads the gauges.
func TestMetrics(t *testing.T) {
	f := newFixture(t, delivery.Config{StatsEvery: time.Millisecond})
	retried := newReceiver(t, func(w http.ResponseWriter, _ hit, n int) bool {
		if n == 0 {
			w.WriteHeader(http.StatusBadGateway)
		}
		return true
	})
	gone := newReceiver(t, status(http.StatusGone))
	f.endpoint(retried, "/retried")
	f.endpoint(gone, "/gone")
	reg := prometheus.NewRegistry()
	reg.MustRegister(f.d.Collectors()...)
	f.reserve("alice", 1)
	f.run()
	d := f.pendingAfter(1)
	f.clock.Advance(2 * time.Second)
	eventually(t, "the gauges counted", func() bool {
		return gathered(t, reg, "reserved_deliveries_pending") == 1 && gathered(t, reg, "reserved_deliveries_failed") == 1 &&
			gathered(t, reg, "reserved_delivery_oldest_pending_age_seconds") == 2
	})
	f.clock.Set(d.NextAttemptAt)
	f.only(engine.DeliveryDelivered)
	eventually(t, "the gauges counted again", func() bool {
		return gathered(t, reg, "reserved_deliveries_pending") == 0 && gathered(t, reg, "reserved_delivery_oldest_pending_age_seconds") == 0
	})
	for result, want := range map[string]float64{"delivered": 1, "retry": 1, "failed": 1, "gave_up": 0, "deferred": 0} {
		if got := gathered(t, reg, "reserved_delivery_attempts_total", "channel", "webhook", "result", result); got != want {
			t.Errorf("attempts with result %s: %v, want %v", result, got, want)
		}
	}
}

// gathered returns the value of the sample of metric name with the
// label pairs labels, 0 when there is none.
func gathered(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == labels[i] && l.GetValue() == labels[i+1] }) {
					continue next
				}
			}
			switch {
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// TestIdleDispatcherWritesNothing proves that a dispatcher with nothing
// to route or claim only reads the store.
func TestIdleDispatcherWritesNothing(t *testing.T) {
	f := newFixture(t, delivery.Config{})
	r := newReceiver(t, status(http.StatusOK))
	f.endpoint(r, "/hook")
	f.reserve("alice", 1)
	f.run()
	f.only(engine.DeliveryDelivered)
	// Recording the attempt wakes the dispatcher for one more pass, which
	// may still be under way: the count starts once it has looked for
	// work without finding any.
	views := f.store.views.Load()
	eventually(t, "the first looks for work", func() bool { return f.store.views.Load() >= views+10 })
	writesNothing(t, f, func() {}, "the idle dispatcher")
}

// writesNothing runs start and then fails t, naming who, if the store
// saw a write from then until twenty more reads (looks for work) were
// made.
func writesNothing(t *testing.T, f *fixture, start func(), who string) {
	t.Helper()
	updates, views := f.store.updates.Load(), f.store.views.Load()
	start()
	eventually(t, "twenty looks for work", func() bool { return f.store.views.Load() >= views+20 })
	if n := f.store.updates.Load() - updates; n != 0 {
		t.Errorf("%s wrote %d times", who, n)
	}
}

// TestDispatcherStartedIdleWritesNothing proves that a dispatcher started
// on a store with nothing to route or claim writes nothing either: its
// first look at the store reads, like every later one. A commit that
// changes nothing still writes a new meta page to a bbolt file.
func TestDispatcherStartedIdleWritesNothing(t *testing.T) {
	f := newFixture(t, delivery.Config{})
	r := newReceiver(t, status(http.StatusOK))
	f.endpoint(r, "/hook")
	writesNothing(t, f, func() { f.run() }, "the dispatcher started with nothing to do")
}

// mailbox is a mail channel that takes every mail it is handed.
type mailbox struct {
	mu   sync.Mutex
	jobs []engine.DeliveryJob
}

func (m *mailbox) Send(_ context.Context, job engine.DeliveryJob) delivery.Result {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.jobs = append(m.jobs, job)
	return delivery.Result{Delivered: true}
}

// got returns the channel and hold of every mail handed to m, in order.
func (m *mailbox) got() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var got []string
	for _, j := range m.jobs {
		got = append(got, j.Delivery.Channel+" "+j.Event.HoldID)
	}
	return got
}

// TestRemindersGoOutByMail: with a mail channel and HoldReminder, a new
// hold's event is routed to its mail and a reminder, which waits as
// scheduled until the lead before the deadline and then goes out through
// the mail channel, counted under channel reminder; the reminder of a
// hold confirmed before then is not sent.
func TestRemindersGoOutByMail(t *testing.T) {
	box := &mailbox{}
	f := newFixture(t, delivery.Config{Channels: map[string]delivery.Channel{engine.ChannelMail: box}, HoldReminder: 10 * time.Minute, StatsEvery: time.Millisecond})
	reg := prometheus.NewRegistry()
	reg.MustRegister(f.d.Collectors()...)
	if err := f.eng.KeepVerifiedEmail(f.ctx, "alice", "alice@example.org"); err != nil {
		t.Fatal(err)
	}
	var holds []engine.Answer
	for range 2 {
		out, err := f.eng.Hold(f.ctx, "alice", engine.OperationKey(uuid.NewString()), engine.HoldRequest{Workshop: "kiln", Quantity: 1, TTLSeconds: 3600})
		if err != nil || out.Answer.Status != engine.StatusHeld {
			t.Fatalf("hold: %+v, %v", out, err)
		}
		holds = append(holds, out.Answer)
	}
	open, confirmed := holds[0], holds[1]
	f.run()
	eventually(t, "the holds' mails sent and the reminders counted", func() bool {
		return len(box.got()) == 2 && gathered(t, reg, "reserved_deliveries_scheduled") == 2 && gathered(t, reg, "reserved_deliveries_pending") == 0
	})
	if _, err := f.eng.Confirm(f.ctx, engine.Principal{Actor: "alice"}, engine.OperationKey(uuid.NewString()), confirmed.HoldID); err != nil {
		t.Fatal(err)
	}
	f.clock.Set(open.ExpiresAt.Add(-10 * time.Minute))
	eventually(t, "the reminders due", func() bool {
		return len(box.got()) == 4 && len(f.deliveries(engine.DeliverySkipped)) == 1
	})
	// The holds' mails, the confirmation's (of a reservation: no hold),
	// and the open hold's reminder, in any order.
	got := slices.Sorted(slices.Values(box.got()))
	want := []string{engine.ChannelMail + " ", engine.ChannelMail + " " + confirmed.HoldID, engine.ChannelMail + " " + open.HoldID, engine.ChannelReminder + " " + open.HoldID}
	if slices.Sort(want); !slices.Equal(got, want) {
		t.Fatalf("mails %q, want %q", got, want)
	}
	if skipped := f.deliveries(engine.DeliverySkipped); len(skipped) != 1 || !strings.Contains(skipped[0].LastError, "confirmed") {
		t.Fatalf("skipped deliveries %+v, want the confirmed hold's reminder", skipped)
	}
	eventually(t, "the gauges counted again", func() bool {
		return gathered(t, reg, "reserved_deliveries_scheduled") == 0 &&
			gathered(t, reg, "reserved_delivery_attempts_total", "channel", engine.ChannelReminder, "result", "delivered") == 1
	})
}

// TestDispatcherStartedClaimsBesideUndatedDelivery proves that a pending
// delivery with no time for its next attempt (which Check reports, and
// which a claim takes as due at once) hides no due delivery from a
// dispatcher started on the store: it looks, finds both due, and sends
// both, although nothing wakes it.
func TestDispatcherStartedClaimsBesideUndatedDelivery(t *testing.T) {
	f := newFixture(t, delivery.Config{})
	r := newReceiver(t, status(http.StatusOK))
	f.endpoint(r, "/hook")
	f.reserve("alice", 1)
	f.reserve("bob", 1)
	if _, _, err := f.eng.RouteEvents(f.ctx, 10, engine.RouteOptions{}); err != nil {
		t.Fatal(err)
	}
	pending := f.deliveries(engine.DeliveryPending)
	if len(pending) != 2 {
		t.Fatalf("%d deliveries pending, want 2", len(pending))
	}
	undated := pending[1]
	undated.NextAttemptAt = time.Time{}
	if err := f.store.Update(f.ctx, func(tx engine.Tx) error { return tx.PutDelivery(undated) }); err != nil {
		t.Fatal(err)
	}
	// A dispatcher of its own, as a daemon started on the store has: the
	// writes above woke the fixture's, and nothing wakes this one.
	d, err := delivery.New(delivery.Config{Engine: f.eng, Channels: map[string]delivery.Channel{engine.ChannelWebhook: delivery.NewWebhook(nil)},
		Now: f.clock.Now, Poll: 5 * time.Millisecond, Lease: f.lease})
	if err != nil {
		t.Fatal(err)
	}
	f.d = d
	f.run()
	eventually(t, "both deliveries delivered", func() bool { return len(f.deliveries(engine.DeliveryDelivered)) == 2 })
}
