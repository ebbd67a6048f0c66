package chaos

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/engine/memstore"
)

// TestRefusalReadsTheEnginesReasons checks that the checker reads the
// reason the engine gives each item of a refused atomic batch from the
// item's reason member: an item that could have been reserved, one with
// too few places, and the items of a batch refused before any was decided.
func TestRefusalReadsTheEnginesReasons(t *testing.T) {
	ctx := context.Background()
	e := engine.New(memstore.New(memstore.Options{}))
	if _, _, err := e.PutWorkshop(ctx, "ws-a", engine.WorkshopSpec{Capacity: 2, MaxQuantity: 2}, nil); err != nil {
		t.Fatal(err)
	}
	keys := []engine.OperationKey{"00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002", "00000000-0000-4000-8000-000000000003"}
	for _, c := range []struct {
		name    string
		entries []engine.BatchEntry
		want    []string
	}{
		{"decided in the write", []engine.BatchEntry{
			{Key: keys[0], Request: engine.Request{Workshop: "ws-a", Quantity: 1}},
			{Key: keys[1], Request: engine.Request{Workshop: "ws-a", Quantity: 2}},
		}, []string{refusalReservable, refusalUnavailable}},
		{"refused before the write", []engine.BatchEntry{
			{Key: keys[0], Request: engine.Request{Workshop: "ws-a", Quantity: 1}},
			{Key: keys[2], Invalid: engine.Errorf(engine.CodeRequestContract, "item 2: invalid")},
		}, []string{refusalUndecided, engine.CodeRequestContract}},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := e.Batch(ctx, "alice", c.entries, true)
			if err != nil || !res.Refused {
				t.Fatalf("Batch = %+v, %v; want refused", res, err)
			}
			for i, it := range res.Items {
				body, _ := json.Marshal(map[string]string{"code": engine.ErrorCode(it.Refusal), "detail": engine.ErrorMessage(it.Refusal), "reason": it.Reason})
				op := &Op{Code: engine.ErrorCode(it.Refusal), Body: body}
				if got := op.refusal(); got != c.want[i] {
					t.Errorf("item %d (%s) is read as %q, want %q", i+1, body, got, c.want[i])
				}
			}
		})
	}
}
