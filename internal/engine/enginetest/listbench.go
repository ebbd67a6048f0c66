package enginetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/engine"
)

// ListBenchRecords is how many reservations the busy actor of
// BenchmarkLists has.
const ListBenchRecords = 100_000

// BenchmarkLists measures pages of a person's list on store: of an actor
// with ListBenchRecords reservations spread over four workshops ("busy")
// and of one with four ("fresh"): the first page of one record, the same
// page filtered by workshop, a page of one record below a cursor in the
// middle of the busy actor's history, and a walk over every page of
// 1,000. A list that seeks to its cursor costs about the same for both
// actors, and a walk costs in proportion to the records it returns.
func BenchmarkLists(b *testing.B, store engine.Store) {
	ctx := context.Background()
	eng := engine.New(store)
	const workshops = 4
	for i := range workshops {
		if _, _, err := eng.PutWorkshop(ctx, fmt.Sprint("list-", i), engine.WorkshopSpec{Capacity: ListBenchRecords, MaxQuantity: 1}, nil); err != nil {
			b.Fatal(err)
		}
	}
	fill := func(actor string, n int) {
		const step = 5000
		for done := 0; done < n; done += step {
			items := make([]engine.BatchItem, min(step, n-done))
			for i := range items {
				items[i] = engine.BatchItem{Actor: actor, Key: engine.OperationKey(uuid.NewString()),
					Request: engine.Request{Workshop: fmt.Sprint("list-", (done+i)%workshops), Quantity: 1}}
			}
			if _, err := eng.ReserveBatch(ctx, items); err != nil {
				b.Fatal(err)
			}
		}
	}
	fill("busy", ListBenchRecords)
	fill("fresh", workshops)
	page := func(b *testing.B, actor string, f engine.ListFilter) (n int, next string) {
		rs, next, err := eng.Reservations(ctx, engine.Principal{Actor: actor}, f)
		if err != nil || len(rs) == 0 {
			b.Fatalf("page of %s (%+v) = %d reservations, %v", actor, f, len(rs), err)
		}
		return len(rs), next
	}
	middle := ""
	for range ListBenchRecords / 2 / engine.MaxListLimit {
		_, middle = page(b, "busy", engine.ListFilter{Status: engine.ListAll, Limit: engine.MaxListLimit, Cursor: middle})
	}
	for _, actor := range []string{"fresh", "busy"} {
		for _, c := range []struct {
			name string
			f    engine.ListFilter
		}{
			{"first page", engine.ListFilter{Status: engine.ListAll, Limit: 1}},
			{"workshop page", engine.ListFilter{Status: engine.ListAll, Workshop: "list-1", Limit: 1}},
			{"active page", engine.ListFilter{Limit: 1}},
		} {
			b.Run(c.name+"/"+actor, func(b *testing.B) {
				for b.Loop() {
					page(b, actor, c.f)
				}
			})
		}
		b.Run("walk of pages of 1000/"+actor, func(b *testing.B) {
			for b.Loop() {
				total, f := 0, engine.ListFilter{Status: engine.ListAll, Limit: engine.MaxListLimit}
				for {
					n, next := page(b, actor, f)
					if total += n; next == "" {
						break
					}
					f.Cursor = next
				}
				if want := map[string]int{"busy": ListBenchRecords, "fresh": workshops}[actor]; total != want {
					b.Fatalf("walk of %s's pages = %d reservations, want %d", actor, total, want)
				}
			}
		})
	}
	b.Run("page below a cursor in the middle/busy", func(b *testing.B) {
		for b.Loop() {
			page(b, "busy", engine.ListFilter{Status: engine.ListAll, Limit: 1, Cursor: middle})
		}
	})
}

// BenchmarkDecisionsWithHistory measures one reservation decision of an
// actor with ListBenchRecords reservations in the workshop it reserves in
// ("busy") and of one with none ("fresh"), in a workshop without a limit
// per person and in one with a limit (high enough for both), whose check
// reads the actor's records in the workshop. A decision whose cost does
// not grow with an actor's history costs about the same for both.
func BenchmarkDecisionsWithHistory(b *testing.B, store engine.Store) {
	ctx := context.Background()
	eng := engine.New(store)
	for _, w := range []struct {
		id  string
		max int
	}{{"history-open", 0}, {"history-limited", 2 * ListBenchRecords}} {
		// The limit is set once the history is made, which it would make
		// slow to make.
		spec := engine.WorkshopSpec{Capacity: 1_000_000_000, MaxQuantity: 1}
		if _, _, err := eng.PutWorkshop(ctx, w.id, spec, nil); err != nil {
			b.Fatal(err)
		}
		const step = 5000
		for done := 0; done < ListBenchRecords; done += step {
			items := make([]engine.BatchItem, step)
			for i := range items {
				items[i] = engine.BatchItem{Actor: "busy", Key: newKey(), Request: engine.Request{Workshop: w.id, Quantity: 1}}
			}
			if _, err := eng.ReserveBatch(ctx, items); err != nil {
				b.Fatal(err)
			}
		}
		spec.Schedule.MaxPerPerson = w.max
		if _, _, err := eng.PutWorkshop(ctx, w.id, spec, nil); err != nil {
			b.Fatal(err)
		}
		for _, actor := range []string{"fresh", "busy"} {
			b.Run(w.id+"/"+actor, func(b *testing.B) {
				for b.Loop() {
					out, err := eng.Reserve(ctx, actor, newKey(), engine.Request{Workshop: w.id, Quantity: 1})
					if err != nil || out.Answer.Status != engine.StatusReserved {
						b.Fatalf("reserve as %s in %s = %+v, %v", actor, w.id, out.Answer, err)
					}
				}
			})
		}
	}
}
