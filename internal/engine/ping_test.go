package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/engine/memstore"
)

// viewStore is a store whose reads wait for release and then fail with
// err; it has no writes.
type viewStore struct {
	engine.Store
	release chan struct{}
	err     error
}

func (s *viewStore) View(context.Context, func(engine.Tx) error) error {
	<-s.release
	return s.err
}

// TestPingAnswersForAHangingStore: a read that the store does not answer
// within the timeout fails the ping as store_unavailable at the timeout;
// while that read waits, a ping with a timeout it has outlasted fails at
// once instead of piling up reads, and a ping with a longer one waits for
// it and gets its answer; once the store answers, a good read passes.
func TestPingAnswersForAHangingStore(t *testing.T) {
	s := &viewStore{release: make(chan struct{})}
	e := engine.New(s)
	ctx := context.Background()
	if err := e.Ping(ctx, 10*time.Millisecond); engine.ErrorCode(err) != engine.CodeStoreUnavailable {
		t.Fatalf("ping of a hanging store = %v, want store_unavailable", err)
	}
	// The read has waited 10 ms already: a 5 ms ping fails at once.
	if err := e.Ping(ctx, 5*time.Millisecond); !errors.Is(err, engine.ErrPingPending) {
		t.Fatalf("ping while an older read waits = %v, want the pending read", err)
	}
	// A ping with time to wait shares the read and gets its answer.
	done := make(chan error, 1)
	go func() { done <- e.Ping(ctx, time.Hour) }()
	s.err = errors.New("disk on fire")
	close(s.release)
	select {
	case err := <-done:
		if engine.ErrorCode(err) != engine.CodeStoreUnavailable || errors.Is(err, engine.ErrPingPending) || !strings.Contains(err.Error(), "disk on fire") {
			t.Fatalf("ping waiting for a failing read = %v, want store_unavailable with the cause", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a ping waiting for the read did not return once it was answered")
	}
	s.err = nil
	if err := e.Ping(ctx, time.Hour); err != nil {
		t.Fatalf("ping of a good store = %v", err)
	}
}

// TestPingsDoNotFailEachOther: many concurrent pings of a healthy store
// (a readiness probe hammered, next to the watchdog) all pass.
func TestPingsDoNotFailEachOther(t *testing.T) {
	e := engine.New(memstore.New(memstore.Options{}))
	ctx := context.Background()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := e.Ping(ctx, 10*time.Second); err != nil {
					t.Errorf("flooding ping: %v", err)
					return
				}
			}
		})
	}
	failed := 0
	for range 200 {
		if err := e.Ping(ctx, 10*time.Second); err != nil {
			failed++
		}
	}
	close(stop)
	wg.Wait()
	if failed != 0 {
		t.Errorf("%d of 200 pings failed next to 16 others on a healthy store", failed)
	}
}
