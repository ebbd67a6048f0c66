package cli

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reserve/reserve/internal/bench"
)

// newBenchCmd returns "bench", the load generator of package bench.
func newBenchCmd(env *commandEnv) *cobra.Command {
	var cfg bench.Config
	cmd := &cobra.Command{
		Use:   "bench [--clients N] [--duration D | --count N] [--batch N] [--workshop ID | --keep] [--replay-ratio R] [--lost-answer-ratio R]",
		Short: "Load a reserved with concurrent reservations and check the count afterwards",
		Long: `bench runs --clients concurrent clients (each with one kept-alive connection)
that send new reservations of --quantity places, each with its own operation
key, for --duration or until --count intents were sent, over --server (TCP,
with --token) or the Unix socket.

Operation keys are UUIDv7, as reservectl makes them for every intent; --keys v4
sends random UUIDv4 keys instead, as earlier clients did.

--replay-ratio is the share of intents that resend one of the client's
settled intents (the answer must be the first answer, marked as a replay);
--lost-answer-ratio is the share of new intents whose first answer is
ignored, as if it had been lost, and that are sent again with the same key.
An unclear answer (timeout, 5xx such as 503 store_unavailable, garbled) is
retried with the same key, after its Retry-After when it has one. An answer
429 rate_limited (the daemon's rate limit, which admins are not under) is
sent again after its Retry-After too, and counted apart ("rate limited"):
those requests went at the limit's pace, not the daemon's.

--batch N makes every intent a batch of N new reservations, each with its
own key, sent as one non-atomic request (POST /api/v1/batches); --count then
counts batches. A replay or a lost-answer retry resends the whole batch, the
same items under the same keys, and every item must come back as a replay
of its first answer, byte for byte. Reservations per second count the
reserved items; the latencies are those of whole batch requests.

Without --workshop, bench creates a workshop "bench-<random>" with a capacity
of 1,000,000,000, which needs an admin (the daemon's user on the socket, or
an admin token). It is created hidden, so it never shows in the workshop
list (the browser's, or "reservectl workshops" without --hidden); --keep
creates it listed. A named workshop must not be used by anyone else during
the run.

It prints the throughput, the p50/p95/p99/max latency of single requests
(with --batch, of batch requests of N reservations each) and
the outcome counts; on a terminal a progress line runs meanwhile. Finally it
reads the workshop through the API and checks that its reserved places grew
by exactly the reservations the clients were told about. If not, or if a
replay differed from its first answer, or an intent was refused or got no
authoritative answer, it says so and exits 1.`,
		Example: `  reservectl bench                                     # 64 clients, 10s, on the socket
  reservectl --server http://127.0.0.1:8080 --token "$ADMIN_TOKEN" bench --clients 64 --duration 20s
  reservectl bench --count 10000 --replay-ratio 0.2 --lost-answer-ratio 0.05
  reservectl bench --clients 8 --batch 100 --duration 10s      # batches of 100 reservations
  reservectl --json bench --workshop my-workshop --duration 5s`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("duration") && cmd.Flags().Changed("count") {
				return usageErrorf("--duration and --count exclude each other")
			}
			if cfg.Keep && cfg.Workshop != "" {
				return usageErrorf("--keep applies to the workshop bench creates, not to one named with --workshop")
			}
			cfg.Socket, cfg.BaseURL, cfg.Token, cfg.Timeout = env.socket, env.server, env.token, env.timeout
			if isTerminal(env.stdout) && !env.json {
				cfg.Progress = func(s bench.Snapshot) {
					fmt.Fprintf(env.stdout, "\r%6.1fs  %d requests  %.0f/s  %d reserved  %d unclear  %d rate limited ",
						s.Elapsed.Seconds(), s.Requests, float64(s.Requests)/s.Elapsed.Seconds(), s.Created, s.Unclear, s.RateLimited)
				}
			}
			res, err := bench.Run(cmd.Context(), cfg)
			if cfg.Progress != nil {
				fmt.Fprint(env.stdout, "\r\033[K") // Clears the progress line.
			}
			switch {
			case errors.Is(err, bench.ErrConfig):
				return &usageError{err: fmt.Errorf("bench: %w", err)}
			case err != nil && !errors.Is(err, bench.ErrVerification):
				return fmt.Errorf("bench: %w", err)
			}
			if perr := env.print(res, func(w io.Writer) error { printBench(w, res); return nil }); perr != nil {
				return perr
			}
			if err != nil {
				return fmt.Errorf("bench: %w", err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Clients, "clients", bench.DefaultClients, "concurrent clients")
	f.DurationVar(&cfg.Duration, "duration", 0, "how long to run (default 10s unless --count)")
	f.IntVar(&cfg.Count, "count", 0, "how many intents to send instead of a duration")
	f.StringVar(&cfg.Workshop, "workshop", "", "workshop to reserve in (default: create one, needs an admin)")
	cmd.RegisterFlagCompletionFunc("workshop", completeWorkshops(env))
	f.BoolVar(&cfg.Keep, "keep", false, "list the workshop bench creates (default: created hidden)")
	f.IntVar(&cfg.Quantity, "quantity", 1, "places per reservation")
	f.StringVar(&cfg.Keys, "keys", "v7", "version of the operation keys: v7 (time-ordered, as reservectl makes them) or v4 (random)")
	f.IntVar(&cfg.Batch, "batch", 0, "send batches of this many new reservations per request (0: single reservations)")
	f.Float64Var(&cfg.ReplayRatio, "replay-ratio", 0, "share of intents that repeat a settled intent, 0 to 1")
	f.Float64Var(&cfg.LostAnswerRatio, "lost-answer-ratio", 0, "share of new intents whose first answer is ignored and that are sent again, 0 to 1")
	return cmd
}

// printBench writes a bench result for people.
func printBench(w io.Writer, r bench.Result) {
	created := "named"
	switch {
	case r.HiddenWorkshop:
		created = "created, hidden"
	case r.CreatedWorkshop:
		created = "created"
	}
	o, v := r.Outcomes, r.Verification
	fmt.Fprintf(w, "target        %s %s, %d clients, workshop %s (%s), quantity %d\n", r.Transport, r.Target, r.Clients, r.Workshop, created, r.Quantity)
	fmt.Fprintf(w, "load          replay ratio %g, lost-answer ratio %g, keys %s\n", r.ReplayRatio, r.LostAnswerRatio, r.Keys)
	intents, per := fmt.Sprintf("%d intents", r.Intents), ""
	if r.Batch > 0 {
		intents = fmt.Sprintf("%d batches of %d", r.Intents, r.Batch)
		per = fmt.Sprintf("per batch of %d: ", r.Batch)
	}
	fmt.Fprintf(w, "requests      %d in %.2fs: %.0f requests/s, %.0f new reservations/s (%s)\n", r.Requests, r.Seconds, r.RequestsPerSec, r.CreatedPerSec, intents)
	fmt.Fprintf(w, "latency       %sp50 %.2fms  p95 %.2fms  p99 %.2fms  max %.2fms\n", per, r.Latency.P50, r.Latency.P95, r.Latency.P99, r.Latency.Max)
	fmt.Fprintf(w, "outcomes      created %d  replayed %d  unavailable %d  lost answers %d  unclear (retried) %d  rate limited (retried) %d  unsettled %d  replay changed %d\n",
		o.Created, o.Replayed, o.Unavailable, o.LostAnswers, o.Unclear, o.RateLimited, o.Unsettled, o.ReplayChanged)
	if o.RateLimited > 0 {
		fmt.Fprintf(w, "note          the daemon's rate limit refused %d requests (429 rate_limited), sent again after Retry-After: its limit, not its speed, set their pace; admins are not limited\n", o.RateLimited)
	}
	if len(o.Rejected) > 0 {
		codes := make([]string, 0, len(o.Rejected))
		for c, n := range o.Rejected {
			codes = append(codes, fmt.Sprintf("%s %d", c, n))
		}
		sort.Strings(codes)
		fmt.Fprintf(w, "rejected      %s\n", strings.Join(codes, "  "))
	}
	verdict := "ok"
	if !v.OK {
		verdict = "FAILED"
	}
	fmt.Fprintf(w, "verification  %s: workshop %s reserved %d -> %d (+%d), clients were told of %d reserved places\n",
		verdict, r.Workshop, v.ReservedBefore, v.ReservedAfter, v.ReservedAfter-v.ReservedBefore, v.Reservations)
}
