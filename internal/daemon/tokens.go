package daemon

import (
	"context"
	"log/slog"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// tokenUseEvery is how often the daemon writes when API tokens were last
// used. Authentications only note uses in memory (at most one a minute per
// token), so a round writes at most one small record per token used.
const tokenUseEvery = 15 * time.Second

// tokenUseBatch is how many tokens' uses one write records; a round writes
// again while a write found more.
const tokenUseBatch = 256

// startTokenUseWriter writes the noted uses of API tokens every
// tokenUseEvery until the returned stop is called, and once more then, so
// that the uses of a daemon that stops are not lost (the store must still
// be open).
func startTokenUseWriter(ctx context.Context, eng *engine.Engine, logger *slog.Logger) (stop func()) {
	stopLoop := goUntilStopped(ctx, func(ctx context.Context) {
		t := time.NewTicker(tokenUseEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			writeTokenUse(ctx, eng, logger)
		}
	})
	return func() {
		stopLoop()
		writeTokenUse(context.WithoutCancel(ctx), eng, logger)
	}
}

// writeTokenUse writes every noted use of API tokens, in steps of
// tokenUseBatch; a failure is logged and the uses are kept for the next
// round.
func writeTokenUse(ctx context.Context, eng *engine.Engine, logger *slog.Logger) {
	for {
		var more bool
		_, err := janitorCall(ctx, func(ctx context.Context) (n int, err error) {
			n, more, err = eng.FlushTokenUse(ctx, tokenUseBatch)
			return n, err
		})
		if err != nil {
			if ctx.Err() == nil {
				logger.Warn("recording when API tokens were last used failed", "error", err)
			}
			return
		}
		if !more {
			return
		}
	}
}
