package bench_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/bench"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server"
	"github.com/reserve/reserve/internal/server/servertest"
)

// TestRunOverTCP runs the bench with an admin token against a real server:
// it creates its own workshop, mixes replays and lost-answer retries, and
// every count of the result agrees with the others and with the store.
func TestRunOverTCP(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	res, err := bench.Run(context.Background(), bench.Config{
		BaseURL: h.URL, Token: h.Admin, Clients: 8, Count: 400,
		ReplayRatio: 0.3, LostAnswerRatio: 0.2,
	})
	if err != nil {
		t.Fatal(err)
	}
	o, v := res.Outcomes, res.Verification
	if res.Transport != "tcp" || !res.CreatedWorkshop || !strings.HasPrefix(res.Workshop, "bench-") {
		t.Errorf("result = %+v", res)
	}
	if res.Intents != 400 || o.Created == 0 || o.Replayed == 0 || o.LostAnswers == 0 {
		t.Errorf("intents %d, outcomes %+v: want 400 intents with creations, replays and lost answers", res.Intents, o)
	}
	// Every intent sends one request, a lost answer one more.
	if res.Requests != res.Intents+o.LostAnswers+o.Unclear {
		t.Errorf("%d requests for %d intents, %d lost answers, %d unclear", res.Requests, res.Intents, o.LostAnswers, o.Unclear)
	}
	if !v.OK || v.ReservedBefore != 0 || v.ReservedAfter != int(o.Created) || v.Reservations != int(o.Created) {
		t.Errorf("verification = %+v, created %d", v, o.Created)
	}
	if res.Latency.P50 <= 0 || res.Latency.P50 > res.Latency.P95 || res.Latency.P95 > res.Latency.P99 || res.Latency.P99 > res.Latency.Max {
		t.Errorf("latency = %+v", res.Latency)
	}
	w, err := h.Engine.Workshop(context.Background(), res.Workshop)
	if err != nil || w.Reserved != int(o.Created) || !w.Hidden || !res.HiddenWorkshop {
		t.Errorf("workshop %s = %+v, %v; want %d reserved, hidden", res.Workshop, w, err, o.Created)
	}
	h.MustCheckClean(t)
}

