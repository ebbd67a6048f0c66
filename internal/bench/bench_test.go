package bench_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/bench"
	"github.com/reserve/reserve/internal/engine"
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
	if err != nil || w.Reserved != int(o.Created) {
		t.Errorf("workshop %s = %+v, %v; want %d reserved", res.Workshop, w, err, o.Created)
	}
	h.MustCheckClean(t)
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
		{Clients: -1}, {Count: -1}, {ReplayRatio: 1.5}, {LostAnswerRatio: -0.1}, {Workshop: "Bad"}, {Quantity: -2},
	} {
		if _, err := bench.Run(ctx, cfg); !errors.Is(err, bench.ErrConfig) {
			t.Errorf("Run(%+v) = %v, want ErrConfig", cfg, err)
		}
	}
	if reservations, receipts := h.Counts(t); reservations != 0 || receipts != 0 {
		t.Errorf("refused runs stored %d reservations and %d receipts", reservations, receipts)
	}
}
