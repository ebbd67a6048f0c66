package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
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
// while that read still waits, further pings fail at once instead of
// piling up reads; once the store answers, a read error fails the ping and
// a good read passes it.
func TestPingAnswersForAHangingStore(t *testing.T) {
	s := &viewStore{release: make(chan struct{})}
	e := engine.New(s)
	ctx := context.Background()
	if err := e.Ping(ctx, 10*time.Millisecond); engine.ErrorCode(err) != engine.CodeStoreUnavailable {
		t.Fatalf("ping of a hanging store = %v, want store_unavailable", err)
	}
	// A generous timeout: the ping must fail at once, not wait for it.
	done := make(chan error, 1)
	go func() { done <- e.Ping(ctx, time.Hour) }()
	select {
	case err := <-done:
		if engine.ErrorCode(err) != engine.CodeStoreUnavailable {
			t.Fatalf("ping while a read waits = %v, want store_unavailable", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a ping while an earlier read waits did not return")
	}
	s.err = errors.New("disk on fire")
	close(s.release)
	deadline := time.Now().Add(30 * time.Second)
	var err error
	for err = e.Ping(ctx, time.Hour); errors.Is(err, engine.ErrPingPending) && time.Now().Before(deadline); err = e.Ping(ctx, time.Hour) {
		time.Sleep(time.Millisecond)
	}
	if engine.ErrorCode(err) != engine.CodeStoreUnavailable || errors.Is(err, engine.ErrPingPending) {
		t.Fatalf("ping of a failing store = %v, want store_unavailable with the cause", err)
	}
	s.err = nil
	if err := e.Ping(ctx, time.Hour); err != nil {
		t.Fatalf("ping of a good store = %v", err)
	}
}
