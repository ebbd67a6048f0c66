package memstore_test

import (
	"testing"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/engine/enginetest"
	"github.com/reserve/reserve/internal/engine/memstore"
)

func newStore(opts memstore.Options) enginetest.NewStore {
	return func(tb testing.TB) engine.Store {
		s := memstore.New(opts)
		tb.Cleanup(func() { s.Close() })
		return s
	}
}

// TestConformance runs the engine's whole contract on the reference store.
func TestConformance(t *testing.T) {
	enginetest.Run(t, newStore(memstore.Options{}))
}

// TestConformanceRunTwice runs it again with every transaction function run
// twice, the first run discarded, as a batching or retrying store may: a
// transaction function with an effect outside its Tx fails here.
func TestConformanceRunTwice(t *testing.T) {
	enginetest.Run(t, newStore(memstore.Options{RunTwice: true}))
}

// TestViewRefusesWrites checks that a read-only transaction cannot write, so
// the suite cannot pass on a View that silently commits.
func TestViewRefusesWrites(t *testing.T) {
	s := memstore.New(memstore.Options{})
	defer s.Close()
	err := s.View(t.Context(), func(tx engine.Tx) error {
		return tx.PutWorkshop(engine.Workshop{ID: "w1", Capacity: 1})
	})
	if err == nil {
		t.Fatal("PutWorkshop inside View succeeded")
	}
	s.View(t.Context(), func(tx engine.Tx) error {
		if _, ok, _ := tx.Workshop("w1"); ok {
			t.Error("the refused write is visible")
		}
		return nil
	})
}

// TestClosedStore checks that a closed store refuses transactions.
func TestClosedStore(t *testing.T) {
	s := memstore.New(memstore.Options{})
	s.Close()
	if err := s.View(t.Context(), func(engine.Tx) error { return nil }); err != memstore.ErrClosed {
		t.Fatalf("View after Close: %v, want ErrClosed", err)
	}
	if err := s.Update(t.Context(), func(engine.Tx) error { return nil }); err != memstore.ErrClosed {
		t.Fatalf("Update after Close: %v, want ErrClosed", err)
	}
}
