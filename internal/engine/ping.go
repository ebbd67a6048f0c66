package engine

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// errPingPending is the answer while a read of the store has waited longer
// than the caller's timeout already: a store that hangs is asked once, not
// once per caller.
var errPingPending = errors.New("an earlier read of the store has not been answered yet")

// pingRead is one read of the store that Ping made; done is closed once it
// has its answer, err.
type pingRead struct {
	started time.Time
	done    chan struct{}
	err     error
}

// Ping reads from the store and reports whether the read was answered,
// with success, within timeout. A failure is marked CodeStoreUnavailable.
// Callers share one read at a time: a Ping while a read waits waits for
// that read (at most timeout), so any number of probes cost one read and
// never fail each other; but when that read has waited longer than
// timeout already, the store hangs, and Ping fails at once. A read that
// outlasts timeout is left to finish on its own. Readiness probes and the
// service manager's watchdog ask it.
func (e *Engine) Ping(ctx context.Context, timeout time.Duration) error {
	e.pingMu.Lock()
	r := e.ping
	switch {
	case r == nil:
		r = &pingRead{started: time.Now(), done: make(chan struct{})}
		e.ping = r
		go e.readForPing(context.WithoutCancel(ctx), r)
	case time.Since(r.started) > timeout:
		e.pingMu.Unlock()
		return StoreUnavailable(errPingPending)
	}
	e.pingMu.Unlock()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-r.done:
		if r.err != nil {
			return StoreUnavailable(fmt.Errorf("read the store: %w", r.err))
		}
		return nil
	case <-timer.C:
		return StoreUnavailable(fmt.Errorf("the store did not answer a read within %v", timeout))
	case <-ctx.Done():
		return StoreUnavailable(ctx.Err())
	}
}

// readForPing makes the read r and, once the store answers, hands its
// answer to every Ping waiting for it; the next Ping makes a new read.
func (e *Engine) readForPing(ctx context.Context, r *pingRead) {
	r.err = e.store.View(ctx, func(tx Tx) error {
		_, _, err := tx.Workshop("")
		return err
	})
	e.pingMu.Lock()
	e.ping = nil
	e.pingMu.Unlock()
	close(r.done)
}
