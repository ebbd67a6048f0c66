package cli

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/bench"
)

// TestBenchFailureExitCode: a failed verification exits 1 ("anything
// else"), a refused configuration 2, never one of the reservation codes.
func TestBenchFailureExitCode(t *testing.T) {
	failed := fmt.Errorf("bench: %w", fmt.Errorf("%w: workshop w gained 3 reserved places, but the clients were told of 2", bench.ErrVerification))
	if got := exitCode(failed); got != ExitFailure {
		t.Errorf("exit code of a failed verification = %d, want %d", got, ExitFailure)
	}
	refused := &usageError{err: fmt.Errorf("bench: %w", bench.ErrConfig)}
	if got := exitCode(refused); got != ExitUsage {
		t.Errorf("exit code of a refused configuration = %d, want %d", got, ExitUsage)
	}
}

func TestPrintBench(t *testing.T) {
	var out bytes.Buffer
	printBench(&out, bench.Result{
		Transport: "tcp", Target: "http://127.0.0.1:8080", Clients: 64, Workshop: "w1", Quantity: 1,
		Requests: 10, Intents: 9, Seconds: 2, RequestsPerSec: 5, CreatedPerSec: 4,
		Outcomes:     bench.Outcomes{Created: 8, Replayed: 2, LostAnswers: 1, Rejected: map[string]int64{"unknown_workshop": 1}},
		Verification: bench.Verification{ReservedBefore: 5, ReservedAfter: 14, Reservations: 8},
	})
	for _, want := range []string{
		"target        tcp http://127.0.0.1:8080, 64 clients, workshop w1 (named), quantity 1\n",
		"requests      10 in 2.00s: 5 requests/s, 4 new reservations/s (9 intents)\n",
		"outcomes      created 8  replayed 2  unavailable 0  lost answers 1  unclear (retried) 0  rate limited (retried) 0  unsettled 0  replay changed 0\n",
		"rejected      unknown_workshop 1\n",
		"verification  FAILED: workshop w1 reserved 5 -> 14 (+9), clients were told of 8 reserved places\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "rate limit refused") {
		t.Errorf("a note of the rate limit without a rate_limited answer:\n%s", out.String())
	}
}

// TestPrintBenchRateLimited: answers rate_limited are counted apart, and
// a note says that the limit set their pace.
func TestPrintBenchRateLimited(t *testing.T) {
	var out bytes.Buffer
	printBench(&out, bench.Result{Transport: "tcp", Clients: 2, Workshop: "w1", Quantity: 1, Outcomes: bench.Outcomes{Created: 5, Unclear: 1, RateLimited: 7}})
	for _, want := range []string{
		"  unclear (retried) 1  rate limited (retried) 7  ",
		"note          the daemon's rate limit refused 7 requests (429 rate_limited), sent again after Retry-After: its limit, not its speed, set their pace; admins are not limited\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestPrintBenchBatches: with batches the summary says how many batches of
// how many items, and that the latency is per batch.
func TestPrintBenchBatches(t *testing.T) {
	var out bytes.Buffer
	printBench(&out, bench.Result{Transport: "socket", Clients: 2, Workshop: "w1", Quantity: 1, Batch: 50,
		Requests: 4, Intents: 4, Seconds: 1, RequestsPerSec: 4, CreatedPerSec: 200, LatencyOf: "batch of 50"})
	for _, want := range []string{
		"requests      4 in 1.00s: 4 requests/s, 200 new reservations/s (4 batches of 50)\n",
		"latency       per batch of 50: p50 0.00ms",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