// TestCreatedWorkshopListing: the workshop a run creates is hidden from
// the workshop list, and listed with Keep.
func TestCreatedWorkshopListing(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	ctx := context.Background()
	for _, keep := range []bool{false, true} {
		res, err := bench.Run(ctx, bench.Config{BaseURL: h.URL, Token: h.Admin, Clients: 2, Count: 10, Keep: keep})
		if err != nil {
			t.Fatal(err)
		}
		listed := false
		ws, err := h.Engine.Workshops(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range ws {
			listed = listed || w.ID == res.Workshop
		}
		if listed != keep || res.HiddenWorkshop == keep {
			t.Errorf("keep %t: workshop %s listed %t, result says hidden %t", keep, res.Workshop, listed, res.HiddenWorkshop)
		}
	}
}

// TestRunOnSocketNamedWorkshop fills a small named workshop over the
// socket: the first intents reserve, the rest are unavailable, and the
// count still verifies.
func TestRunOnSocketNamedWorkshop(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	ctx := context.Background()
	if _, _, err := h.Engine.PutWorkshop(ctx, "small", engine.WorkshopSpec{Capacity: 30, MaxQuantity: 2}, nil); err != nil {
		t.Fatal(err)
	}
	res, err := bench.Run(ctx, bench.Config{Socket: h.Socket, Clients: 4, Count: 40, Workshop: "small", Quantity: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Transport != "socket" || res.CreatedWorkshop || res.Outcomes.Created != 15 || res.Outcomes.Unavailable != 25 {
		t.Errorf("result = %+v, want 15 created and 25 unavailable on the socket", res)
	}
	if v := res.Verification; !v.OK || v.ReservedAfter != 30 || v.Reservations != 30 {
		t.Errorf("verification = %+v", v)
	}
	h.MustCheckClean(t)
}

// TestRunFailsWhenTheCountDiffers reserves behind the bench's back during
// the run: the verification must notice and fail.
func TestRunFailsWhenTheCountDiffers(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	ctx := context.Background()
	if _, _, err := h.Engine.PutWorkshop(ctx, "shared", engine.WorkshopSpec{Capacity: 1000}, nil); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	cfg := bench.WithAfterRequest(bench.Config{Socket: h.Socket, Clients: 2, Count: 20, Workshop: "shared"}, func() {
		once.Do(func() {
			if _, err := h.Engine.Reserve(ctx, "intruder", engine.OperationKey(uuid.NewString()), engine.Request{Workshop: "shared", Quantity: 1}); err != nil {
				t.Error(err)
			}
		})
	})
	res, err := bench.Run(ctx, cfg)
	if !errors.Is(err, bench.ErrVerification) || !strings.Contains(err.Error(), "gained 21 reserved places, but the clients were told of 20") {
		t.Fatalf("Run = %v", err)
	}
	if res.Verification.OK || res.Workshop != "shared" {
		t.Errorf("result = %+v", res)
	}
}

func TestRunRefusals(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	ctx := context.Background()
	_, err := bench.Run(ctx, bench.Config{BaseURL: h.URL, Token: h.Alice, Count: 1})
	if err == nil || !strings.Contains(err.Error(), "needs an admin") || engine.ErrorCode(err) != engine.CodeForbidden {
		t.Errorf("non-admin without a workshop: %v", err)
	}
	_, err = bench.Run(ctx, bench.Config{BaseURL: h.URL, Token: h.Alice, Count: 1, Workshop: "no-such-workshop"})
	if engine.ErrorCode(err) != engine.CodeUnknownWorkshop {
		t.Errorf("unknown workshop: %v", err)
	}
	for _, cfg := range []bench.Config{
		{Clients: -1}, {Count: -1}, {ReplayRatio: 1.5}, {LostAnswerRatio: -0.1}, {Workshop: "Bad"}, {Quantity: -2}, {Batch: -1}, {Batch: engine.MaxBatchItems + 1},
	} {
		if _, err := bench.Run(ctx, cfg); !errors.Is(err, bench.ErrConfig) {
			t.Errorf("Run(%+v) = %v, want ErrConfig", cfg, err)
		}
	}
	if reservations, receipts := h.Counts(t); reservations != 0 || receipts != 0 {
		t.Errorf("refused runs stored %d reservations and %d receipts", reservations, receipts)
	}
}

// TestRunRetriesStoreUnavailable puts a proxy in front of a real server that
// answers the first reservations 503 store_unavailable with Retry-After, as
// a daemon does while its database restarts: the bench must take them as
// unclear, wait the Retry-After, resend the same key and verify, never count
// them as refusals.
func TestRunRetriesStoreUnavailable(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	ctx := context.Background()
	if _, _, err := h.Engine.PutWorkshop(ctx, "outage", engine.WorkshopSpec{Capacity: 100}, nil); err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(h.URL)
	if err != nil {
		t.Fatal(err)
	}
	const outage = 3 // Answers 503 to this many reservation requests.
	var mu sync.Mutex
	unavailable := 0
	keys := map[string]int{}
	rp := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == api.PathReservations {
			mu.Lock()
			keys[r.Header.Get(api.HeaderIdempotencyKey)]++
			down := unavailable < outage
			if down {
				unavailable++
			}
			mu.Unlock()
			if down {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", api.MediaProblem)
				w.Header().Set("Retry-After", "2")
				w.WriteHeader(http.StatusServiceUnavailable)
				json.NewEncoder(w).Encode(api.Problem{Type: "about:blank", Title: "Service Unavailable", Status: 503, Code: engine.CodeStoreUnavailable, Detail: "the store is unavailable"})
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	defer proxy.Close()

	var waits []time.Duration
	cfg := bench.WithWait(bench.Config{BaseURL: proxy.URL, Token: h.Admin, Clients: 1, Count: 5, Workshop: "outage"},
		func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			waits = append(waits, d)
			mu.Unlock()
			return nil
		})
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run = %v (outcomes %+v)", err, res.Outcomes)
	}
	o := res.Outcomes
	if o.Created != 5 || o.Unclear != outage || len(o.Rejected) != 0 || o.Unsettled != 0 || !res.Verification.OK {
		t.Errorf("outcomes %+v, verification %+v: want 5 created, %d unclear, nothing refused", o, res.Verification, outage)
	}
	if len(waits) != outage || waits[0] != 2*time.Second {
		t.Errorf("waits %v: want %d waits of the answers' Retry-After of 2s", waits, outage)
	}
	if len(keys) != 5 {
		t.Errorf("%d keys sent for 5 intents: a 503 must be resent with the same key", len(keys))
	}
	h.MustCheckClean(t)
}

// TestRunRateLimited runs the bench as an actor that is not an admin
// against a server whose rate limit refuses it whenever its bucket of five
// requests is empty: each 429 rate_limited is counted apart from the
// unclear answers, waited out (its Retry-After of 1 s) and sent again
// with the same key, and the run verifies. The waits move the limit's
// clock far enough to fill the bucket again.
func TestRunRateLimited(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	h := servertest.Start(t, servertest.Options{RateLimit: server.RateLimit{Rate: 1, Burst: 5, Now: clock}})
	ctx := context.Background()
	if _, _, err := h.Engine.PutWorkshop(ctx, "limited", engine.WorkshopSpec{Capacity: 100}, nil); err != nil {
		t.Fatal(err)
	}
	var waits []time.Duration
	cfg := bench.WithWait(bench.Config{BaseURL: h.URL, Token: h.Alice, Clients: 1, Count: 18, Workshop: "limited"},
		func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			defer mu.Unlock()
			waits = append(waits, d)
			now = now.Add(10 * time.Second)
			return nil
		})
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run = %v (outcomes %+v)", err, res.Outcomes)
	}
	// The read before the run takes one request of five: the 5th, 10th
	// and 15th intent find the bucket empty.
	o := res.Outcomes
	if o.Created != 18 || o.RateLimited != 3 || o.Unclear != 0 || o.Unsettled != 0 || len(o.Rejected) != 0 || !res.Verification.OK {
		t.Errorf("outcomes %+v, verification %+v: want 18 created, 3 rate limited, nothing unclear or refused", o, res.Verification)
	}
	if res.Requests != 21 {
		t.Errorf("%d requests, want 21: 18 intents and 3 sent again", res.Requests)
	}
	if len(waits) != 3 || waits[0] != time.Second {
		t.Errorf("waits %v: want 3 waits of the Retry-After of 1s", waits)
	}
	h.MustCheckClean(t)
}

// TestRunBatches runs the bench with batches through a proxy in front of a
// real server that answers the first batches 503 store_unavailable with
// Retry-After: every request is a batch of the configured size, an unclear
// batch and a lost-answer batch are resent as the same batch (the same
// body, so the same keys), replays come back item by item, and the counts
// are of items and verify against the store.
func TestRunBatches(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	ctx := context.Background()
	target, err := url.Parse(h.URL)
	if err != nil {
		t.Fatal(err)
	}
	const size, outage = 25, 2
	var mu sync.Mutex
	var singles, unavailable int
	bodies := map[string]int{}
	rp := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == api.PathReservations {
			mu.Lock()
			singles++
			mu.Unlock()
		}
		if r.Method == http.MethodPost && r.URL.Path == api.PathBatches {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				t.Error(err)
			}
			var b struct {
				Items []json.RawMessage `json:"items"`
			}
			if err := json.Unmarshal(body, &b); err != nil || len(b.Items) != size {
				t.Errorf("batch of %d items (%v), want %d", len(b.Items), err, size)
			}
			mu.Lock()
			bodies[string(body)]++
			down := unavailable < outage
			if down {
				unavailable++
			}
			mu.Unlock()
			if down {
				w.Header().Set("Content-Type", api.MediaProblem)
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusServiceUnavailable)
				json.NewEncoder(w).Encode(api.Problem{Type: "about:blank", Title: "Service Unavailable", Status: 503, Code: engine.CodeStoreUnavailable, Detail: "the store is unavailable"})
				return
			}
			r.Body = io.NopCloser(strings.NewReader(string(body)))
		}
		rp.ServeHTTP(w, r)
	}))
	defer proxy.Close()

	var waits int
	cfg := bench.WithWait(bench.Config{BaseURL: proxy.URL, Token: h.Admin, Clients: 4, Count: 40, Batch: size, ReplayRatio: 0.3, LostAnswerRatio: 0.3},
		func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			waits++
			mu.Unlock()
			return nil
		})
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run = %v (outcomes %+v)", err, res.Outcomes)
	}
	o, v := res.Outcomes, res.Verification
	if res.Batch != size || res.LatencyOf != "batch of 25" || res.Intents != 40 {
		t.Errorf("batch %d, latency of %q, %d intents: want batches of %d, 40 intents", res.Batch, res.LatencyOf, res.Intents, size)
	}
	if o.Created == 0 || o.Created%size != 0 || o.Replayed == 0 || o.Replayed%size != 0 || o.LostAnswers == 0 || o.Unclear != outage || waits != outage {
		t.Errorf("outcomes %+v, %d waits: want whole batches created and replayed, lost answers, %d unclear batches waited for", o, waits, outage)
	}
	// Every intent sends one batch, a lost answer and an unclear answer one
	// more, and each resend is the same batch as before.
	var sent, resent int
	for _, n := range bodies {
		sent += n
		resent += n - 1
	}
	if singles != 0 || int64(sent) != res.Requests || res.Requests != res.Intents+o.LostAnswers+o.Unclear {
		t.Errorf("%d single and %d batch requests, result says %d requests for %d intents, %d lost answers, %d unclear", singles, sent, res.Requests, res.Intents, o.LostAnswers, o.Unclear)
	}
	if resent < int(o.LostAnswers+o.Unclear) {
		t.Errorf("%d batches sent again, want at least the %d lost and unclear ones", resent, o.LostAnswers+o.Unclear)
	}
	if !v.OK || v.ReservedAfter != int(o.Created) || v.Reservations != int(o.Created) {
		t.Errorf("verification = %+v, created %d", v, o.Created)
	}
	w, err := h.Engine.Workshop(ctx, res.Workshop)
	if err != nil || w.Reserved != int(o.Created) {
		t.Errorf("workshop %s = %+v, %v; want %d reserved", res.Workshop, w, err, o.Created)
	}
	h.MustCheckClean(t)
}
