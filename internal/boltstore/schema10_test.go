package boltstore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
)

// The ids that reserved of schema version 10 (commit 625a7b6) gave the
// records of testdata/schema10.dump.
const (
	schema10R1 = "01a236fbc1ea58a209fdd19e1bd08adb" // unix-root, go-basics × 2.
	schema10R2 = "01a236fbc1fc16d33a6ae98d3cb013cc" // unix-nobody, go-basics × 1.
	schema10R3 = "01a236fbc20c574c19e388eaefa8ef24" // unix-postgres, full × 1.
	schema10R4 = "01a236fbc29a0c256be56042e6b9d67e" // unix-postgres, rust-intro × 2, from hold H2.
	schema10R5 = "01a236fbc3263dc82abf6ccf74423537" // unix-nobody, backstage × 1, cancelled.
	schema10R6 = "01a236fbc3c9648b93f2cc3e33791734" // unix-root, rust-intro × 1, cancelled.
	schema10R7 = "01a236fc6b407248fbfb2247a83d14b2" // unix-postgres, go-basics × 1.
	schema10T1 = "01a236fb794b0e26278c4143108ea752" // unix-nobody, go-basics × 1, cancelled; its receipts are tombstones.
	schema10H1 = "01a236fbc2275fa3c29862ac77bf8c94" // unix-root, go-basics × 1, open until 2026-12-03T13:39:58Z.
	schema10H2 = "01a236fbc2397d161a1c4fc490fc9bab" // unix-postgres, rust-intro × 2, confirmed.
	schema10H3 = "01a236fbc2ae5d87e304e72ff93ed9fc" // unix-nobody, rust-intro × 1, released.
	schema10H4 = "01a236fbc39a3a627efecb84c49fd42a" // unix-root, backstage × 1, expired.
	schema10H5 = "01a236fbc3aa470ae38c075cc5bcabaa" // unix-postgres, go-basics × 1, expired.
	schema10TH = "01a236fb888861980f6bcf266e22035c" // unix-postgres, rust-intro × 1, released; its receipts are tombstones.
	// The deliveries an operator sent again (of H2's hold.created event
	// to the endpoint that answers 410, which failed again) and gave up
	// (of R5's reservation event to the endpoint that answers 503).
	schema10Retried = "01a236fbc2397d161a1c4fc514b69b49-01a236fbb2a140f4b0d17bb2cbaf8ee4"
	schema10Skipped = "01a236fbc3263dc82abf6ccf75ad2ff6-01a236fbb2ae0df9706c4459b73aba97"
)

