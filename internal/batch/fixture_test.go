package batch_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/reserve/reserve/internal/batch"
)

// TestPlanOfEarlierVersionsRoundTrip reads a plan exactly as earlier
// versions of reservectl wrote it (reserved, unavailable, rejected and
// unclear rows) and saves it again: the bytes must not change but for the
// version, which becomes this one's.
func TestPlanOfEarlierVersionsRoundTrip(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("testdata", "orders.csv.plan"))
	if err != nil {
		t.Fatal(err)
	}
	csv := filepath.Join(t.TempDir(), "orders.csv")
	if err := os.WriteFile(batch.PlanPath(csv), want, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := batch.OpenPlan(csv)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := f.Load()
	if err != nil {
		t.Fatal(err)
	}
	if s := p.Summary(); s != (batch.Summary{Rows: 4, Reserved: 1, Unavailable: 1, Rejected: 1, Unclear: 1}) {
		t.Errorf("summary %+v", s)
	}
	if err := f.Save(p); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(f.Path())
	if err != nil {
		t.Fatal(err)
	}
	want = bytes.Replace(want, []byte(`{"version":1,`), []byte(fmt.Sprintf(`{"version":%d,`, batch.PlanVersion)), 1)
	if !bytes.Equal(got, want) {
		t.Errorf("saved again:\n%s\nwant it as it was written, at version %d:\n%s", got, batch.PlanVersion, want)
	}
}
