package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/engine/enginetest"
	"github.com/reserve/reserve/internal/pgstore"
	"github.com/reserve/reserve/internal/pgstore/pgtest"
)

// TestConformanceInGroups runs the engine's suite with every Update
// decided in a group of two, the group's path (read ahead, decisions in
// savepoints, writes kept in memory and sent in batches) instead of a
// transaction of its own.
func TestConformanceInGroups(t *testing.T) {
	pgtest.ServerDSN(t)
	enginetest.Run(t, func(tb testing.TB) engine.Store {
		g := &inGroups{}
		// One connection: a queued Update never runs alone, whatever
		// the time it waits.
		g.Store = mustOpen(tb, pgstore.Options{MaxConns: 1, OnCommit: func(calls, _ int) {
			if calls == 2 {
				g.pairs.Add(1)
			}
		}})
		tb.Cleanup(func() {
			if g.pairs.Load() == 0 {
				tb.Error("no group decided fn and the decision after it together")
			}
		})
		return g
	})
}

// inGroups is a Store whose Updates are each decided in a group, followed
// by a decision that does nothing.
type inGroups struct {
	*pgstore.Store
	mu    sync.Mutex   // One group at a time.
	pairs atomic.Int64 // Commits of a group of two.
}

func (g *inGroups) Update(ctx context.Context, fn func(engine.Tx) error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	// A leader holds the store's one transaction while fn and the
	// decision after it queue, so that they form the next group.
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	leader := make(chan error, 1)
	go func() {
		leader <- g.Store.Update(ctx, func(engine.Tx) error {
			once.Do(func() { close(held) })
			<-release
			return nil
		})
	}()
	<-held
	var fnErr, afterErr error
	var wg sync.WaitGroup
	wg.Go(func() { fnErr = g.Store.Update(ctx, fn) })
	queued := g.waitQueued(1)
	if queued == nil {
		wg.Go(func() { afterErr = g.Store.Update(ctx, func(engine.Tx) error { return nil }) })
		queued = g.waitQueued(2)
	}
	close(release)
	wg.Wait()
	if err := errors.Join(queued, <-leader, afterErr); err != nil {
		return fmt.Errorf("inGroups: %w", err)
	}
	return fnErr
}

// waitQueued polls, with a deadline, until n Updates are queued.
func (g *inGroups) waitQueued(n int) error {
	deadline := time.Now().Add(30 * time.Second)
	for g.Store.Queued() != n {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d Updates queued after 30s, want %d", g.Store.Queued(), n)
		}
		time.Sleep(50 * time.Microsecond)
	}
	return nil
}