// schema10Answers are the answers reserved of schema version 10 gave to
// the reservations and holds that wrote testdata/schema10.dump, between
// 2026-12-02T13:39:39Z and 13:40:42Z, to the socket actors unix-root,
// unix-nobody and unix-postgres (uids 0, 65534 and 101, bound to those
// names), after an admin had created the workshops go-basics (5 places,
// at most 2 per reservation), rust-intro (6, at most 2 per reservation
// and 2 per person, with a location, a start, an end and a time zone),
// full (1) and backstage (3, hidden). The file was written by that
// build's reserved, driven by its reservectl over the socket, and dumped
// bucket by bucket (bucket, hex key, hex value), as the earlier fixtures
// were. The daemon first served a reservation of T1, its cancellation, a
// hold TH and its release, and was restarted with --receipt-retention
// 1s, which turned those four receipts into tombstones; it was then
// restarted without retention, with a --notify-dir (which got every
// reservation event) and --delivery-min-backoff 1h, and an admin added
// three webhook endpoints on a loopback server: one for every type that
// answered 204 (delivered), one for hold.created and hold.confirmed that
// answered 410 (failed) and one for reservation.created that answered
// 503 (pending, due again an hour later). Its hold janitor stored H4 and
// H5 as expired; unix-root and unix-nobody set their profiles with
// PUT /api/v1/me.
var schema10Answers = []fixtureAnswer{
	{"unix-root", "b2bdf18b-d772-4779-938a-bb7497dc4c23", nil, engine.Request{Workshop: "go-basics", Quantity: 2},
		`{"status":"reserved","reservation_id":"` + schema10R1 + `","workshop":"go-basics","quantity":2}`},
	{"unix-nobody", "d7d70902-65be-4652-942e-c517328c72ec", nil, engine.Request{Workshop: "go-basics", Quantity: 1},
		`{"status":"reserved","reservation_id":"` + schema10R2 + `","workshop":"go-basics","quantity":1}`},
	{"unix-postgres", "72ae6afc-b46a-44ed-8b10-a566b8c838b5", nil, engine.Request{Workshop: "full", Quantity: 1},
		`{"status":"reserved","reservation_id":"` + schema10R3 + `","workshop":"full","quantity":1}`},
	{"unix-nobody", "54f58a8d-bba4-474e-9d66-582841fb507e", nil, engine.Request{Workshop: "full", Quantity: 1},
		`{"status":"unavailable","workshop":"full","quantity":1}`},
	{"unix-root", "a8882cdc-0aae-49dd-9d58-d5866cf8e793", &engine.HoldRequest{Workshop: "go-basics", Quantity: 1, TTLSeconds: 86400}, engine.Request{},
		`{"status":"held","hold_id":"` + schema10H1 + `","workshop":"go-basics","quantity":1,"expires_at":"2026-12-03T13:39:58Z"}`},
	{"unix-postgres", "d1fc5a1a-1dbe-4ee9-917b-18132eb9a13f", &engine.HoldRequest{Workshop: "rust-intro", Quantity: 2, TTLSeconds: 600}, engine.Request{},
		`{"status":"held","hold_id":"` + schema10H2 + `","workshop":"rust-intro","quantity":2,"expires_at":"2026-12-02T13:49:58Z"}`},
	{"unix-nobody", "84d5b4bd-9f28-4cfc-b140-1cbc0a36a39a", &engine.HoldRequest{Workshop: "rust-intro", Quantity: 1, TTLSeconds: 600}, engine.Request{},
		`{"status":"held","hold_id":"` + schema10H3 + `","workshop":"rust-intro","quantity":1,"expires_at":"2026-12-02T13:49:58Z"}`},
	{"unix-nobody", "f833acfc-01cb-4401-b4a8-2ce8e65e636a", nil, engine.Request{Workshop: "backstage", Quantity: 1},
		`{"status":"reserved","reservation_id":"` + schema10R5 + `","workshop":"backstage","quantity":1}`},
	{"unix-root", "c3352f7c-e0bc-43a4-87d9-ebe05e512b63", &engine.HoldRequest{Workshop: "backstage", Quantity: 1, TTLSeconds: 30}, engine.Request{},
		`{"status":"held","hold_id":"` + schema10H4 + `","workshop":"backstage","quantity":1,"expires_at":"2026-12-02T13:40:29Z"}`},
	{"unix-postgres", "e89cf281-8d56-4cf1-9c1d-947068bc8dc3", &engine.HoldRequest{Workshop: "go-basics", Quantity: 1, TTLSeconds: 30}, engine.Request{},
		`{"status":"held","hold_id":"` + schema10H5 + `","workshop":"go-basics","quantity":1,"expires_at":"2026-12-02T13:40:29Z"}`},
	{"unix-postgres", "a053a13a-89cf-484e-b3c8-273206624f2f", nil, engine.Request{Workshop: "rust-intro", Quantity: 1},
		`{"status":"limit_reached","workshop":"rust-intro","quantity":1,"max_per_person":2,"already":2}`},
	{"unix-root", "76cee442-e410-44bf-9edc-d84d2933b25b", nil, engine.Request{Workshop: "rust-intro", Quantity: 1},
		`{"status":"reserved","reservation_id":"` + schema10R6 + `","workshop":"rust-intro","quantity":1}`},
	{"unix-postgres", "96b28d15-97b5-4399-859c-ae059ea30466", nil, engine.Request{Workshop: "go-basics", Quantity: 1},
		`{"status":"reserved","reservation_id":"` + schema10R7 + `","workshop":"go-basics","quantity":1}`},
}

