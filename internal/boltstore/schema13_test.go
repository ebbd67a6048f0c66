package boltstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
)

// The ids that reserved of schema version 13 gave the records of
// testdata/schema13.dump.
const (
	schema13H1        = "01a23b21d8f760b1ff49a8ac48890a9c" // ada, kiln × 1, open until 2026-12-04T09:00:03Z; its event routed.
	schema13H2        = "01a23b21ddca0ed32b1bcd2b1d36e636" // ada, kiln × 1, open until 2026-12-04T09:00:04Z.
	schema13H3        = "01a23b21e29c6653d048116eb6622467" // ada, kiln × 2, confirmed into schema13R1.
	schema13Offer     = "01a23b21f5e770bde29eff54807e17eb" // ada, loom × 1, offered until 2026-12-04T09:00:11Z.
	schema13R1        = "01a23b21e76f1bb8cc5a905442351181"
	schema13Carols    = "01a23b21ec414c52e7d13d450d586acf" // carol, loom × 1, cancelled.
	schema13E1        = "01a23b21d8f760b1ff49a8acc220b0cf" // H1's hold.created, routed.
	schema13E1Mail    = schema13E1 + "-mail"
	schema13Confirmed = `{"status":"reserved","reservation_id":"` + schema13R1 + `","hold_id":"` + schema13H3 + `","workshop":"kiln","quantity":2}`
)

// schema13Answers are the answers of testdata/schema13.dump, which the
// engine and bbolt store of schema version 13 (commit 803e64f) wrote with
// a clock starting at 2026-12-03T09:00:00Z and going 1.234567 s forward
// at each reading: the workshops kiln (5 places) and loom (1); ada's
// verified address; ada holds a place of kiln for a day, and the events
// are routed with mail (its mail is pending); then ada holds another for
// a day, and two for two hours, which she confirms; carol reserves loom,
// ada joins its waiting list, carol cancels and ada is offered the place
// for a day. The events after the first are not routed.
var schema13Answers = []fixtureAnswer{
	{"ada", "1b2c3d4e-5f60-4718-89a0-b1c2d3e4f501", &engine.HoldRequest{Workshop: "kiln", Quantity: 1, TTLSeconds: 86400}, engine.Request{},
		`{"status":"held","hold_id":"` + schema13H1 + `","workshop":"kiln","quantity":1,"expires_at":"2026-12-04T09:00:03Z"}`},
	{"ada", "1b2c3d4e-5f60-4718-89a0-b1c2d3e4f502", &engine.HoldRequest{Workshop: "kiln", Quantity: 1, TTLSeconds: 86400}, engine.Request{},
		`{"status":"held","hold_id":"` + schema13H2 + `","workshop":"kiln","quantity":1,"expires_at":"2026-12-04T09:00:04Z"}`},
	{"ada", "1b2c3d4e-5f60-4718-89a0-b1c2d3e4f503", &engine.HoldRequest{Workshop: "kiln", Quantity: 2, TTLSeconds: 7200}, engine.Request{},
		`{"status":"held","hold_id":"` + schema13H3 + `","workshop":"kiln","quantity":2,"expires_at":"2026-12-03T11:00:06Z"}`},
	{"carol", "1b2c3d4e-5f60-4718-89a0-b1c2d3e4f505", nil, engine.Request{Workshop: "loom", Quantity: 1},
		`{"status":"reserved","reservation_id":"` + schema13Carols + `","workshop":"loom","quantity":1}`},
	{"ada", "1b2c3d4e-5f60-4718-89a0-b1c2d3e4f506", nil, engine.Request{Workshop: "loom", Quantity: 1, Waitlist: true},
		`{"status":"waiting","entry_id":"01a23b21f11475bb77db489a30ce72bc","workshop":"loom","quantity":1,"position":1}`},
}

