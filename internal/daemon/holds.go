package daemon

import (
	"context"
	"log/slog"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// holdJanitorEvery is how often the hold janitor looks for holds past their
// deadline.
const holdJanitorEvery = 5 * time.Second

// expireHoldsBatch is how many holds one ExpireHolds call of the hold
// janitor looks at; it calls again while a call found that many.
const expireHoldsBatch = 1000

// startHoldJanitor runs the hold janitor every holdJanitorEvery until the
// returned stop is called. It always runs: holds have no flag.
func startHoldJanitor(ctx context.Context, eng *engine.Engine, expired func(n int), logger *slog.Logger) (stop func()) {
	return goUntilStopped(ctx, func(ctx context.Context) { holdJanitor(ctx, eng, holdJanitorEvery, expired, logger) })
}

// holdJanitor cleans up the holds whose deadline has passed, now and then
// every every, until ctx ends: each is stored as expired and its places
// leave its workshop's holding counter. It reports how many it cleaned to
// expired and the log. Nothing depends on it for correctness: every
// decision and every view treats a hold past its deadline as expired, and
// a decision that needs the places of such holds cleans them up itself;
// the janitor cleans up the others, in bounded steps, which keeps short
// the open-hold index that views read.
func holdJanitor(ctx context.Context, eng *engine.Engine, every time.Duration, expired func(n int), logger *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		total := 0
		for {
			var more bool
			n, err := janitorCall(ctx, func(ctx context.Context) (n int, err error) {
				n, more, err = eng.ExpireHolds(ctx, expireHoldsBatch)
				return n, err
			})
			total += n
			if err != nil {
				if ctx.Err() == nil {
					logger.Warn("hold janitor failed", "error", err)
				}
				break
			}
			if !more {
				break
			}
		}
		if total > 0 {
			// The log line comes first, so whoever sees the count has
			// the line to read too.
			logger.Info("holds past their deadline cleaned up", "count", total)
			expired(total)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
