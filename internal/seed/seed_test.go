package seed_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/seed"
)

func TestRunMakesAConsistentDatabase(t *testing.T) {
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "seed.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	eng := engine.New(s)
	if _, _, err := eng.PutWorkshop(ctx, "target", engine.WorkshopSpec{Capacity: 10}, nil); err != nil {
		t.Fatal(err)
	}
	var progress []int
	plan := seed.Plan{Workshops: []string{"target", "other"}, PerWorkshop: 700, Actors: 7, Batch: 300,
		Progress: func(done int) { progress = append(progress, done) }}
	if err := seed.Run(ctx, eng, plan); err != nil {
		t.Fatal(err)
	}
	for _, id := range plan.Workshops {
		w, err := eng.Workshop(ctx, id)
		if err != nil || w.Reserved != 700 {
			t.Fatalf("workshop %s = %+v, %v; want 700 reserved", id, w, err)
		}
	}
	if len(progress) != 5 || progress[4] != 1400 {
		t.Fatalf("progress calls = %v", progress)
	}
	findings, err := s.Check(ctx)
	if err != nil || len(findings) != 0 {
		t.Fatalf("Check = %v, %v", findings, err)
	}
}
