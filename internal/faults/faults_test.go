package faults_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/engine/memstore"
	"github.com/reserve/reserve/internal/faults"
)

// rerunning runs every Update's function twice and rolls the first run
// back whatever it returned, as bbolt's Batch does with a function that
// failed in a batch and a SQL store with a serialization failure.
type rerunning struct{ engine.Store }

var errRerun = errors.New("run again")

func (s rerunning) Update(ctx context.Context, fn func(engine.Tx) error) error {
	err := s.Store.Update(ctx, func(tx engine.Tx) error {
		fn(tx)
		return errRerun
	})
	if !errors.Is(err, errRerun) {
		return err
	}
	return s.Store.Update(ctx, fn)
}

// TestReceiptFaultCountsOperations: a fault armed with count n fails
// exactly n operations, however often the store runs each transaction.
func TestReceiptFaultCountsOperations(t *testing.T) {
	ctx := context.Background()
	in := faults.New(slog.New(slog.DiscardHandler))
	eng := engine.New(in.Store(rerunning{memstore.New(memstore.Options{})}))
	if _, _, err := eng.PutWorkshop(ctx, "go-basics", engine.WorkshopSpec{Capacity: 10, MaxQuantity: 1}, nil); err != nil {
		t.Fatal(err)
	}
	in.Arm(api.Fault{Fault: api.FaultFailReceiptWrite, Count: 2})
	failed := 0
	for i := range 5 {
		key := engine.OperationKey("f47ac10b-58cc-4372-a567-0e02b2c3d47" + string(rune('0'+i)))
		_, err := eng.Reserve(ctx, "alice", key, engine.Request{Workshop: "go-basics", Quantity: 1})
		switch {
		case errors.Is(err, faults.ErrReceiptWrite):
			failed++
		case err != nil:
			t.Fatal(err)
		}
	}
	if failed != 2 {
		t.Fatalf("%d of 5 reservations failed, want the 2 armed", failed)
	}
}
