package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/pflag"

	"github.com/reserve/reserve/internal/delivery"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/failpoint"
	"github.com/reserve/reserve/internal/server"
)

// deliveryFlags are the serve flags of the deliveries to webhook
// endpoints and mailboxes.
type deliveryFlags struct {
	minBackoff time.Duration
	maxAge     time.Duration
	timeout    time.Duration
	lease      time.Duration
}

func (f *deliveryFlags) register(fs *pflag.FlagSet) {
	fs.DurationVar(&f.minBackoff, "delivery-min-backoff", delivery.DefaultMinBackoff, "wait before the first retry of a delivery that failed temporarily (a webhook endpoint's 408, 429 or 5xx answer or none within --delivery-timeout, a mail server's 4xx reply, a connection that failed); each further retry waits twice as long, up to an hour, plus up to a quarter more at random, and at least what a Retry-After header asks")
	fs.DurationVar(&f.maxAge, "delivery-max-age", delivery.DefaultMaxAge, "how long a delivery that keeps failing temporarily is retried, from when its event happened (or an operator sent it again); then it fails for good and stays in the delivery view, where an operator may send it again, e.g. --delivery-max-age 24h")
	fs.DurationVar(&f.timeout, "delivery-timeout", delivery.DefaultTimeout, "how long one attempt of a delivery may take (a webhook endpoint's answer, a mail server's session) before it counts as failed temporarily")
	fs.DurationVar(&f.lease, "delivery-lease", delivery.DefaultLease, "how long a daemon's claim on a delivery keeps it from every other daemon of the store; a daemon killed while sending leaves its claims, and they are sent again once they ran out. It must exceed --delivery-timeout by more than 5s, e.g. --delivery-timeout 3s --delivery-lease 10s for receivers that answer fast")
}

// check refuses backoffs the dispatcher cannot keep. serve checks them
// before it opens the store, so that a refused start leaves no database.
func (f *deliveryFlags) check() error {
	switch {
	case f.minBackoff <= 0:
		return &exitError{code: ExitUsage, err: fmt.Errorf("--delivery-min-backoff must be positive, not %v", f.minBackoff)}
	case f.maxAge <= 0:
		return &exitError{code: ExitUsage, err: fmt.Errorf("--delivery-max-age must be positive, not %v", f.maxAge)}
	case f.minBackoff > f.maxAge:
		return &exitError{code: ExitUsage, err: fmt.Errorf("--delivery-min-backoff %v is longer than --delivery-max-age %v: no delivery would ever be retried", f.minBackoff, f.maxAge)}
	case f.timeout <= 0:
		return &exitError{code: ExitUsage, err: fmt.Errorf("--delivery-timeout must be positive, not %v", f.timeout)}
	case f.lease <= f.timeout+delivery.LeaseMargin:
		return &exitError{code: ExitUsage, err: fmt.Errorf("--delivery-lease %v must exceed --delivery-timeout %v by more than %v, the time to record an attempt", f.lease, f.timeout, delivery.LeaseMargin)}
	}
	return nil
}

// start runs the dispatcher of deliveries until the returned stop is
// called. It always runs, since webhook endpoints may be added at any
// time; mail is routed and sent only when mail is not nil, and with it
// the reminders of holds, due holdReminder before their deadlines (none
// when 0). waker is the one the engine's store wakes when it commits an
// event.
func (f *deliveryFlags) start(ctx context.Context, eng *engine.Engine, waker *delivery.Waker, mail delivery.Channel, holdReminder time.Duration, metrics *server.Metrics, logger *slog.Logger) (stop func(), err error) {
	now := failpoint.Clock(time.Now) // The engine's clock.
	channels := map[string]delivery.Channel{engine.ChannelWebhook: delivery.NewWebhook(now)}
	if mail != nil {
		channels[engine.ChannelMail] = mail
	}
	d, err := delivery.New(delivery.Config{Engine: eng, Channels: channels, HoldReminder: holdReminder, MinBackoff: f.minBackoff, MaxAge: f.maxAge,
		Timeout: f.timeout, Lease: f.lease, Waker: waker, Now: now, Logger: logger})
	if err != nil {
		return nil, &exitError{code: ExitUsage, err: err}
	}
	if err := metrics.Register(d.Collectors()...); err != nil {
		return nil, fmt.Errorf("delivery metrics: %w", err)
	}
	logger.Info("delivering events to webhook endpoints", "mail", mail != nil, "delivery_min_backoff", f.minBackoff, "delivery_max_age", f.maxAge)
	return goUntilStopped(ctx, d.Run), nil
}
