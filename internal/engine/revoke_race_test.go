package engine_test

import (
	"context"
	"sync"
	"testing"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/engine/memstore"
)

// pausingStore lets a test hold a read transaction's caller between the end
// of its read and its return, as a slow scheduler or a slow store could.
type pausingStore struct {
	engine.Store
	mu      sync.Mutex
	armed   bool
	reached chan struct{}
	release chan struct{}
}

func (s *pausingStore) View(ctx context.Context, fn func(engine.Tx) error) error {
	err := s.Store.View(ctx, fn)
	s.mu.Lock()
	armed := s.armed
	s.armed = false
	s.mu.Unlock()
	if armed {
		close(s.reached)
		<-s.release
	}
	return err
}

// TestRevokeRacesCachedRead: an authentication whose read found the
// token before a revocation committed puts its entry in the cache after
// the revocation cleared it; on an exclusive store the revocation does not
// wait, so a request sent after the revocation's answer is still accepted.
func TestRevokeRacesCachedRead(t *testing.T) {
	ctx := context.Background()
	st := &pausingStore{Store: memstore.New(memstore.Options{}), reached: make(chan struct{}), release: make(chan struct{})}
	eng := engine.New(st, engine.WithExclusiveStore())
	tok, info, err := eng.IssueToken(ctx, engine.TokenSpec{Actor: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	st.armed = true
	st.mu.Unlock()
	inflight := make(chan error, 1)
	go func() {
		_, err := eng.Authenticate(ctx, tok)
		inflight <- err
	}()
	<-st.reached
	if err := eng.RevokeToken(ctx, info.ID); err != nil {
		t.Fatal(err)
	}
	close(st.release)
	<-inflight // In flight during the revocation: either answer is fine.
	if p, err := eng.Authenticate(ctx, tok); err == nil {
		t.Fatalf("a request sent after the revocation answered was accepted as %+v", p)
	}
}