// TestSchema13File opens a file as reserved of schema version 13 wrote it:
// its hold events, which name no deadline, read as they are, read-only and
// after the writing open that marks it with version 14, which rewrites no
// record; its answers replay byte for byte. Routed with reminders, the
// events it left unrouted get their mails but no reminder (their
// deadlines are not in them), and the routed one gets nothing more; a
// hold made after the upgrade gets its reminder an hour before its
// deadline, from its event (format 5) alone.
func TestSchema13File(t *testing.T) {
	path, records := loadDump(t, "testdata/schema13.dump")
	ctx := context.Background()
	now := time.Date(2026, 12, 3, 9, 1, 0, 0, time.UTC)
	clock := engine.WithClock(func() time.Time { return now })
	same := func(s *boltstore.Store, when string) {
		t.Helper()
		replayFixture(t, s, now, schema13Answers, nil, when)
		eng := engine.New(s, clock)
		if out, err := eng.Confirm(ctx, engine.Principal{Actor: "ada"}, "1b2c3d4e-5f60-4718-89a0-b1c2d3e4f504", schema13H3); err != nil || !out.Replayed || string(out.Answer.JSON()) != schema13Confirmed {
			t.Errorf("%s: replay of the confirmation = %s, %v; want %s", when, out.Answer.JSON(), err, schema13Confirmed)
		}
		holdEvents := 0
		err := s.View(ctx, func(tx engine.Tx) error {
			return tx.ForEachEvent(func(ev engine.Event) error {
				if ev.HoldID == "" {
					return nil
				}
				holdEvents++
				if !ev.HoldExpiresAt.IsZero() && ev.CreatedAt.Before(now.Add(-time.Minute)) {
					t.Errorf("%s: event %s as version 13 wrote it names a deadline: %+v", when, ev.ID, ev)
				}
				return nil
			})
		})
		if err != nil || holdEvents < 5 {
			t.Fatalf("%s: %d hold events, %v; want at least the file's 5", when, holdEvents, err)
		}
		checksClean(t, s, now, when)
	}

	upgradeKeepsRecords(t, path, 13, records, same)

	s := mustOpenPath(t, path)
	eng := engine.New(s, clock)
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
		t.Fatalf("routed %d of the file's events, want 7", n)
	}
	admin := engine.Principal{Actor: "root", Admin: true}
	page, err := eng.Deliveries(ctx, admin, engine.DeliveryFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	mails := map[string]int{}
	for _, d := range page.Deliveries {
		mails[d.Channel+" "+d.EventType]++
		if d.Recipient != "ada@example.org" {
			t.Errorf("delivery %+v; want every one to ada", d)
		}
	}
	// H1's mail as the file has it; H2's, H3's, the confirmation's and
	// the offer's mails; carol has no address.
	want := map[string]int{"mail " + engine.EventHoldCreated: 3, "mail " + engine.EventReserved: 1, "mail " + engine.EventWaitlistOffered: 1}
	if len(mails) != len(want) || mails["mail "+engine.EventHoldCreated] != 3 || mails["mail "+engine.EventReserved] != 1 || mails["mail "+engine.EventWaitlistOffered] != 1 {
		t.Fatalf("deliveries after routing the file's events = %v, want %v and no reminder", mails, want)
	}
	if page.Deliveries[0].ID != schema13E1Mail {
		t.Errorf("first delivery %s, want the file's %s", page.Deliveries[0].ID, schema13E1Mail)
	}

	held, err := eng.Hold(ctx, "ada", "1b2c3d4e-5f60-4718-89a0-b1c2d3e4f510", engine.HoldRequest{Workshop: "kiln", Quantity: 1, TTLSeconds: 86400})
	if err != nil || held.Answer.Status != engine.StatusHeld {
		t.Fatalf("a hold after the upgrade = %s, %v", held.Answer.JSON(), err)
	}
	if n := route(); n != 1 {
		t.Fatalf("routed %d events after the new hold, want 1", n)
	}
	var reminder engine.Delivery
	page, err = eng.Deliveries(ctx, admin, engine.DeliveryFilter{Channel: engine.ChannelReminder})
	if err != nil || len(page.Deliveries) != 1 {
		t.Fatalf("reminders = %+v, %v; want the new hold's", page.Deliveries, err)
	}
	reminder = page.Deliveries[0]
	if due := held.Answer.ExpiresAt.Add(-time.Hour); !reminder.NextAttemptAt.Equal(due) || reminder.Recipient != "ada@example.org" {
		t.Errorf("reminder %+v; want it due at %s", reminder, due)
	}
	checksClean(t, s, now, "after the new hold")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if raw := bucketOf(t, path, "events")[reminder.EventID]; len(raw) == 0 || raw[0] != 5 {
		t.Errorf("the new hold's event is stored as %x, want format 5", raw)
	}
}
