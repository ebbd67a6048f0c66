//go:build failpoint

package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/engine/memstore"
	"github.com/reserve/reserve/internal/failpoint"
)

// TestCheckUsesTheDaemonsClock runs with go test -tags failpoint: after the
// daemon's clock jumped past a hold's deadline and its places were
// reserved again, Check (as `reserved check` runs it) must judge the hold
// by that clock, as expired, and find reserved plus held within capacity.
func TestCheckUsesTheDaemonsClock(t *testing.T) {
	ctx := context.Background()
	clockFile := filepath.Join(t.TempDir(), "clock")
	t.Setenv(failpoint.EnvClock, clockFile)
	store := memstore.New(memstore.Options{})
	eng := engine.New(store, engine.WithClock(failpoint.Clock(time.Now)))
	if _, _, err := eng.PutWorkshop(ctx, "ws", engine.WorkshopSpec{Capacity: 2, MaxQuantity: 2}, nil); err != nil {
		t.Fatal(err)
	}
	hold, err := eng.Hold(ctx, "alice", "00000000-0000-4000-8000-000000000001", engine.HoldRequest{Workshop: "ws", Quantity: 2, TTLSeconds: 60})
	if err != nil || hold.Answer.Status != engine.StatusHeld {
		t.Fatalf("hold: %+v, %v", hold, err)
	}
	if err := os.WriteFile(clockFile, []byte("25h\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := eng.Reserve(ctx, "bob", "00000000-0000-4000-8000-000000000002", engine.Request{Workshop: "ws", Quantity: 2})
	if err != nil || res.Answer.Status != engine.StatusReserved {
		t.Fatalf("reserve after the hold's deadline: %+v, %v", res, err)
	}
	findings, err := engine.Check(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		t.Errorf("finding: %v", f)
	}
}
