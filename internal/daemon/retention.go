package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/outbox"
	"github.com/reserve/reserve/internal/server"
)

// expireBatch is how many receipts one janitor transaction turns into
// tombstones.
const expireBatch = 1000

// lifecycleFlags are the serve flags for what follows a decision: where confirmation events
// go, and how long receipts are kept.
type lifecycleFlags struct {
	notifyURL string
	notifyDir string
	retention time.Duration
}

func (f *lifecycleFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.notifyURL, "notify-url", "", "POST every confirmation event (reservation, cancellation) to this URL, with header Idempotency-Key: <event id>")
	fs.StringVar(&f.notifyDir, "notify-dir", "", "write every confirmation event to this directory as <event id>.json")
	fs.DurationVar(&f.retention, "receipt-retention", 0, "turn receipts older than this into tombstones (a late retry then gets 410 operation_expired); 0 keeps them forever")
}

// start runs the outbox dispatcher and the retention janitor that the flags
// ask for, until the returned stop is called.
func (f *lifecycleFlags) start(ctx context.Context, eng *engine.Engine, metrics *server.Metrics, logger *slog.Logger) (stop func(), err error) {
	if f.retention < 0 {
		return nil, &exitError{code: ExitUsage, err: fmt.Errorf("--receipt-retention must not be negative, not %s", f.retention)}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	stop = func() {
		cancel()
		wg.Wait()
	}
	if f.notifyURL != "" || f.notifyDir != "" {
		m := outbox.NewMetrics()
		if err := metrics.Register(m.Collectors()...); err != nil {
			stop()
			return nil, fmt.Errorf("outbox metrics: %w", err)
		}
		d, err := outbox.New(outbox.Config{Engine: eng, URL: f.notifyURL, Dir: f.notifyDir, Logger: logger}, m)
		if err != nil {
			stop()
			return nil, &exitError{code: ExitUsage, err: err}
		}
		wg.Go(func() { d.Run(ctx) })
		logger.Info("delivering confirmation events", "notify_url", f.notifyURL, "notify_dir", f.notifyDir)
	}
	if f.retention > 0 {
		wg.Go(func() { janitor(ctx, eng, f.retention, logger) })
		logger.Info("receipts expire", "retention", f.retention)
	}
	return stop, nil
}

// janitor turns expired receipts into tombstones, now and then every tenth
// of the retention period (at least every second, at most every hour).
func janitor(ctx context.Context, eng *engine.Engine, retention time.Duration, logger *slog.Logger) {
	every := min(max(retention/10, time.Second), time.Hour)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		total := 0
		for {
			n, err := eng.ExpireReceipts(ctx, retention, expireBatch)
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
