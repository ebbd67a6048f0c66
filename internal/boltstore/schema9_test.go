package boltstore_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
)

// The ids that reserved of schema version 9 (commit b83967d) gave the
// records of testdata/schema9.dump.
const (
	schema9R1 = "01a23631159b1e27be7a5eaa2b5e9934" // unix-root, go-basics × 2.
	schema9R2 = "01a2363115b25ce087c3c52e1b362db9" // unix-nobody, go-basics × 1.
	schema9R3 = "01a2363115c94ca7bef72ce4d31ac54e" // unix-postgres, full × 1.
	schema9R4 = "01a2363116290317c8cf586cdd7fea67" // unix-postgres, rust-intro × 2, from hold H2.
	schema9R5 = "01a2363116726dd0a88f8a28ef6bd3d7" // unix-nobody, backstage × 1, cancelled.
	schema9R6 = "01a23631b0836aa620d220bb2b782bb1" // unix-root, rust-intro × 1, cancelled.
	schema9R7 = "01a23631b0c10a5e5a5fdfcd906b8d89" // unix-postgres, go-basics × 1.
	schema9H1 = "01a2363115f8445eedfda455b972b23b" // unix-root, go-basics × 1, open until 2026-12-03T09:58:36Z.
	schema9H2 = "01a2363116104a6dd95d2c1f1d2f3915" // unix-postgres, rust-intro × 2, confirmed.
	schema9H3 = "01a2363116435a7ca289d040fc1982d3" // unix-nobody, rust-intro × 1, released.
	schema9H4 = "01a2363116c5547f97a4ad40ecac1d5c" // unix-root, backstage × 1, expired.
	schema9H5 = "01a2363116e2007ae2194a34b1fa4093" // unix-postgres, go-basics × 1, expired.
)

// schema9Answers are the answers reserved of schema version 9 gave to the
// reservations and holds that wrote testdata/schema9.dump, between
// 2026-12-02T09:58:36Z and 09:59:16Z, to the socket actors unix-root,
// unix-nobody and unix-postgres (uids 0, 65534 and 101, bound to those
// names), after an admin had created the workshops go-basics (5 places,
// at most 2 per reservation), rust-intro (6, at most 2 per reservation
// and 2 per person), full (1) and backstage (3, hidden). The file was
// written by that build's reserved, driven by its reservectl over the
// socket, and dumped bucket by bucket; the daemon wrote the events of the
// first operations to a --notify-dir (delivered) and was restarted
// without a channel for the last three (pending); its hold janitor stored
// H4 and H5 as expired; unix-root and unix-nobody set their profiles with
// PUT /api/v1/me.
var schema9Answers = []fixtureAnswer{
	{"unix-root", "e50a700f-c1b0-4900-87fd-f43e75e553ca", nil, engine.Request{Workshop: "go-basics", Quantity: 2},
		`{"status":"reserved","reservation_id":"` + schema9R1 + `","workshop":"go-basics","quantity":2}`},
	{"unix-nobody", "a601ece5-99d1-4181-bab2-dfdaa6df9fed", nil, engine.Request{Workshop: "go-basics", Quantity: 1},
		`{"status":"reserved","reservation_id":"` + schema9R2 + `","workshop":"go-basics","quantity":1}`},
	{"unix-postgres", "4d73f6fb-458f-4d07-a9c0-af02c0db19a2", nil, engine.Request{Workshop: "full", Quantity: 1},
		`{"status":"reserved","reservation_id":"` + schema9R3 + `","workshop":"full","quantity":1}`},
	{"unix-nobody", "371d8cc5-8421-4c28-a12c-252c4d30b009", nil, engine.Request{Workshop: "full", Quantity: 1},
		`{"status":"unavailable","workshop":"full","quantity":1}`},
	{"unix-root", "5f9b7fe8-4735-44c6-92ec-9b530d9c1b5f", &engine.HoldRequest{Workshop: "go-basics", Quantity: 1, TTLSeconds: 86400}, engine.Request{},
		`{"status":"held","hold_id":"` + schema9H1 + `","workshop":"go-basics","quantity":1,"expires_at":"2026-12-03T09:58:36Z"}`},
	{"unix-postgres", "3d43be1e-f63c-49da-9e79-d581263eb308", &engine.HoldRequest{Workshop: "rust-intro", Quantity: 2, TTLSeconds: 600}, engine.Request{},
		`{"status":"held","hold_id":"` + schema9H2 + `","workshop":"rust-intro","quantity":2,"expires_at":"2026-12-02T10:08:36Z"}`},
	{"unix-nobody", "753b3711-7bf0-4f2f-a8f9-f31ed1c3c50f", &engine.HoldRequest{Workshop: "rust-intro", Quantity: 1, TTLSeconds: 600}, engine.Request{},
		`{"status":"held","hold_id":"` + schema9H3 + `","workshop":"rust-intro","quantity":1,"expires_at":"2026-12-02T10:08:36Z"}`},
	{"unix-nobody", "19ee4810-35d7-446d-b543-3dfadfa6e58d", nil, engine.Request{Workshop: "backstage", Quantity: 1},
		`{"status":"reserved","reservation_id":"` + schema9R5 + `","workshop":"backstage","quantity":1}`},
	{"unix-root", "057bc6c5-3b60-49bc-9cac-a7d87074f391", &engine.HoldRequest{Workshop: "backstage", Quantity: 1, TTLSeconds: 30}, engine.Request{},
		`{"status":"held","hold_id":"` + schema9H4 + `","workshop":"backstage","quantity":1,"expires_at":"2026-12-02T09:59:06Z"}`},
	{"unix-postgres", "577c4e1c-9be5-43ae-a8c4-451e4967f77f", &engine.HoldRequest{Workshop: "go-basics", Quantity: 1, TTLSeconds: 30}, engine.Request{},
		`{"status":"held","hold_id":"` + schema9H5 + `","workshop":"go-basics","quantity":1,"expires_at":"2026-12-02T09:59:06Z"}`},
	{"unix-postgres", "b04d2759-1d79-4bd1-91bc-ff3c755bc275", nil, engine.Request{Workshop: "rust-intro", Quantity: 1},
		`{"status":"limit_reached","workshop":"rust-intro","quantity":1,"max_per_person":2,"already":2}`},
	{"unix-root", "34899b12-83da-4992-a36e-6cea8e9a356f", nil, engine.Request{Workshop: "rust-intro", Quantity: 1},
		`{"status":"reserved","reservation_id":"` + schema9R6 + `","workshop":"rust-intro","quantity":1}`},
	{"unix-postgres", "9febfc1b-25d8-4859-ad7c-9cc75366ae99", nil, engine.Request{Workshop: "go-basics", Quantity: 1},
		`{"status":"reserved","reservation_id":"` + schema9R7 + `","workshop":"go-basics","quantity":1}`},
}

