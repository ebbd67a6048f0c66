package bench

import (
	"context"
	"time"
)

// WithAfterRequest returns cfg with a hook that runs after every request,
// so tests can disturb a run.
func WithAfterRequest(cfg Config, f func()) Config {
	cfg.afterRequest = f
	return cfg
}

// WithWait returns cfg with wait in place of the timer that honours an
// answer's Retry-After.
func WithWait(cfg Config, wait func(ctx context.Context, d time.Duration) error) Config {
	cfg.wait = wait
	return cfg
}
