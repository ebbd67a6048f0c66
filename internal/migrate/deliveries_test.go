package migrate_test

import (
	"bytes"
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/engine/memstore"
	"github.com/reserve/reserve/internal/migrate"
)

// routed is what a store keeps of the routing of events: the endpoints,
// the deliveries in every state, the events (hold ids included), which of
// them are unrouted and which pending for the simple channels, and the
// profiles (with their addresses).
type routed struct {
	endpoints  []engine.WebhookEndpoint
	deliveries []engine.Delivery
	events     []engine.Event
	unrouted   []string
	pending    []string
	profiles   []engine.Profile
}

func routedOf(t *testing.T, s engine.Store) routed {
	t.Helper()
	var r routed
	err := s.View(context.Background(), func(tx engine.Tx) error {
		r = routed{}
		if err := tx.ForEachWebhookEndpoint(func(w engine.WebhookEndpoint) error { r.endpoints = append(r.endpoints, w); return nil }); err != nil {
			return err
		}
		for _, state := range engine.DeliveryStates {
			if err := tx.ForEachDeliveryIn(state, "", func(d engine.Delivery) error { r.deliveries = append(r.deliveries, d); return nil }); err != nil {
				return err
			}
		}
		if err := tx.ForEachEvent(func(e engine.Event) error { r.events = append(r.events, e); return nil }); err != nil {
			return err
		}
		if err := tx.ForEachUnroutedEvent(func(e engine.Event) error { r.unrouted = append(r.unrouted, e.ID); return nil }); err != nil {
			return err
		}
		if err := tx.ForEachPendingEvent(func(e engine.Event) error { r.pending = append(r.pending, e.ID); return nil }); err != nil {
			return err
		}
		return tx.ForEachProfile(func(p engine.Profile) error { r.profiles = append(r.profiles, p); return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// routingSource builds a bbolt store whose events were routed, in part:
// two webhook endpoints (one for cancellations only) added before the
// events, a person with a verified address, reservations, a cancellation
// and holds in every state, their deliveries claimed and finished as
// delivered, failed, pending again later, or skipped by an operator's
// correction, and then events left unrouted. It returns the store, the
// skip's key, delivery and answer, and the source's clock.
func routingSource(t *testing.T) (s *boltstore.Store, skipKey engine.OperationKey, skipped string, skipAnswer engine.Answer, now time.Time) {
	t.Helper()
	s = newBolt(t, "from.db")
	ctx := context.Background()
	now = time.Date(2026, 12, 2, 12, 0, 0, 123456789, time.UTC)
	eng := engine.New(s, engine.WithClock(func() time.Time { return now }))
	admin := engine.Principal{Actor: "root", Admin: true}
	if _, _, err := eng.PutWorkshop(ctx, "go-basics", engine.WorkshopSpec{Capacity: 10, MaxQuantity: 2}, nil); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		url   string
		types []string
	}{{"https://hooks.example.org/all", nil}, {"https://hooks.example.org/cancels", []string{engine.WebhookReservationCancelled}}} {
		if _, err := eng.AddWebhook(ctx, admin, w.url, w.types); err != nil {
			t.Fatal(err)
		}
	}
	if err := eng.KeepVerifiedEmail(ctx, "alice", "alice@example.org"); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	key := func() engine.OperationKey { return engine.OperationKey(uuid.NewString()) }
	r, err := eng.Reserve(ctx, "alice", key(), engine.Request{Workshop: "go-basics", Quantity: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Cancel(ctx, engine.Principal{Actor: "alice"}, key(), r.Answer.ReservationID); err != nil {
		t.Fatal(err)
	}
	for _, settle := range []engine.OperationKind{engine.OperationConfirm, engine.OperationRelease} {
		h, err := eng.Hold(ctx, "bob", key(), engine.HoldRequest{Workshop: "go-basics", Quantity: 1, TTLSeconds: 600})
		if err != nil {
			t.Fatal(err)
		}
		if settle == engine.OperationConfirm {
			_, err = eng.Confirm(ctx, engine.Principal{Actor: "bob"}, key(), h.Answer.HoldID)
		} else {
			_, err = eng.Release(ctx, engine.Principal{Actor: "bob"}, key(), h.Answer.HoldID)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, more, err := eng.RouteEvents(ctx, 100, engine.RouteOptions{Mail: true}); err != nil || more {
		t.Fatalf("RouteEvents: more %t, %v", more, err)
	}
	now = now.Add(time.Second)
	jobs, err := eng.ClaimDueDeliveries(ctx, 3, time.Minute)
	if err != nil || len(jobs) != 3 {
		t.Fatalf("ClaimDueDeliveries = %d jobs, %v", len(jobs), err)
	}
	for i, a := range []engine.Attempt{
		{State: engine.DeliveryDelivered, Status: 204},
		{State: engine.DeliveryFailed, Status: 410, Error: "HTTP 410 Gone"},
		{State: engine.DeliveryPending, NextAttemptAt: now.Add(time.Hour), Status: 503, Error: "HTTP 503"},
	} {
		if err := eng.FinishDelivery(ctx, jobs[i].Delivery, a); err != nil {
			t.Fatal(err)
		}
	}
	page, err := eng.Deliveries(ctx, admin, engine.DeliveryFilter{Limit: 1})
	if err != nil || len(page.Deliveries) != 1 {
		t.Fatalf("pending deliveries = %+v, %v", page, err)
	}
	skipKey, skipped = key(), page.Deliveries[0].ID
	out, err := eng.SkipDelivery(ctx, admin, skipKey, skipped)
	if err != nil || out.Answer.Status != engine.StatusSkipped {
		t.Fatalf("SkipDelivery = %+v, %v", out, err)
	}
	// Decided after the routing: unrouted.
	now = now.Add(time.Second)
	if _, err := eng.Hold(ctx, "carol", key(), engine.HoldRequest{Workshop: "go-basics", Quantity: 1, TTLSeconds: 600}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Reserve(ctx, "carol", key(), engine.Request{Workshop: "go-basics", Quantity: 1}); err != nil {
		t.Fatal(err)
	}
	return s, skipKey, skipped, out.Answer, now
}

// TestCopyKeepsRouting copies a store whose events were routed in part
// into bbolt and into memory: the target holds the same endpoints (with
// their secrets), the same deliveries in every state, the same events with
// their hold ids, and routes only what the source had not routed; the
// simple channels wait for the same events, profiles keep their
// addresses, and the skip of a delivery replays byte for byte.
func TestCopyKeepsRouting(t *testing.T) {
	for name, to := range map[string]func(t *testing.T) engine.Store{
		"bolt":   func(t *testing.T) engine.Store { return newBolt(t, "to.db") },
		"memory": func(*testing.T) engine.Store { return memstore.New(memstore.Options{}) },
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			from, skipKey, skipped, skipAnswer, now := routingSource(t)
			want := routedOf(t, from)
			if len(want.endpoints) != 2 || len(want.unrouted) != 2 || len(want.pending) != 4 || len(want.deliveries) < 8 {
				t.Fatalf("source lacks routing: %d endpoints, %d deliveries, unrouted %q, pending %q",
					len(want.endpoints), len(want.deliveries), want.unrouted, want.pending)
			}
			states := map[engine.DeliveryState]bool{}
			for _, d := range want.deliveries {
				states[d.State] = true
			}
			if len(states) != len(engine.DeliveryStates) {
				t.Fatalf("source deliveries in states %v, want every state", states)
			}
			target := to(t)
			c, err := migrate.Copy(ctx, from, target)
			if err != nil {
				t.Fatal(err)
			}
			if c.Webhooks != 2 || c.Deliveries != len(want.deliveries) || counts(t, target) != counts(t, from) {
				t.Errorf("copied %+v; the target holds %+v, the source %+v", c, counts(t, target), counts(t, from))
			}
			got := routedOf(t, target)
			for _, diff := range []struct {
				what      string
				got, want any
			}{
				{"endpoints", got.endpoints, want.endpoints}, {"deliveries", got.deliveries, want.deliveries},
				{"unrouted events", got.unrouted, want.unrouted}, {"pending events", got.pending, want.pending},
				{"profiles", got.profiles, want.profiles},
			} {
				if !reflect.DeepEqual(diff.got, diff.want) {
					t.Errorf("%s after the copy:\n got %+v\nwant %+v", diff.what, diff.got, diff.want)
				}
			}
			if len(got.events) != len(want.events) {
				t.Fatalf("%d events after the copy, want %d", len(got.events), len(want.events))
			}
			for i, e := range got.events {
				w := want.events[i]
				if e.ID != w.ID || e.HoldID != w.HoldID || e.ReservationID != w.ReservationID || !bytes.Equal(payload(t, e), payload(t, w)) {
					t.Errorf("event after the copy %+v, want %+v", e, w)
				}
			}
			eng := engine.New(target, engine.WithClock(func() time.Time { return now }))
			admin := engine.Principal{Actor: "root", Admin: true}
			if out, err := eng.SkipDelivery(ctx, admin, skipKey, skipped); err != nil || !out.Replayed || !bytes.Equal(out.Answer.JSON(), skipAnswer.JSON()) {
				t.Errorf("replay of the skip after the copy = %s (replayed %t), %v; want %s", out.Answer.JSON(), out.Replayed, err, skipAnswer.JSON())
			}
			if n, _, err := eng.RouteEvents(ctx, 100, engine.RouteOptions{Mail: true}); err != nil || n != len(want.unrouted) {
				t.Errorf("RouteEvents after the copy = %d, %v; want the %d the source had not routed", n, err, len(want.unrouted))
			}
			if findings, err := engine.CheckAt(ctx, target, now); err != nil || len(findings) != 0 {
				t.Errorf("Check of the target = %v, %v", findings, err)
			}
		})
	}
}

// payload returns e's payload.
func payload(t *testing.T, e engine.Event) []byte {
	t.Helper()
	p, err := e.Payload()
	if err != nil {
		t.Fatal(err)
	}
	return p
}