// schema9Settlements are the answers the same reserved gave to the
// confirmation of H2, the release of H3, the confirmation of H4 after its
// deadline and the cancellations of R5 and R6.
var schema9Settlements = []fixtureSettlement{
	{engine.OperationConfirm, "unix-postgres", "c6a4af7d-21cf-4390-a889-b53623e6b9ac", schema9H2,
		`{"status":"reserved","reservation_id":"` + schema9R4 + `","hold_id":"` + schema9H2 + `","workshop":"rust-intro","quantity":2}`},
	{engine.OperationRelease, "unix-nobody", "42e5f7ad-28a9-4ae4-91ee-1b33d83ac07b", schema9H3,
		`{"status":"released","hold_id":"` + schema9H3 + `","workshop":"rust-intro","quantity":1}`},
	{engine.OperationCancel, "unix-nobody", "e5280ba5-87c1-4bf4-aee4-156ce9f215f1", schema9R5,
		`{"status":"cancelled","reservation_id":"` + schema9R5 + `","workshop":"backstage","quantity":1}`},
	{engine.OperationConfirm, "unix-root", "3e82b89a-d1bd-444c-b29e-4a99e328383c", schema9H4,
		`{"status":"expired","hold_id":"` + schema9H4 + `","workshop":"backstage","quantity":1}`},
	{engine.OperationCancel, "unix-root", "48c53ac9-792b-47b6-9046-74a4e5ae55e7", schema9R6,
		`{"status":"cancelled","reservation_id":"` + schema9R6 + `","workshop":"rust-intro","quantity":1}`},
}

// schema9Pending are the events the fixture's daemon wrote while it had
// no channel: the reservation of R6, its cancellation, the reservation of
// R7. The events before them were delivered.
var schema9Pending = []string{"01a23631b0836aa620d220bba3945ea5", "01a23631b0ae071486be4ec5c1bc84f6", "01a23631b0c10a5e5a5fdfce5606756c"}

// schema9Profiles are the profiles the fixture's actors set.
var schema9Profiles = map[string]engine.Profile{
	"unix-root":     {Actor: "unix-root", DisplayName: "Ada Root", Language: "de"},
	"unix-nobody":   {Actor: "unix-nobody", DisplayName: "Nobody"},
	"unix-postgres": {Actor: "unix-postgres"},
}

