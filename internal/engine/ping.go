package engine

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// errPingPending is the answer while an earlier ping still waits for the
// store: a store that hangs is asked once, not once per caller.
var errPingPending = errors.New("an earlier read of the store has not been answered yet")

// Ping reads from the store and reports whether the read was answered,
// with success, within timeout. A failure is marked CodeStoreUnavailable.
// A read that outlasts timeout is left to finish on its own, and until it
// has, Ping fails at once. Readiness probes and the service manager's
// watchdog ask it.
func (e *Engine) Ping(ctx context.Context, timeout time.Duration) error {
	if !e.pinging.CompareAndSwap(false, true) {
		return StoreUnavailable(errPingPending)
	}
	done := make(chan error, 1)
	go func() {
		defer e.pinging.Store(false)
		done <- e.store.View(context.WithoutCancel(ctx), func(tx Tx) error {
			_, _, err := tx.Workshop("")
			return err
		})
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case err := <-done:
		if err != nil {
			return StoreUnavailable(fmt.Errorf("read the store: %w", err))
		}
		return nil
	case <-timer.C:
		return StoreUnavailable(fmt.Errorf("the store did not answer a read within %v", timeout))
	case <-ctx.Done():
		return StoreUnavailable(ctx.Err())
	}
}
