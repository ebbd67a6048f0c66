package daemon

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/spf13/pflag"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/outbox"
	"github.com/reserve/reserve/internal/server"
)

// notifyFlags are the serve flags that say where confirmation events go.
type notifyFlags struct {
	url string
	dir string
}

func (f *notifyFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.url, "notify-url", "", "POST every confirmation event (reservation, cancellation) to this URL, with header Idempotency-Key: <event id>")
	fs.StringVar(&f.dir, "notify-dir", "", "write every confirmation event to this directory as <event id>.json")
}

// start runs the outbox dispatcher, if the flags name a destination, until
// the returned stop is called.
func (f *notifyFlags) start(ctx context.Context, eng *engine.Engine, metrics *server.Metrics, logger *slog.Logger) (stop func(), err error) {
	if f.url == "" && f.dir == "" {
		return func() {}, nil
	}
	m := outbox.NewMetrics()
	if err := metrics.Register(m.Collectors()...); err != nil {
		return nil, fmt.Errorf("outbox metrics: %w", err)
	}
	d, err := outbox.New(outbox.Config{Engine: eng, URL: f.url, Dir: f.dir, Logger: logger}, m)
	if err != nil {
		return nil, &exitError{code: ExitUsage, err: err}
	}
	logger.Info("delivering confirmation events", "notify_url", f.url, "notify_dir", f.dir)
	return goUntilStopped(ctx, func(ctx context.Context) { d.Run(ctx) }), nil
}
