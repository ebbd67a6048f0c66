package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server"
	"github.com/reserve/reserve/internal/server/servertest"
)

// wantRateLimited checks that an answer is 429 rate_limited with
// Retry-After retryAfter (whole seconds) and an id.
func wantRateLimited(t *testing.T, resp *http.Response, body []byte, retryAfter string) {
	t.Helper()
	wantProblem(t, resp, body, http.StatusTooManyRequests, api.CodeRateLimited)
	if got := resp.Header.Get("Retry-After"); got != retryAfter {
		t.Errorf("Retry-After = %q, want %q", got, retryAfter)
	}
	if resp.Header.Get(api.HeaderRequestID) == "" {
		t.Error("the 429 has no X-Request-Id")
	}
}

// TestRateLimit: an actor that is not an admin gets its burst of API
// requests at once and then its rate; a request beyond them is answered
// 429 rate_limited with Retry-After (whole seconds, rounded up) and
// nothing is decided or stored for it: no reservation, no receipt, so the
// same key sent after Retry-After is decided then, and a replay after that
// gives its answer. Each actor has its own bucket; admins, on TCP and on
// the socket, have none; requests without credentials, and those whose
// credentials fail, share their address's bucket of ten times the
// actor's; probes and metrics are not limited.
func TestRateLimit(t *testing.T) {
	clock := newTestClock()
	h := servertest.Start(t, servertest.Options{RateLimit: server.RateLimit{Rate: 0.4, Burst: 2, Now: clock.Now}})
	one := `{"workshop":"workshop-demo","quantity":1}`
	for range 2 {
		if resp, body := send(t, h, reservationCall(h.Alice, uuid.NewString(), one)); resp.StatusCode != http.StatusCreated {
			t.Fatalf("alice's reservation within her burst: %d %s", resp.StatusCode, body)
		}
	}
	key := uuid.NewString()
	resp, body := send(t, h, reservationCall(h.Alice, key, one))
	wantRateLimited(t, resp, body, "3") // 2.5 s until a request is in her bucket again.
	if !strings.Contains(string(body), "nothing was done") {
		t.Errorf("the refusal does not say that nothing was done: %s", body)
	}
	if reservations, receipts := h.Counts(t); reservations != 2 || receipts != 2 {
		t.Errorf("after the 429: %d reservations, %d receipts; want 2 and 2", reservations, receipts)
	}
	if _, err := h.Engine.Operation(t.Context(), "alice", engine.OperationKey(key)); engine.ErrorCode(err) != engine.CodeUnknownOperation {
		t.Errorf("the key of the 429 has a receipt: %v", err)
	}
	// Every API route counts, a read too; an admin route is refused for
	// the rate before the role.
	resp, body = send(t, h, call{via: h.Alice, method: http.MethodGet, path: api.PathWhoAmI})
	wantRateLimited(t, resp, body, "3")
	resp, body = send(t, h, call{via: h.Alice, method: http.MethodGet, path: api.PathTokens})
	wantRateLimited(t, resp, body, "3")

	// Bob has a bucket of his own; admins have none.
	if resp, body := send(t, h, call{via: h.Bob, method: http.MethodGet, path: api.PathWhoAmI}); resp.StatusCode != http.StatusOK {
		t.Errorf("bob's whoami: %d %s", resp.StatusCode, body)
	}
	for range 10 {
		for _, via := range []string{h.Admin, viaSocket} {
			if resp, body := send(t, h, call{via: via, method: http.MethodGet, path: api.PathWhoAmI}); resp.StatusCode != http.StatusOK {
				t.Fatalf("an admin's whoami: %d %s", resp.StatusCode, body)
			}
		}
	}

	// Requests without credentials, or whose credentials fail, count
	// against their address, with ten times the burst.
	for i := range 20 {
		c := call{via: viaNoToken, method: http.MethodGet, path: api.PathSignIn}
		if i%2 == 1 {
			c = call{via: "rsv_nope", method: http.MethodGet, path: api.PathWhoAmI}
		}
		if resp, body := send(t, h, c); resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("request %d without credentials: %d %s", i+1, resp.StatusCode, body)
		}
	}
	resp, body = send(t, h, call{via: "rsv_nope", method: http.MethodGet, path: api.PathWhoAmI})
	wantRateLimited(t, resp, body, "1") // The address's rate is 4 a second.
	resp, body = send(t, h, call{via: viaNoToken, method: http.MethodGet, path: api.PathSignIn})
	wantRateLimited(t, resp, body, "1")
	for _, path := range []string{api.PathHealth, api.PathLive, api.PathReady} {
		if resp, body := send(t, h, call{via: viaNoToken, method: http.MethodGet, path: path}); resp.StatusCode != http.StatusOK {
			t.Errorf("%s over the limit: %d %s", path, resp.StatusCode, body)
		}
	}

	// After Retry-After the same key is decided: created, not replayed,
	// and its replay is the same answer.
	clock.Advance(2 * time.Second)
	resp, body = send(t, h, reservationCall(h.Alice, key, one))
	wantRateLimited(t, resp, body, "1") // Half a second left, rounded up.
	clock.Advance(500 * time.Millisecond)
	resp, first := send(t, h, reservationCall(h.Alice, key, one))
	if resp.StatusCode != http.StatusCreated || resp.Header.Get(api.HeaderReplayed) != "false" {
		t.Fatalf("the key after Retry-After: %d replayed %q: %s", resp.StatusCode, resp.Header.Get(api.HeaderReplayed), first)
	}
	clock.Advance(3 * time.Second)
	resp, again := send(t, h, reservationCall(h.Alice, key, one))
	if resp.StatusCode != http.StatusCreated || resp.Header.Get(api.HeaderReplayed) != "true" || string(again) != string(first) {
		t.Errorf("the replay: %d replayed %q: %s, want the first answer %s", resp.StatusCode, resp.Header.Get(api.HeaderReplayed), again, first)
	}

	// The request log has every refusal, as undecided, and the daemon
	// warns of them once a minute.
	var limited []map[string]any
	keyed := 0
	for _, r := range h.Logs.RequestLines(t) {
		if r["outcome"] == engine.OutcomeRateLimited {
			limited = append(limited, r)
			if r["operation"] == key {
				keyed++
			}
			if r["status"] != float64(http.StatusTooManyRequests) || r["code"] != api.CodeRateLimited || r["request_id"] == "" {
				t.Errorf("log line of a 429: %v", r)
			}
		}
	}
	if len(limited) != 6 || keyed != 2 {
		t.Errorf("%d request lines with outcome rate_limited, %d of them with the key sent twice; want 6 and 2", len(limited), keyed)
	}
	if w := h.Logs.Find("the rate limit refused requests (--rate-limit, --rate-burst): they were not decided, and their clients send them again after Retry-After"); w == nil || w["level"] != "WARN" || w["refused"] != float64(1) {
		t.Errorf("the warning of the rate limit: %v", w)
	}
	h.MustCheckClean(t)
}

