package batch_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/batch"
)

// lastUUIDv4PlanVersion is the last plan version whose readers accept only
// UUIDv4 operation keys: reservectl before UUIDv7 keys reads a plan of that
// version with UUIDv7 keys as corrupt ("move it away to import the CSV as
// new intents"), and an operator who does so reserves every row that the
// plan's import had reserved a second time. A plan of a later version it
// refuses as newer.
const lastUUIDv4PlanVersion = 1

// TestPlanOfTimeOrderedKeysIsNewer: a plan whose rows have UUIDv7 keys
// carries a version that a reservectl reading only UUIDv4 keys refuses as
// newer, not as corrupt.
func TestPlanOfTimeOrderedKeysIsNewer(t *testing.T) {
	csv := filepath.Join(t.TempDir(), "orders.csv")
	p := mustPlan(t, []batch.Row{{Line: 1, Workshop: "w-a", Quantity: 1}})
	if !p.Rows[0].Key.IsTimeOrdered() {
		t.Fatalf("a new plan's key %s is not a UUIDv7", p.Rows[0].Key)
	}
	f, err := batch.OpenPlan(csv)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Save(p); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(batch.PlanPath(csv))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Version <= lastUUIDv4PlanVersion {
		t.Errorf("a plan with the UUIDv7 key %s has version %d, which reservectl of plan version %d reads as corrupt", p.Rows[0].Key, rec.Version, lastUUIDv4PlanVersion)
	}
}

// TestNewerPlanIsNotCorrupt: a plan of a later version is refused as
// written by a newer reservectl, without the advice to move it away,
// which would import its decided rows again as new intents.
func TestNewerPlanIsNotCorrupt(t *testing.T) {
	csv := filepath.Join(t.TempDir(), "orders.csv")
	newer := fmt.Sprintf(`{"version":%d,"csv":"orders.csv","server":"unix:/run/reserved/reserved.sock","actor":"alice","created_at":"2026-12-02T12:00:00Z","rows":[]}`, batch.PlanVersion+1)
	if err := os.WriteFile(batch.PlanPath(csv), []byte(newer+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := batch.OpenPlan(csv)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = f.Load()
	if err == nil || !strings.Contains(err.Error(), "newer than this reservectl understands") || strings.Contains(err.Error(), "move it away") || strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("Load of a newer plan: %v; want it refused as newer, not as corrupt", err)
	}
}
