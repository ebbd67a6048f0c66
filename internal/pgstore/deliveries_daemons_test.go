package pgstore_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/pgstore"
	"github.com/reserve/reserve/internal/pgstore/pgtest"
)

// TestTwoDaemonsRouteAndClaimOnce lets two stores (two daemons) on one
// database, each with goroutines that make reservations, cancellations
// and holds, goroutines that route events and goroutines that claim due
// deliveries with a long lease, all at once: every event is routed by one
// transaction only (the events routed add up to the events written; the
// reservation events, which no endpoint wants, make no delivery that a
// second routing would collide on), every delivery an event needs exists,
// and every delivery is claimed exactly once.
func TestTwoDaemonsRouteAndClaimOnce(t *testing.T) {
	dsn, _ := pgtest.FreshSchema(t)
	var c commits
	var r retries
	var engines [2]*engine.Engine
	for i := range engines {
		engines[i] = engine.New(mustOpenDSN(t, dsn, pgstore.Options{MaxConns: 3, MaxAttempts: 50, OnCommit: c.record, OnRetry: r.record}))
	}
	ctx := t.Context()
	root := engine.Principal{Actor: "root", Admin: true}
	both, err := engines[0].AddWebhook(ctx, root, "https://hooks.example.org/both", []string{engine.WebhookReservationCancelled, engine.WebhookHoldCreated})
	if err != nil {
		t.Fatal(err)
	}
	cancels, err := engines[1].AddWebhook(ctx, root, "https://hooks.example.org/cancels", []string{engine.WebhookReservationCancelled})
	if err != nil {
		t.Fatal(err)
	}
	const producers, rounds, routers, claimers = 4, 8, 3, 3
	for i := range producers {
		if _, _, err := engines[0].PutWorkshop(ctx, fmt.Sprint("w", i), engine.WorkshopSpec{Capacity: 1000, MaxQuantity: 2}, nil); err != nil {
			t.Fatal(err)
		}
	}

	var producing, routing sync.WaitGroup
	var produced, routed atomic.Int64
	// Routers and claimers that found nothing wait for more work, or
	// for the end of its supply.
	wrote, routedSome := make(chan struct{}, 1), make(chan struct{}, 1)
	signal := func(c chan struct{}) {
		select {
		case c <- struct{}{}:
		default:
		}
	}
	producersDone, routersDone := make(chan struct{}), make(chan struct{})
	done := func(c chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}
	var claimsMu sync.Mutex
	claims := map[string]int{}
	var wg sync.WaitGroup
	for d, eng := range engines {
		for p := range producers {
			producing.Go(func() {
				actor, workshop := fmt.Sprintf("p%d-%d", d, p), fmt.Sprint("w", p)
				for r := range rounds {
					out, err := eng.Reserve(ctx, actor, newKey(t), engine.Request{Workshop: workshop, Quantity: 1})
					if err != nil || out.Answer.Status != engine.StatusReserved {
						t.Errorf("reserve: %+v, %v", out, err)
						return
					}
					produced.Add(1)
					signal(wrote)
					if r%2 == 0 {
						if _, err := eng.Cancel(ctx, engine.Principal{Actor: actor}, newKey(t), out.Answer.ReservationID); err != nil {
							t.Errorf("cancel: %v", err)
							return
						}
						produced.Add(1)
						signal(wrote)
					}
					if r%3 == 0 {
						if _, err := eng.Hold(ctx, actor, newKey(t), engine.HoldRequest{Workshop: workshop, Quantity: 1, TTLSeconds: 600}); err != nil {
							t.Errorf("hold: %v", err)
							return
						}
						produced.Add(1)
						signal(wrote)
					}
				}
			})
		}
		for range routers {
			routing.Go(func() {
				for {
					last := done(producersDone)
					n, more, err := eng.RouteEvents(ctx, 5, engine.RouteOptions{})
					if err != nil {
						t.Errorf("route: %v", err)
						return
					}
					routed.Add(int64(n))
					switch {
					case n > 0:
						signal(routedSome)
					case more:
					case last:
						return
					default:
						select {
						case <-wrote:
						case <-producersDone:
						}
					}
				}
			})
		}
		for range claimers {
			wg.Go(func() {
				for {
					last := done(routersDone)
					jobs, err := eng.ClaimDueDeliveries(ctx, 4, time.Hour)
					if err != nil {
						t.Errorf("claim: %v", err)
						return
					}
					claimsMu.Lock()
					for _, j := range jobs {
						claims[j.Delivery.ID]++
					}
					claimsMu.Unlock()
					switch {
					case len(jobs) > 0:
					case last:
						return
					default:
						select {
						case <-routedSome:
						case <-routersDone:
						}
					}
				}
			})
		}
	}
	producing.Wait()
	close(producersDone)
	routing.Wait()
	close(routersDone)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	want := map[string]int{}
	var events int64
	s := mustOpenDSN(t, dsn, pgstore.Options{})
	err = s.View(ctx, func(tx engine.Tx) error {
		events = 0
		if err := tx.ForEachEvent(func(ev engine.Event) error {
			events++
			switch ev.Type {
			case engine.EventCancelled:
				want[engine.DeliveryIDOf(ev.ID, both.ID)] = 1
				want[engine.DeliveryIDOf(ev.ID, cancels.ID)] = 1
			case engine.EventHoldCreated:
				want[engine.DeliveryIDOf(ev.ID, both.ID)] = 1
			}
			return nil
		}); err != nil {
			return err
		}
		return tx.ForEachUnroutedEvent(func(ev engine.Event) error {
			t.Errorf("event %s (%s) is not routed", ev.ID, ev.Type)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if events != produced.Load() || routed.Load() != events {
		t.Fatalf("%d events written, %d stored, %d routed; want each routed once", produced.Load(), events, routed.Load())
	}
	stored := map[string]int{}
	err = s.View(ctx, func(tx engine.Tx) error {
		clear(stored)
		return tx.ForEachDeliveryIn(engine.DeliveryPending, "", func(d engine.Delivery) error {
			stored[d.ID] = d.Attempts
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(stored, want) {
		t.Errorf("deliveries (id: attempts) = %v, want %v", stored, want)
	}
	if !maps.Equal(claims, want) {
		t.Errorf("claims per delivery = %v, want each of %d deliveries once", claims, len(want))
	}
	findings, err := s.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		t.Error(f)
	}
	t.Logf("%d commits, %d of a group; retries %v", len(c.get()), len(slices.DeleteFunc(c.get(), func(n int) bool { return n < 2 })), r.codes)
}

// TestExpiredCorrectionNamesItsDelivery: the receipt of an operator's
// correction of a delivery names the delivery, and so does the tombstone
// that replaces it once it expires.
func TestExpiredCorrectionNamesItsDelivery(t *testing.T) {
	s := mustOpen(t, pgstore.Options{})
	clock := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	eng := engine.New(s, engine.WithClock(func() time.Time { return clock }))
	ctx := t.Context()
	root := engine.Principal{Actor: "root", Admin: true}
	if _, _, err := eng.PutWorkshop(ctx, "kiln", engine.WorkshopSpec{Capacity: 5, MaxQuantity: 1}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.AddWebhook(ctx, root, "https://hooks.example.org/all", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Reserve(ctx, "ada", newKey(t), engine.Request{Workshop: "kiln", Quantity: 1}); err != nil {
		t.Fatal(err)
	}
	if n, _, err := eng.RouteEvents(ctx, 10, engine.RouteOptions{}); err != nil || n != 1 {
		t.Fatalf("RouteEvents = %d, %v", n, err)
	}
	page, err := eng.Deliveries(ctx, root, engine.DeliveryFilter{})
	if err != nil || len(page.Deliveries) != 1 {
		t.Fatalf("deliveries = %+v, %v", page, err)
	}
	id, key := page.Deliveries[0].ID, newKey(t)
	if out, err := eng.SkipDelivery(ctx, root, key, id); err != nil || out.Answer.DeliveryID != id {
		t.Fatalf("SkipDelivery = %+v, %v", out, err)
	}
	if out, err := engine.New(s).SkipDelivery(ctx, root, key, id); err != nil || !out.Replayed || out.Answer.DeliveryID != id {
		t.Fatalf("replayed SkipDelivery = %+v, %v", out, err)
	}
	clock = clock.Add(48 * time.Hour)
	if n, err := eng.ExpireReceipts(ctx, 24*time.Hour, 100); err != nil || n != 2 {
		t.Fatalf("ExpireReceipts = %d, %v", n, err)
	}
	_, err = eng.SkipDelivery(ctx, root, key, id)
	var expired *engine.ExpiredError
	if !errors.As(err, &expired) || expired.Tombstone.Answer.DeliveryID != id {
		t.Fatalf("retry of the expired correction = %v, want expired naming delivery %s", err, id)
	}
}