// TestRateLimitOff: without a rate (or without a burst) nothing is
// limited.
func TestRateLimitOff(t *testing.T) {
	for _, rl := range []server.RateLimit{{}, {Rate: 1}, {Burst: 1}} {
		h := servertest.Start(t, servertest.Options{RateLimit: rl})
		for range 20 {
			if resp, body := send(t, h, call{via: h.Alice, method: http.MethodGet, path: api.PathWhoAmI}); resp.StatusCode != http.StatusOK {
				t.Fatalf("%+v: whoami: %d %s", rl, resp.StatusCode, body)
			}
		}
	}
}

// TestRateLimitedBatch: a batch is one request, whatever its items, and a
// batch refused by the rate limit decides none of them.
func TestRateLimitedBatch(t *testing.T) {
	clock := newTestClock()
	h := servertest.Start(t, servertest.Options{RateLimit: server.RateLimit{Rate: 1, Burst: 1, Now: clock.Now}})
	batch := func() []byte {
		b, _ := json.Marshal(map[string]any{"items": []map[string]any{
			{"key": uuid.NewString(), "workshop": servertest.Workshop, "quantity": 1},
			{"key": uuid.NewString(), "workshop": servertest.Workshop, "quantity": 1},
		}})
		return b
	}
	c := call{via: h.Alice, method: http.MethodPost, path: api.PathBatches, header: http.Header{"Content-Type": {api.MediaJSON}}, body: string(batch())}
	if resp, body := send(t, h, c); resp.StatusCode != http.StatusOK {
		t.Fatalf("a batch of two: %d %s", resp.StatusCode, body)
	}
	c.body = string(batch())
	resp, body := send(t, h, c)
	wantRateLimited(t, resp, body, "1")
	if reservations, receipts := h.Counts(t); reservations != 2 || receipts != 2 {
		t.Errorf("after the refused batch: %d reservations, %d receipts; want 2 and 2", reservations, receipts)
	}
}
