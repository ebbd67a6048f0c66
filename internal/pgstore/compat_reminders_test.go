package pgstore_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/pgstore"
)

// TestSchema18GetsHoldDeadlines: a database as schema versions 1–18 made
// it, with the rows of testdata/schema18.sql as a daemon of version 18
// wrote them, gets the deadlines of hold events on open: its answers
// replay byte for byte; its hold events read without a deadline, so the
// events it left unrouted get their mails but no reminder when routed with
// reminders, and the routed one nothing more; a hold made after the
// migration gets its reminder an hour before its deadline, from its event
// alone, and its event row holds that deadline.
func TestSchema18GetsHoldDeadlines(t *testing.T) {
	dsn := schemaAsOf(t, migrationsThrough(t, 18)...)
	loadFixture(t, dsn, "schema18.sql")
	s := mustOpenDSN(t, dsn, pgstore.Options{})
	wantAllVersions(t, s)
	ctx := t.Context()
	now := time.Date(2026, 12, 3, 9, 1, 0, 0, time.UTC)
	eng := engine.New(s, engine.WithClock(func() time.Time { return now }))
	const (
		h1, h2, h3 = "01a23b21d8f73a96e8a3603d5edb46c5", "01a23b21ddca33f57aedf2edb5799552", "01a23b21e29c580ab0c2e8a9bfd2c024"
		confirmed  = "01a23b21e76f45c4fad87c99466348ea"
		carols     = "01a23b21ec4132a64b644c5a6f7a34f4"
		entry      = "01a23b21f11405803d37cad5780a87a5"
		e1Mail     = "01a23b21d8f73a96e8a3603dd5318e72-mail"
	)
	for _, r := range []struct {
		op   func() (engine.Outcome, error)
		body string
	}{
		{func() (engine.Outcome, error) {
			return eng.Hold(ctx, "ada", "1b2c3d4e-5f60-4718-89a0-b1c2d3e4f501", engine.HoldRequest{Workshop: "kiln", Quantity: 1, TTLSeconds: 86400})
		}, `{"status":"held","hold_id":"` + h1 + `","workshop":"kiln","quantity":1,"expires_at":"2026-12-04T09:00:03Z"}`},
		{func() (engine.Outcome, error) {
			return eng.Hold(ctx, "ada", "1b2c3d4e-5f60-4718-89a0-b1c2d3e4f502", engine.HoldRequest{Workshop: "kiln", Quantity: 1, TTLSeconds: 86400})
		}, `{"status":"held","hold_id":"` + h2 + `","workshop":"kiln","quantity":1,"expires_at":"2026-12-04T09:00:04Z"}`},
		{func() (engine.Outcome, error) {
			return eng.Hold(ctx, "ada", "1b2c3d4e-5f60-4718-89a0-b1c2d3e4f503", engine.HoldRequest{Workshop: "kiln", Quantity: 2, TTLSeconds: 7200})
		}, `{"status":"held","hold_id":"` + h3 + `","workshop":"kiln","quantity":2,"expires_at":"2026-12-03T11:00:06Z"}`},
		{func() (engine.Outcome, error) {
			return eng.Confirm(ctx, engine.Principal{Actor: "ada"}, "1b2c3d4e-5f60-4718-89a0-b1c2d3e4f504", h3)
		}, `{"status":"reserved","reservation_id":"` + confirmed + `","hold_id":"` + h3 + `","workshop":"kiln","quantity":2}`},
		{func() (engine.Outcome, error) {
			return eng.Reserve(ctx, "carol", "1b2c3d4e-5f60-4718-89a0-b1c2d3e4f505", engine.Request{Workshop: "loom", Quantity: 1})
		}, `{"status":"reserved","reservation_id":"` + carols + `","workshop":"loom","quantity":1}`},
		{func() (engine.Outcome, error) {
			return eng.Reserve(ctx, "ada", "1b2c3d4e-5f60-4718-89a0-b1c2d3e4f506", engine.Request{Workshop: "loom", Quantity: 1, Waitlist: true})
		}, `{"status":"waiting","entry_id":"` + entry + `","workshop":"loom","quantity":1,"position":1}`},
	} {
		if out, err := r.op(); err != nil || !out.Replayed || string(out.Answer.JSON()) != r.body {
			t.Errorf("replay = %s (replayed %t), %v; want %s", out.Answer.JSON(), out.Replayed, err, r.body)
		}
	}
	err := s.View(ctx, func(tx engine.Tx) error {
		return tx.ForEachEvent(func(ev engine.Event) error {
			if !ev.HoldExpiresAt.IsZero() {
				t.Errorf("event %s as version 18 wrote it names a deadline: %+v", ev.ID, ev)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}

	route := func() int {
		t.Helper()
		n, more, err := eng.RouteEvents(ctx, 100, engine.RouteOptions{Mail: true, HoldReminder: time.Hour})
		if err != nil || more {
			t.Fatalf("RouteEvents = %d (more %t), %v", n, more, err)
		}
		return n
	}
	// H2's and H3's hold.created, the confirmation's two events, carol's
	// reservation and cancellation, and the offer.
	if n := route(); n != 7 {
		t.Fatalf("routed %d of the fixture's events, want 7", n)
	}
	admin := engine.Principal{Actor: "root", Admin: true}
	page, err := eng.Deliveries(ctx, admin, engine.DeliveryFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, d := range page.Deliveries {
		got[d.Channel+" "+d.EventType]++
	}
	if len(page.Deliveries) != 5 || got["mail "+engine.EventHoldCreated] != 3 || got["mail "+engine.EventReserved] != 1 || got["mail "+engine.EventWaitlistOffered] != 1 || page.Deliveries[0].ID != e1Mail {
		t.Fatalf("deliveries after routing the fixture's events = %v (%d), want the 5 mails to ada, %s first, and no reminder", got, len(page.Deliveries), e1Mail)
	}

	held, err := eng.Hold(ctx, "ada", "1b2c3d4e-5f60-4718-89a0-b1c2d3e4f510", engine.HoldRequest{Workshop: "kiln", Quantity: 1, TTLSeconds: 86400})
	if err != nil || held.Answer.Status != engine.StatusHeld {
		t.Fatalf("a hold after the migration = %s, %v", held.Answer.JSON(), err)
	}
	if n := route(); n != 1 {
		t.Fatalf("routed %d events after the new hold, want 1", n)
	}
	page, err = eng.Deliveries(ctx, admin, engine.DeliveryFilter{Channel: engine.ChannelReminder})
	if err != nil || len(page.Deliveries) != 1 {
		t.Fatalf("reminders = %+v, %v; want the new hold's", page.Deliveries, err)
	}
	reminder := page.Deliveries[0]
	if due := held.Answer.ExpiresAt.Add(-time.Hour); !reminder.NextAttemptAt.Equal(due) || reminder.Recipient != "ada@example.org" {
		t.Errorf("reminder %+v; want it due at %s", reminder, due)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var deadline time.Time
	if err := conn.QueryRow(ctx, "SELECT hold_expires_at FROM events WHERE id = $1", reminder.EventID).Scan(&deadline); err != nil || !deadline.Equal(held.Answer.ExpiresAt) {
		t.Errorf("the new hold's event row holds the deadline %s, %v; want %s", deadline, err, held.Answer.ExpiresAt)
	}
	if findings, err := engine.CheckAt(ctx, s, now); err != nil || len(findings) != 0 {
		t.Errorf("check: %v, %v", findings, err)
	}
}