// TestSchema9File opens a file as reserved of schema version 9 wrote it,
// which keeps no routing of events: no webhook endpoints, no deliveries,
// no index of unrouted events, and profiles without an address. Read-only
// and after the upgrade, every answer replays byte for byte, the events
// that were pending are still pending (and only they) for the simple
// channels, no event is unrouted, and the profiles read as they were set.
// The writing open marks the file with the current version and changes
// no record; an endpoint added then gets none of the old events (nothing
// old is routed anew), and only the events decided after the upgrade:
// a reservation's (which the simple channels get too) and a hold's (which
// they do not). A delivery's correction replays after a reopen, a verified
// address joins a profile, and both checks are clean throughout.
func TestSchema9File(t *testing.T) {
	path, records := loadDump(t, "testdata/schema9.dump")
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	clock := engine.WithClock(func() time.Time { return now })
	admin := engine.Principal{Actor: "unix-root", Admin: true}
	profiles := maps.Clone(schema9Profiles)
	same := func(s *boltstore.Store, when string, pending []string) {
		t.Helper()
		replayFixture(t, s, now, schema9Answers, nil, when)
		replaySettlements(t, s, now, schema9Settlements, when)
		eng := engine.New(s, clock)
		var got []string
		evs, err := eng.PendingEvents(ctx, 100)
		for _, ev := range evs {
			got = append(got, ev.ID)
		}
		if err != nil || !slices.Equal(got, pending) {
			t.Errorf("%s: pending events %q, %v; want %q", when, got, err, pending)
		}
		for actor, want := range profiles {
			if p, err := eng.ProfileOf(ctx, actor); err != nil || p != want {
				t.Errorf("%s: profile of %s = %+v, %v; want %+v", when, actor, p, err, want)
			}
		}
		checksClean(t, s, now, when)
	}
	unrouted := func(s *boltstore.Store, when string) []engine.Event {
		t.Helper()
		var evs []engine.Event
		err := s.View(ctx, func(tx engine.Tx) error {
			evs = nil
			return tx.ForEachUnroutedEvent(func(ev engine.Event) error { evs = append(evs, ev); return nil })
		})
		if err != nil {
			t.Fatalf("%s: unrouted events: %v", when, err)
		}
		return evs
	}

	ro, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	same(ro, "read-only", schema9Pending)
	if evs := unrouted(ro, "read-only"); len(evs) != 0 {
		t.Errorf("read-only: unrouted events %+v, want none", evs)
	}
	ro.Close()
	if v := schemaOf(t, path); v != 9 {
		t.Fatalf("schema version after a read-only open = %d, want 9", v)
	}

	s := mustOpenPath(t, path)
	same(s, "after the upgrade", schema9Pending)
	if evs := unrouted(s, "after the upgrade"); len(evs) != 0 {
		t.Errorf("after the upgrade: unrouted events %+v; the events decided before it count as routed", evs)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if v := schemaOf(t, path); v <= 9 || v != boltstore.SchemaVersion {
		t.Errorf("schema version after a writing open = %d, want %d, which a reserved of version 9 refuses", v, boltstore.SchemaVersion)
	}
	sameRecords(t, path, records, "meta")
	for _, bucket := range []string{"events_unrouted", "webhook_endpoints", "deliveries", "deliveries_by_state", "deliveries_due"} {
		if got := bucketOf(t, path, bucket); got == nil || len(got) != 0 {
			t.Errorf("bucket %s after the upgrade = %q, want it empty", bucket, got)
		}
	}

	// An endpoint for every type, then what is decided after it: a
	// reservation and a hold.
	s = mustOpenPath(t, path)
	eng := engine.New(s, clock)
	w, err := eng.AddWebhook(ctx, admin, "https://hooks.example.org/all", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, more, err := eng.RouteEvents(ctx, 100, engine.RouteOptions{Mail: true}); err != nil || n != 0 || more {
		t.Fatalf("routing the old events = %d (more %t), %v; want none routed", n, more, err)
	}
	now = now.Add(time.Second)
	res, err := eng.Reserve(ctx, "unix-nobody", "6f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0", engine.Request{Workshop: "backstage", Quantity: 1})
	if err != nil || res.Answer.Status != engine.StatusReserved {
		t.Fatalf("a reservation after the upgrade = %s, %v", res.Answer.JSON(), err)
	}
	held, err := eng.Hold(ctx, "unix-nobody", "7a8b9c0d-1e2f-4a3b-8c4d-5e6f7a8b9c0d", engine.HoldRequest{Workshop: "rust-intro", Quantity: 1, TTLSeconds: 600})
	if err != nil || held.Answer.Status != engine.StatusHeld {
		t.Fatalf("a hold after the upgrade = %s, %v", held.Answer.JSON(), err)
	}
	evs := unrouted(s, "after two decisions")
	if len(evs) != 2 || evs[0].Type != engine.EventReserved || evs[0].ReservationID != res.Answer.ReservationID ||
		evs[1].Type != engine.EventHoldCreated || evs[1].HoldID != held.Answer.HoldID {
		t.Fatalf("unrouted events after two decisions = %+v; want the reservation's and the hold's", evs)
	}
	if n, _, err := eng.RouteEvents(ctx, 100, engine.RouteOptions{Mail: true}); err != nil || n != 2 {
		t.Fatalf("RouteEvents = %d, %v; want the 2 new events", n, err)
	}
	page, err := eng.Deliveries(ctx, admin, engine.DeliveryFilter{})
	if err != nil || len(page.Deliveries) != 2 {
		t.Fatalf("deliveries = %+v, %v; want one for each new event", page.Deliveries, err)
	}
	for i, d := range page.Deliveries {
		if d.EventID != evs[i].ID || d.Endpoint != w.ID || d.Channel != engine.ChannelWebhook {
			t.Errorf("delivery %+v, want one of event %s to %s", d, evs[i].ID, w.ID)
		}
	}
	const skipKey = "8b9c0d1e-2f3a-4b4c-9d5e-6f7a8b9c0d1e"
	skipped, err := eng.SkipDelivery(ctx, admin, skipKey, page.Deliveries[1].ID)
	if err != nil || skipped.Answer.Status != engine.StatusSkipped {
		t.Fatalf("SkipDelivery = %s, %v", skipped.Answer.JSON(), err)
	}
	if err := eng.KeepVerifiedEmail(ctx, "unix-nobody", "nobody@example.org"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = mustOpenPath(t, path)
	eng = engine.New(s, clock)
	pending := append(slices.Clone(schema9Pending), page.Deliveries[0].EventID)
	profiles["unix-nobody"] = engine.Profile{Actor: "unix-nobody", DisplayName: "Nobody", Email: "nobody@example.org"}
	same(s, "reopened", pending)
	if out, err := eng.SkipDelivery(ctx, admin, skipKey, page.Deliveries[1].ID); err != nil || !out.Replayed || string(out.Answer.JSON()) != string(skipped.Answer.JSON()) {
		t.Errorf("replay of the skip = %s (replayed %t), %v; want %s", out.Answer.JSON(), out.Replayed, err, skipped.Answer.JSON())
	}
	if _, err := eng.RetryDelivery(ctx, admin, skipKey, page.Deliveries[1].ID); engine.ErrorCode(err) != engine.CodeOperationConflict {
		t.Errorf("the skip's key for a retry: %v, want %s", err, engine.CodeOperationConflict)
	}
	if evs := unrouted(s, "reopened"); len(evs) != 0 {
		t.Errorf("unrouted events after the routing = %+v", evs)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err = boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	same(ro, "read-only with deliveries", pending)
}

// fixtureSettlement is an operation on a hold, a reservation, a
// delivery or a waiting list entry of a fixture (a confirmation, a
// release, a cancellation, an operator's retry or skip, a leaving) and
// its answer.
type fixtureSettlement struct {
	op             engine.OperationKind
	actor, key, id string
	body           string
}

// replaySettlements sends every operation of settlements again, on s at
// now, and fails t, naming when, unless each replays its answer byte for
// byte.
func replaySettlements(t *testing.T, s *boltstore.Store, now time.Time, settlements []fixtureSettlement, when string) {
	t.Helper()
	ctx := context.Background()
	eng := engine.New(s, engine.WithClock(func() time.Time { return now }))
	for _, a := range settlements {
		who := engine.Principal{Actor: a.actor}
		var out engine.Outcome
		var err error
		switch a.op {
		case engine.OperationConfirm:
			out, err = eng.Confirm(ctx, who, engine.OperationKey(a.key), a.id)
		case engine.OperationRelease:
			out, err = eng.Release(ctx, who, engine.OperationKey(a.key), a.id)
		case engine.OperationLeaveWaitlist:
			out, err = eng.LeaveWaitlist(ctx, who, engine.OperationKey(a.key), a.id)
		case engine.OperationRetryDelivery: // An admin's, as is a skip.
			out, err = eng.RetryDelivery(ctx, engine.Principal{Actor: a.actor, Admin: true}, engine.OperationKey(a.key), a.id)
		case engine.OperationSkipDelivery:
			out, err = eng.SkipDelivery(ctx, engine.Principal{Actor: a.actor, Admin: true}, engine.OperationKey(a.key), a.id)
		default:
			out, err = eng.Cancel(ctx, who, engine.OperationKey(a.key), a.id)
		}
		if err != nil || !out.Replayed || string(out.Answer.JSON()) != a.body {
			t.Errorf("%s: replay of %s's %s %s = %s (replayed %t), %v; want %s", when, a.actor, a.op, a.key, out.Answer.JSON(), out.Replayed, err, a.body)
		}
	}
}
