package client_test

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server"
	"github.com/reserve/reserve/internal/server/servertest"
)

// limitClock is the rate limit's clock, which the client's waits move.
type limitClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

func (c *limitClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// wait is the client's wait: it moves the clock instead of sleeping.
func (c *limitClock) wait(_ context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.waits = append(c.waits, d)
	return nil
}

// TestRateLimitedSentAgainWithTheSameKey: a reservation the daemon answers
// 429 rate_limited decided nothing, so the client waits the answer's
// Retry-After and sends the same request, under the same key, again, which
// reserves; a replay afterwards gets that answer. A wait longer than the
// call's deadline allows is not made: the 429 is returned, undecided, with
// its Retry-After, and the caller keeps the key.
func TestRateLimitedSentAgainWithTheSameKey(t *testing.T) {
	clock := &limitClock{now: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	h := servertest.Start(t, servertest.Options{RateLimit: server.RateLimit{Rate: 0.5, Burst: 1, Now: clock.Now}})
	alice := h.TCPClient(h.Alice)
	alice.SetWait(clock.wait)
	ctx := context.Background()
	if _, err := alice.WhoAmI(ctx); err != nil { // Her one request at once.
		t.Fatal(err)
	}
	key := engine.OperationKey(uuid.NewString())
	req := engine.Request{Workshop: servertest.Workshop, Quantity: 1}
	status, first, replayed, err := alice.Reserve(ctx, key, req)
	if err != nil || status != http.StatusCreated || replayed {
		t.Fatalf("the reservation: %d %s replayed %v: %v", status, first, replayed, err)
	}
	if want := []time.Duration{2 * time.Second}; !slices.Equal(clock.waits, want) {
		t.Errorf("the client waited %v, want %v (the Retry-After)", clock.waits, want)
	}
	var sent []string
	for _, r := range h.Logs.RequestLines(t) {
		if r["route"] == "POST "+api.PathReservations {
			if r["operation"] != string(key) {
				t.Errorf("a send under another key: %v", r)
			}
			sent = append(sent, r["outcome"].(string))
		}
	}
	if want := []string{engine.OutcomeRateLimited, engine.OutcomeCreated}; !slices.Equal(sent, want) {
		t.Errorf("the daemon answered the sends %v, want %v", sent, want)
	}

	status, again, replayed, err := alice.Reserve(ctx, key, req)
	if err != nil || status != http.StatusCreated || !replayed || string(again) != string(first) {
		t.Errorf("the replay: %d %s replayed %v: %v; want the first answer %s", status, again, replayed, err, first)
	}
	if n := len(clock.waits); n != 2 {
		t.Errorf("the replay waited %d times, want once more", n-1)
	}

	// No time for the wait: the 429 itself, undecided.
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	other := engine.OperationKey(uuid.NewString())
	res, err := alice.Send(short, other, client.Reserving(req))
	if err != nil || res.Decided || res.Problem == nil || res.Problem.Code != api.CodeRateLimited || res.Status != http.StatusTooManyRequests || res.RetryAfter != 2*time.Second {
		t.Errorf("a 429 without time to wait: %+v %v; want it undecided, with Retry-After 2s", res, err)
	}
	if !client.Undecided(res.Status, res.Err()) {
		t.Error("client.Undecided calls the 429 rate_limited decided")
	}
	if n := len(clock.waits); n != 2 {
		t.Errorf("the client waited without the time for it")
	}
	if _, err := h.Engine.Operation(ctx, "alice", other); engine.ErrorCode(err) != engine.CodeUnknownOperation {
		t.Errorf("the key answered 429 has a receipt: %v", err)
	}
}
