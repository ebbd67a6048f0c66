// Package seed fills a store with many reservations through the engine, so
// benchmarks and tests can start from a large, fully consistent database
// (every reservation with its receipt, counters right). It works on any
// engine.Store and must not import a particular store or front end.
package seed

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/engine"
)

// Plan says what to generate: PerWorkshop reservations of one place in each
// of Workshops (created with enough capacity if missing), made by Actors
// different actors, Batch intents per transaction.
type Plan struct {
	Workshops   []string
	PerWorkshop int
	Actors      int // Zero means 100.
	Batch       int // Zero means 10,000.
	// Progress, if set, is called after each committed batch with the number
	// of reservations made so far.
	Progress func(done int)
}

// Run generates plan through eng. Each batch is one transaction of real
// engine decisions (engine.ReserveBatch), so the result passes Check.
func Run(ctx context.Context, eng *engine.Engine, plan Plan) error {
	if plan.Actors <= 0 {
		plan.Actors = 100
	}
	if plan.Batch <= 0 {
		plan.Batch = 10_000
	}
	for _, id := range plan.Workshops {
		w, err := eng.Workshop(ctx, id)
		capacity := max(1_000_000_000, plan.PerWorkshop)
		switch {
		case engine.ErrorCode(err) == engine.CodeUnknownWorkshop:
			_, _, err = eng.PutWorkshop(ctx, id, engine.WorkshopSpec{Capacity: capacity, MaxQuantity: 10, Title: "Seeded " + id}, nil)
		case err == nil && w.Available < plan.PerWorkshop:
			_, _, err = eng.PutWorkshop(ctx, id, engine.WorkshopSpec{Capacity: w.Reserved + plan.PerWorkshop}, nil)
		}
		if err != nil {
			return fmt.Errorf("seed: prepare workshop %s: %w", id, err)
		}
	}
	done := 0
	total := len(plan.Workshops) * plan.PerWorkshop
	for done < total {
		n := min(plan.Batch, total-done)
		// Interleave workshops and actors so every batch touches all of them.
		items := make([]engine.BatchItem, n)
		for i := range items {
			items[i] = engine.BatchItem{
				Actor:   fmt.Sprintf("seed-%d", (done+i)%plan.Actors),
				Key:     engine.OperationKey(uuid.NewString()),
				Request: engine.Request{Workshop: plan.Workshops[(done+i)%len(plan.Workshops)], Quantity: 1},
			}
		}
		verdicts, err := eng.ReserveBatch(ctx, items)
		if err != nil {
			return fmt.Errorf("seed: %w", err)
		}
		for i, v := range verdicts {
			if v.Refusal != nil || v.Outcome.Answer.Status != engine.StatusReserved {
				return fmt.Errorf("seed: intent of %s: status %q, %v", items[i].Actor, v.Outcome.Answer.Status, v.Refusal)
			}
		}
		done += n
		if plan.Progress != nil {
			plan.Progress(done)
		}
	}
	return nil
}
