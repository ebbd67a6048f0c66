package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/pflag"

	"github.com/reserve/reserve/internal/engine"
)

// expireBatch is how many receipts one call of the janitor's finds (in a
// read transaction, through the time index) and turns into tombstones, in
// write transactions of at most engine.ExpireStep receipts each.
const expireBatch = 1000

// janitorCallTimeout bounds one call of a janitor to the store. A janitor
// runs on the daemon's context, which has no deadline: without the bound, a
// call on a connection to a database server that hangs (stopped, or cut off
// without a reset) would wait for ever, keeping a connection of the pool
// and stopping the janitor. The next round tries again.
const janitorCallTimeout = 15 * time.Second

// janitorCall runs one call of a janitor with janitorCallTimeout.
func janitorCall[T any](ctx context.Context, call func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, janitorCallTimeout)
	defer cancel()
	return call(ctx)
}

// retentionFlags are the serve flags that say how long receipts are kept.
type retentionFlags struct {
	retention time.Duration
}

func (f *retentionFlags) register(fs *pflag.FlagSet) {
	fs.DurationVar(&f.retention, "receipt-retention", 0, "turn receipts older than this into tombstones (a late retry then gets 410 operation_expired); 0 keeps them forever")
}

// check refuses a retention the janitor cannot keep. serve checks it
// before it opens the store, so that a refused start leaves no database.
func (f *retentionFlags) check() error {
	if f.retention < 0 {
		return &exitError{code: ExitUsage, err: fmt.Errorf("--receipt-retention must not be negative, not %s", f.retention)}
	}
	return nil
}

// start runs the retention janitor, if the flags ask for one, until the
// returned stop is called.
func (f *retentionFlags) start(ctx context.Context, eng *engine.Engine, logger *slog.Logger) (stop func(), err error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	if f.retention == 0 {
		return func() {}, nil
	}
	logger.Info("receipts expire", "retention", f.retention)
	return goUntilStopped(ctx, func(ctx context.Context) { janitor(ctx, eng, f.retention, logger) }), nil
}

// janitor turns expired receipts into tombstones, now and then every tenth
// of the retention period (at least every second, at most every hour). Each
// round goes on while a call turns a full batch; a call starts at the oldest
// receipt left, so a backlog is worked off without passing over the
// receipts already turned, and a round with nothing to expire costs one
// index seek in a read transaction.
func janitor(ctx context.Context, eng *engine.Engine, retention time.Duration, logger *slog.Logger) {
	every := min(max(retention/10, time.Second), time.Hour)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		total := 0
		for {
			n, err := janitorCall(ctx, func(ctx context.Context) (int, error) { return eng.ExpireReceipts(ctx, retention, expireBatch) })
			if err != nil {
				if ctx.Err() == nil {
					logger.Warn("receipt janitor failed", "error", err)
				}
				break
			}
			total += n
			if n < expireBatch {
				break
			}
		}
		if total > 0 {
			logger.Info("receipts expired into tombstones", "count", total, "retention", retention)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// goUntilStopped runs fn on a goroutine of its own with a context that the
// returned stop cancels; stop returns once fn has returned, and may be
// called again.
func goUntilStopped(ctx context.Context, fn func(context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}