// schema10Settlements are the answers the same reserved gave to the
// confirmation of H2, the release of H3, the cancellations of R5 and R6,
// the confirmation of H4 after its deadline, and an operator's retry and
// skip of a delivery.
var schema10Settlements = []fixtureSettlement{
	{engine.OperationConfirm, "unix-postgres", "5fc907f1-fa50-4d6b-9a86-e6da9676e6ab", schema10H2,
		`{"status":"reserved","reservation_id":"` + schema10R4 + `","hold_id":"` + schema10H2 + `","workshop":"rust-intro","quantity":2}`},
	{engine.OperationRelease, "unix-nobody", "00c27ac5-9b29-4aa4-af6a-a32241a1ebd1", schema10H3,
		`{"status":"released","hold_id":"` + schema10H3 + `","workshop":"rust-intro","quantity":1}`},
	{engine.OperationCancel, "unix-nobody", "5fbd4cb2-9047-45bd-8dbd-fad81d608c16", schema10R5,
		`{"status":"cancelled","reservation_id":"` + schema10R5 + `","workshop":"backstage","quantity":1}`},
	{engine.OperationCancel, "unix-root", "b493fc54-e323-4d21-955d-15474da253ec", schema10R6,
		`{"status":"cancelled","reservation_id":"` + schema10R6 + `","workshop":"rust-intro","quantity":1}`},
	{engine.OperationConfirm, "unix-root", "a9fe9a71-4f6a-4efe-8347-a6265eb5743d", schema10H4,
		`{"status":"expired","hold_id":"` + schema10H4 + `","workshop":"backstage","quantity":1}`},
	{engine.OperationRetryDelivery, "unix-root", "778530d7-7831-49aa-b5c0-a349107e486a", schema10Retried,
		`{"status":"requeued","delivery_id":"` + schema10Retried + `","workshop":"rust-intro","quantity":2}`},
	{engine.OperationSkipDelivery, "unix-root", "223edec2-2716-420b-a35e-c90b0e7f42dc", schema10Skipped,
		`{"status":"skipped","delivery_id":"` + schema10Skipped + `","workshop":"backstage","quantity":1}`},
}

// schema10Expired are the operations whose receipts the fixture's daemon
// turned into tombstones: a reservation, its cancellation, a hold and its
// release. A retry of each is refused as expired.
var schema10Expired = []struct {
	op         engine.OperationKind
	actor, key string
	id         string             // The cancelled reservation or the released hold.
	hold       engine.HoldRequest // The hold's request.
	req        engine.Request     // The reservation's request.
}{
	{op: engine.OperationReserve, actor: "unix-nobody", key: "a5b74c87-3c45-411f-85a2-1a804225248f", req: engine.Request{Workshop: "go-basics", Quantity: 1}},
	{op: engine.OperationCancel, actor: "unix-nobody", key: "64f7b83f-7b37-4559-8a19-17f7c1a101bb", id: schema10T1},
	{op: engine.OperationHold, actor: "unix-postgres", key: "a7a3bbe3-1057-4995-a078-48480c395504", hold: engine.HoldRequest{Workshop: "rust-intro", Quantity: 1, TTLSeconds: 600}},
	{op: engine.OperationRelease, actor: "unix-postgres", key: "a9f88e56-576e-4461-bf99-0d94269a2bfb", id: schema10TH},
}

// schema10Profiles are the profiles the fixture's actors set.
var schema10Profiles = map[string]engine.Profile{
	"unix-root":   {Actor: "unix-root", DisplayName: "Ada Root", Language: "de"},
	"unix-nobody": {Actor: "unix-nobody", DisplayName: "Nobody"},
}

