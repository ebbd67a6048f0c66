package boltstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
)

// TestDeliveryIndexes: deliveries in every state (pending, claimed and
// due again later, delivered, failed, skipped) have one entry by state,
// and the pending ones one by when they are due, which PutDelivery moves
// with them; only a reservation's event waits for the simple channels,
// every event for routing. Times beyond the years of int64 nanoseconds
// keep their order against a bound: every delivery is due by the year
// 9999. Check is clean on them, read-only too, and names an entry that is
// missing, one left behind (which the scans pass over) and an unrouted
// event that does not exist.
func TestDeliveryIndexes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reserved.db")
	s := mustOpenPath(t, path)
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	eng := engine.New(s, engine.WithClock(func() time.Time { return now }))
	admin := engine.Principal{Actor: "root", Admin: true}
	if _, _, err := eng.PutWorkshop(ctx, "go-basics", engine.WorkshopSpec{Capacity: 10, MaxQuantity: 1}, nil); err != nil {
		t.Fatal(err)
	}
	w, err := eng.AddWebhook(ctx, admin, "https://hooks.example.org/all", nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if _, err := eng.Reserve(ctx, "alice", engine.OperationKey(uuid.NewString()), engine.Request{Workshop: "go-basics", Quantity: 1}); err != nil {
			t.Fatal(err)
		}
	}
	held, err := eng.Hold(ctx, "bob", engine.OperationKey(uuid.NewString()), engine.HoldRequest{Workshop: "go-basics", Quantity: 1, TTLSeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	if pending, err := eng.CountPendingEvents(ctx); err != nil || pending != 4 {
		t.Fatalf("pending events = %d, %v; want the 4 reservations' and not the hold's", pending, err)
	}
	if n, _, err := eng.RouteEvents(ctx, 100, engine.RouteOptions{}); err != nil || n != 5 {
		t.Fatalf("RouteEvents = %d, %v; want 5", n, err)
	}
	jobs, err := eng.ClaimDueDeliveries(ctx, 4, time.Minute)
	if err != nil || len(jobs) != 4 || jobs[3].Event.Type != engine.EventReserved {
		t.Fatalf("ClaimDueDeliveries = %+v, %v; want the 4 reservations' deliveries first", jobs, err)
	}
	finish := map[int]engine.Attempt{
		0: {State: engine.DeliveryDelivered, Status: 204},
		1: {State: engine.DeliveryFailed, Status: 410, Error: "HTTP 410 Gone"},
		2: {State: engine.DeliveryPending, NextAttemptAt: now.Add(time.Hour), Status: 503},
	}
	for i, a := range finish {
		if err := eng.FinishDelivery(ctx, jobs[i].Delivery, a); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := eng.SkipDelivery(ctx, admin, engine.OperationKey(uuid.NewString()), jobs[3].Delivery.ID); err != nil {
		t.Fatal(err)
	}
	// Due now: the hold's delivery, never claimed. Due in an hour: the
	// one told to retry then. Due in a minute: none, the claim moved on.
	due := func(s *boltstore.Store, through time.Time) []string {
		var ids []string
		err := s.View(ctx, func(tx engine.Tx) error {
			ids = nil
			return tx.ForEachDueDelivery(through, func(d engine.Delivery) error { ids = append(ids, d.ID); return nil })
		})
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	var holdEvent string
	err = s.View(ctx, func(tx engine.Tx) error {
		return tx.ForEachEvent(func(ev engine.Event) error {
			if ev.HoldID == held.Answer.HoldID {
				holdEvent = ev.ID
			}
			return nil
		})
	})
	if err != nil || holdEvent == "" {
		t.Fatalf("the hold's event %q, %v", holdEvent, err)
	}
	holdDelivery := engine.DeliveryIDOf(holdEvent, w.ID)
	if got := due(s, now); !slices.Equal(got, []string{holdDelivery}) {
		t.Errorf("due now = %q, want the hold's delivery %s", got, holdDelivery)
	}
	if got := due(s, now.Add(time.Hour)); !slices.Equal(got, []string{holdDelivery, jobs[2].Delivery.ID}) {
		t.Errorf("due in an hour = %q, want %s then %s", got, holdDelivery, jobs[2].Delivery.ID)
	}
	// Times beyond the years that int64 nanoseconds hold (1678 to 2262):
	// a bound far in the future comes after every delivery, and a
	// delivery due then comes after every other, and only when due.
	far := func(year int) time.Time { return time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC) }
	late := func(year int) string { return engine.DeliveryIDOf(holdEvent, fmt.Sprintf("wh_late%d", year)) }
	err = s.Update(ctx, func(tx engine.Tx) error {
		for _, year := range []int{9000, 3000} {
			d := engine.Delivery{ID: late(year), EventID: holdEvent, EventType: engine.EventHoldCreated, Channel: engine.ChannelWebhook,
				Endpoint: fmt.Sprintf("wh_late%d", year), State: engine.DeliveryPending, CreatedAt: now, Since: now, NextAttemptAt: far(year)}
			if err := tx.PutDelivery(d); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for through, want := range map[time.Time][]string{
		far(2262): {holdDelivery, jobs[2].Delivery.ID},
		far(5000): {holdDelivery, jobs[2].Delivery.ID, late(3000)},
		far(9999): {holdDelivery, jobs[2].Delivery.ID, late(3000), late(9000)},
	} {
		if got := due(s, through); !slices.Equal(got, want) {
			t.Errorf("due by %s = %q, want %q", through, got, want)
		}
	}
	err = s.Update(ctx, func(tx engine.Tx) error {
		for _, year := range []int{9000, 3000} {
			d, _, err := tx.Delivery(late(year))
			if err != nil {
				return err
			}
			d.State, d.NextAttemptAt, d.DoneAt = engine.DeliverySkipped, time.Time{}, now
			if err := tx.PutDelivery(d); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := due(s, far(9999)); !slices.Equal(got, []string{holdDelivery, jobs[2].Delivery.ID}) {
		t.Errorf("due by 9999 after the late ones were skipped = %q", got)
	}
	check := func(s *boltstore.Store, when string, want ...string) {
		t.Helper()
		wantFindings(t, s, when, "", want...)
	}
	check(s, "with deliveries")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	check(ro, "read-only with deliveries")
	ro.Close()

	rawUpdate(t, path, func(tx *bolt.Tx) error {
		if err := tx.Bucket([]byte("deliveries_by_state")).Delete([]byte("failed\x00" + jobs[1].Delivery.ID)); err != nil {
			return err
		}
		if err := tx.Bucket([]byte("deliveries_due")).Put(append(make([]byte, 8), "gone"...), nil); err != nil {
			return err
		}
		return tx.Bucket([]byte("events_unrouted")).Put([]byte("01a2363115f8445eedfda455b972b23b"), nil)
	})
	s = mustOpenPath(t, path)
	if got := due(s, far(9999)); !slices.Equal(got, []string{holdDelivery, jobs[2].Delivery.ID}) {
		t.Errorf("due by 9999 with an entry left behind = %q; the scan passes over it", got)
	}
	check(s, "with damaged indexes",
		"delivery_index_mismatch: delivery "+jobs[1].Delivery.ID+" (failed) is missing from deliveries_by_state",
		"delivery_index_mismatch: deliveries_due entry",
		"delivery_index_mismatch: events_unrouted names event 01a2363115f8445eedfda455b972b23b, which does not exist")
}

// wantFindings fails t, naming when, unless the findings of s.Check but
// those of kind ignore ("" for none) are as many as want, each in turn
// naming the text of want ("kind: detail").
func wantFindings(t *testing.T, s *boltstore.Store, when, ignore string, want ...string) {
	t.Helper()
	findings, err := s.Check(context.Background())
	var got []string
	for _, f := range findings {
		if f.Kind != ignore {
			got = append(got, f.Kind+": "+f.Detail)
		}
	}
	if err != nil || len(got) != len(want) {
		t.Fatalf("%s: check = %q, %v; want %d findings", when, got, err, len(want))
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("%s: finding %q, want one naming %q", when, got[i], w)
		}
	}
}