// TestSchema10File opens a file as reserved of schema version 10 wrote it,
// which has no waiting lists: no entries, no indexes of them, workshops
// without a count of people waiting or an offer time to live. Read-only
// and after the upgrade, every answer replays byte for byte (reservations,
// holds, their settlements, an operator's retry and skip of a delivery),
// the keys whose receipts became tombstones are refused as expired, the
// profiles read as they were set, the waiting lists read empty, and both
// checks are clean. The writing open marks the file with the current
// version, adds the buckets of waiting lists empty and changes no record.
// Then the full workshop gets an offer time to live of its own and a
// waiting list: two people join (answered "waiting" at positions 1 and
// 2), a cancellation offers the place to the first, who confirms it, and
// the second leaves. Only that workshop's record changes (format 5 while
// people wait); every answer replays after a reopen and read-only, and
// both checks stay clean throughout.
func TestSchema10File(t *testing.T) {
	path, records := loadDump(t, "testdata/schema10.dump")
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)
	clock := engine.WithClock(func() time.Time { return now })
	admin := engine.Principal{Actor: "unix-root", Admin: true}
	answers, settlements := slices.Clone(schema10Answers), slices.Clone(schema10Settlements)
	wantEntries := func(s *boltstore.Store, when string, want ...string) {
		t.Helper()
		es, _, err := engine.New(s, clock).WorkshopWaitlist(ctx, admin, "full", engine.ListFilter{Limit: engine.MaxListLimit})
		got := []string{}
		for _, e := range es {
			got = append(got, fmt.Sprintf("%s:%s", e.Actor, e.State))
		}
		if want == nil {
			want = []string{}
		}
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: the waiting list of full = %q, %v; want %q", when, got, err, want)
		}
	}
	same := func(s *boltstore.Store, when string, entries ...string) {
		t.Helper()
		replayFixture(t, s, now, answers, nil, when)
		replaySettlements(t, s, now, settlements, when)
		eng := engine.New(s, clock)
		for _, x := range schema10Expired {
			who, key := engine.Principal{Actor: x.actor}, engine.OperationKey(x.key)
			var err error
			switch x.op {
			case engine.OperationReserve:
				_, err = eng.Reserve(ctx, x.actor, key, x.req)
			case engine.OperationCancel:
				_, err = eng.Cancel(ctx, who, key, x.id)
			case engine.OperationHold:
				_, err = eng.Hold(ctx, x.actor, key, x.hold)
			default:
				_, err = eng.Release(ctx, who, key, x.id)
			}
			if engine.ErrorCode(err) != engine.CodeOperationExpired {
				t.Errorf("%s: a retry of %s's %s %s: %v, want %s", when, x.actor, x.op, x.key, err, engine.CodeOperationExpired)
			}
		}
		for actor, want := range schema10Profiles {
			if p, err := eng.ProfileOf(ctx, actor); err != nil || p != want {
				t.Errorf("%s: profile of %s = %+v, %v; want %+v", when, actor, p, err, want)
			}
		}
		wantEntries(s, when, entries...)
		checksClean(t, s, now, when)
	}

	ro, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	same(ro, "read-only")
	if es, _, err := engine.New(ro, clock).Waitlist(ctx, engine.Principal{Actor: "unix-nobody"}, engine.ListFilter{}); err != nil || len(es) != 0 {
		t.Errorf("read-only: the entries of unix-nobody = %+v, %v; want none", es, err)
	}
	ro.Close()
	if v := schemaOf(t, path); v != 10 {
		t.Fatalf("schema version after a read-only open = %d, want 10", v)
	}

	s := mustOpenPath(t, path)
	same(s, "after the upgrade")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if v := schemaOf(t, path); v <= 10 || v != boltstore.SchemaVersion {
		t.Errorf("schema version after a writing open = %d, want %d, which a reserved of version 10 refuses", v, boltstore.SchemaVersion)
	}
	sameRecords(t, path, records, "meta")
	for _, bucket := range []string{"wait_entries", "wait_entries_waiting", "wait_entries_by_workshop", "wait_entries_by_actor"} {
		if got := bucketOf(t, path, bucket); got == nil || len(got) != 0 {
			t.Errorf("bucket %s after the upgrade = %q, want it empty", bucket, got)
		}
	}

	// The full workshop's offers last ten minutes, and two people join
	// its waiting list.
	s = mustOpenPath(t, path)
	eng := engine.New(s, clock)
	if _, _, err := eng.PutWorkshop(ctx, "full", engine.WorkshopSpec{Capacity: 1, OfferTTLSeconds: 600}, nil); err != nil {
		t.Fatal(err)
	}
	join := engine.Request{Workshop: "full", Quantity: 1, Waitlist: true}
	nobody, err := eng.Reserve(ctx, "unix-nobody", "1d2e3f4a-5b6c-4d7e-8f9a-0b1c2d3e4f5a", join)
	if err != nil || nobody.Answer.Status != engine.StatusWaiting || nobody.Answer.Position != 1 {
		t.Fatalf("unix-nobody joins = %s, %v; want waiting at 1", nobody.Answer.JSON(), err)
	}
	root, err := eng.Reserve(ctx, "unix-root", "2e3f4a5b-6c7d-4e8f-9a0b-1c2d3e4f5a6b", join)
	if err != nil || root.Answer.Status != engine.StatusWaiting || root.Answer.Position != 2 {
		t.Fatalf("unix-root joins = %s, %v; want waiting at 2", root.Answer.JSON(), err)
	}
	answers = append(answers,
		fixtureAnswer{"unix-nobody", "1d2e3f4a-5b6c-4d7e-8f9a-0b1c2d3e4f5a", nil, join, string(nobody.Answer.JSON())},
		fixtureAnswer{"unix-root", "2e3f4a5b-6c7d-4e8f-9a0b-1c2d3e4f5a6b", nil, join, string(root.Answer.JSON())})
	same(s, "with two people waiting", "unix-nobody:waiting", "unix-root:waiting")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if w := bucketOf(t, path, "workshops")["full"]; len(w) == 0 || w[0] != 5 {
		t.Errorf("the workshop with people waiting = %x, want format 5", w)
	}
	changed := records["workshops"]["full"]
	delete(records["workshops"], "full")
	sameRecords(t, path, records, "meta")
	records["workshops"]["full"] = changed

	// A cancellation offers the place to the first, who confirms it; the
	// second leaves.
	s = mustOpenPath(t, path)
	eng = engine.New(s, clock)
	const cancelKey, confirmKey, leaveKey = "3f4a5b6c-7d8e-4f9a-8b1c-2d3e4f5a6b7c", "4a5b6c7d-8e9f-4a0b-9c2d-3e4f5a6b7c8d", "5b6c7d8e-9f0a-4b1c-8d3e-4f5a6b7c8d9e"
	cancelled, err := eng.Cancel(ctx, engine.Principal{Actor: "unix-postgres"}, cancelKey, schema10R3)
	if err != nil || cancelled.Answer.Status != engine.StatusCancelled {
		t.Fatalf("the cancellation of R3 = %s, %v", cancelled.Answer.JSON(), err)
	}
	es, _, err := eng.Waitlist(ctx, engine.Principal{Actor: "unix-nobody"}, engine.ListFilter{})
	if err != nil || len(es) != 1 || es[0].State != engine.WaitOffered || es[0].HoldID == "" || !es[0].OfferExpiresAt.Equal(now.Add(10*time.Minute)) {
		t.Fatalf("the entries of unix-nobody = %+v, %v; want one offered for ten minutes", es, err)
	}
	confirmed, err := eng.Confirm(ctx, engine.Principal{Actor: "unix-nobody"}, confirmKey, es[0].HoldID)
	if err != nil || confirmed.Answer.Status != engine.StatusReserved {
		t.Fatalf("the confirmation of the offer = %s, %v", confirmed.Answer.JSON(), err)
	}
	left, err := eng.LeaveWaitlist(ctx, engine.Principal{Actor: "unix-root"}, leaveKey, root.Answer.EntryID)
	if err != nil || left.Answer.Status != engine.StatusLeft || left.Answer.EntryID != root.Answer.EntryID {
		t.Fatalf("unix-root leaves = %s, %v", left.Answer.JSON(), err)
	}
	settlements = append(settlements,
		fixtureSettlement{engine.OperationCancel, "unix-postgres", cancelKey, schema10R3, string(cancelled.Answer.JSON())},
		fixtureSettlement{engine.OperationConfirm, "unix-nobody", confirmKey, es[0].HoldID, string(confirmed.Answer.JSON())},
		fixtureSettlement{engine.OperationLeaveWaitlist, "unix-root", leaveKey, root.Answer.EntryID, string(left.Answer.JSON())})
	same(s, "after the offer", "unix-nobody:reserved", "unix-root:left")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = mustOpenPath(t, path)
	same(s, "reopened", "unix-nobody:reserved", "unix-root:left")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err = boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	same(ro, "read-only with waiting lists", "unix-nobody:reserved", "unix-root:left")
}
