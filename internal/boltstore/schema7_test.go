package boltstore_test

import (
	"context"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
)

// The ids that reserved of schema version 7 gave the records of
// testdata/schema7.dump.
const (
	schema7R1 = "01a23544031c3046586e7049bbf270c5" // unix-root, go-basics × 2.
	schema7R2 = "01a2354403337cb2b8060f4f5826918e" // unix-nobody, go-basics × 1.
	schema7R3 = "01a2354403501a60a4ca421abd9f048a" // unix-postgres, full × 1.
	schema7R4 = "01a2354403cd63b91603d053263034ad" // unix-postgres, rust-intro × 2, from hold H2.
	schema7R5 = "01a2354403e353adf82bca521cd63d26" // unix-nobody, backstage × 1, cancelled.
	schema7R6 = "01a2354404f867e1220697d9bd409c40" // unix-root, rust-intro × 1.
	schema7H1 = "01a23544038b769b83f66dce811ccef3" // unix-root, go-basics × 1, open until 2026-12-03T05:39:39Z.
	schema7H2 = "01a2354403ac5c427ace6df9028c6e49" // unix-postgres, rust-intro × 2, confirmed.
)

// schema7Answers are the answers reserved of schema version 7 gave to the
// reservations and holds that wrote testdata/schema7.dump, at
// 2026-12-02T05:39:39Z, to the socket actors unix-root, unix-nobody and
// unix-postgres (uids 0, 65534 and 101, bound to those names), after an
// admin had created the workshops go-basics (5 places), rust-intro (4, at
// most 2 per reservation), full (1) and backstage (3, hidden).
var schema7Answers = []fixtureAnswer{
	{"unix-root", "13970244-9fd8-4b69-99cf-7cc20d283239", nil, engine.Request{Workshop: "go-basics", Quantity: 2},
		`{"status":"reserved","reservation_id":"01a23544031c3046586e7049bbf270c5","workshop":"go-basics","quantity":2}`},
	{"unix-nobody", "731bced6-d5fd-4943-af18-2105f453513f", nil, engine.Request{Workshop: "go-basics", Quantity: 1},
		`{"status":"reserved","reservation_id":"01a2354403337cb2b8060f4f5826918e","workshop":"go-basics","quantity":1}`},
	{"unix-postgres", "43140988-9f88-4db5-8ccd-d3055f96567a", nil, engine.Request{Workshop: "full", Quantity: 1},
		`{"status":"reserved","reservation_id":"01a2354403501a60a4ca421abd9f048a","workshop":"full","quantity":1}`},
	{"unix-nobody", "13d749fe-8362-401c-991b-ec60e9ca13e0", nil, engine.Request{Workshop: "full", Quantity: 1},
		`{"status":"unavailable","workshop":"full","quantity":1}`},
	{"unix-root", "1f7c11a3-a306-42a1-bc15-a2220d6f8f8b", &engine.HoldRequest{Workshop: "go-basics", Quantity: 1, TTLSeconds: 86400}, engine.Request{},
		`{"status":"held","hold_id":"01a23544038b769b83f66dce811ccef3","workshop":"go-basics","quantity":1,"expires_at":"2026-12-03T05:39:39Z"}`},
	{"unix-postgres", "c9ca448a-ed69-4ded-92bd-610beb1952f0", &engine.HoldRequest{Workshop: "rust-intro", Quantity: 2, TTLSeconds: 600}, engine.Request{},
		`{"status":"held","hold_id":"01a2354403ac5c427ace6df9028c6e49","workshop":"rust-intro","quantity":2,"expires_at":"2026-12-02T05:49:39Z"}`},
	{"unix-nobody", "ce7c197d-33b6-40ba-9975-c5399bd8f2c7", nil, engine.Request{Workshop: "backstage", Quantity: 1},
		`{"status":"reserved","reservation_id":"01a2354403e353adf82bca521cd63d26","workshop":"backstage","quantity":1}`},
	{"unix-root", "f885c97d-45ec-4433-b71d-e34334e5ff4e", nil, engine.Request{Workshop: "rust-intro", Quantity: 1},
		`{"status":"reserved","reservation_id":"01a2354404f867e1220697d9bd409c40","workshop":"rust-intro","quantity":1}`},
}

// schema7Settlements are the answers the same reserved gave to the
// confirmation of hold H2 and the cancellation of reservation R5.
var schema7Settlements = []fixtureSettlement{
	{engine.OperationConfirm, "unix-postgres", "721d7240-5c21-4315-9863-d786a1878ddf", schema7H2,
		`{"status":"reserved","reservation_id":"01a2354403cd63b91603d053263034ad","hold_id":"01a2354403ac5c427ace6df9028c6e49","workshop":"rust-intro","quantity":2}`},
	{engine.OperationCancel, "unix-nobody", "ceabdd4d-b607-4cd7-8e1d-df75c673c856", schema7R5,
		`{"status":"cancelled","reservation_id":"01a2354403e353adf82bca521cd63d26","workshop":"backstage","quantity":1}`},
}

// schema7Attendees are the records of each workshop of the fixture in the
// order of actor, then id: reservations (with "-" for a cancelled one)
// and holds.
var schema7Attendees = map[string]struct{ reservations, holds []string }{
	"go-basics":  {[]string{"unix-nobody/" + schema7R2, "unix-root/" + schema7R1}, []string{"unix-root/" + schema7H1}},
	"rust-intro": {[]string{"unix-postgres/" + schema7R4, "unix-root/" + schema7R6}, []string{"unix-postgres/" + schema7H2}},
	"full":       {[]string{"unix-postgres/" + schema7R3}, nil},
	"backstage":  {[]string{"unix-nobody/" + schema7R5 + "-"}, nil},
}

// TestSchema7File opens a file as reserved of schema version 7 wrote it,
// which has no index of reservations and holds by workshop. Read-only,
// every answer replays byte for byte and a workshop's records are found
// by reading them all. The writing open marks it with the current version
// and builds both indexes (one entry per record, which the checks compare)
// without changing any record; then every answer replays again, the
// indexes list each workshop's records by actor, and a workshop that gets
// a schedule is the only record rewritten, in format 4, whose limit per
// person counts the places the file's records hold.
func TestSchema7File(t *testing.T) {
	path, records := loadDump(t, "testdata/schema7.dump")
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 5, 40, 0, 0, time.UTC)
	replay := func(s *boltstore.Store, when string) {
		t.Helper()
		replayFixture(t, s, now, schema7Answers, nil, when)
		replaySettlements(t, s, now, schema7Settlements, when)
	}
	listed := func(s *boltstore.Store, when string) {
		t.Helper()
		eng := engine.New(s, engine.WithClock(func() time.Time { return now }))
		for workshop, want := range schema7Attendees {
			var rs, hs []string
			err := s.View(ctx, func(tx engine.Tx) error {
				rs, hs = nil, nil
				err := tx.ForEachReservationIn(workshop, engine.PersonPosition{}, func(r engine.Reservation) error {
					if r.Workshop != workshop {
						t.Errorf("%s: reservation %s of %s listed in %s", when, r.ID, r.Workshop, workshop)
					}
					e := r.Actor + "/" + r.ID
					if r.Cancelled() {
						e += "-"
					}
					rs = append(rs, e)
					return nil
				})
				if err != nil {
					return err
				}
				return tx.ForEachHoldIn(workshop, engine.PersonPosition{}, func(h engine.Hold) error {
					hs = append(hs, h.Actor+"/"+h.ID)
					return nil
				})
			})
			if err != nil || !slices.Equal(rs, want.reservations) || !slices.Equal(hs, want.holds) {
				t.Errorf("%s: records of %s = %q, %q, %v; want %q, %q", when, workshop, rs, hs, err, want.reservations, want.holds)
			}
			// The page after the first record starts at the second.
			if len(want.reservations) > 1 {
				var after []string
				err := s.View(ctx, func(tx engine.Tx) error {
					after = nil
					return tx.ForEachReservationIn(workshop, engine.PersonPosition{Actor: "unix-nobody", ID: schema7R2}, func(r engine.Reservation) error {
						after = append(after, r.Actor+"/"+r.ID)
						return nil
					})
				})
				if wantAfter := map[string][]string{"go-basics": {"unix-root/" + schema7R1}, "rust-intro": want.reservations}[workshop]; err != nil || !slices.Equal(after, wantAfter) {
					t.Errorf("%s: records of %s after unix-nobody's = %q, %v; want %q", when, workshop, after, err, wantAfter)
				}
			}
			as, next, err := eng.Attendees(ctx, engine.Principal{Actor: "unix-root", Admin: true}, workshop, engine.AttendeeFilter{Status: engine.ListAll})
			var got []string
			for _, a := range as {
				e := a.Actor + "/" + a.ReservationID
				if a.Status == engine.AttendeeCancelled {
					e += "-"
				}
				got = append(got, e)
			}
			if err != nil || next != "" || !slices.Equal(got, want.reservations) {
				t.Errorf("%s: attendees of %s = %q (next %q), %v; want %q", when, workshop, got, next, err, want.reservations)
			}
		}
	}

	ro, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	replay(ro, "read-only")
	listed(ro, "read-only")
	ro.Close()
	if v := schemaOf(t, path); v != 7 {
		t.Fatalf("schema version after a read-only open = %d, want 7", v)
	}
	if got := bucketOf(t, path, "reservations_by_workshop"); got != nil {
		t.Fatalf("a read-only open wrote the workshop index %q", got)
	}

	s := mustOpenPath(t, path)
	replay(s, "after the upgrade")
	listed(s, "after the upgrade")
	if findings, err := engine.CheckAt(ctx, s, now); err != nil || len(findings) != 0 {
		t.Errorf("engine check after the upgrade: %v, %v", findings, err)
	}
	if findings, err := s.Check(ctx); err != nil || len(findings) != 0 {
		t.Errorf("check after the upgrade: %v, %v", findings, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if v := schemaOf(t, path); v != boltstore.SchemaVersion {
		t.Errorf("schema version after a writing open = %d, want %d", v, boltstore.SchemaVersion)
	}
	sameRecords(t, path, records, "meta")
	for bucket, want := range map[string][]string{
		"reservations_by_workshop": {
			"backstage\x00unix-nobody\x00" + schema7R5,
			"full\x00unix-postgres\x00" + schema7R3,
			"go-basics\x00unix-nobody\x00" + schema7R2,
			"go-basics\x00unix-root\x00" + schema7R1,
			"rust-intro\x00unix-postgres\x00" + schema7R4,
			"rust-intro\x00unix-root\x00" + schema7R6,
		},
		"holds_by_workshop": {
			"go-basics\x00unix-root\x00" + schema7H1,
			"rust-intro\x00unix-postgres\x00" + schema7H2,
		},
	} {
		var got []string
		for k, v := range bucketOf(t, path, bucket) {
			if v != "" {
				t.Errorf("%s entry %q has value %x", bucket, k, v)
			}
			got = append(got, k)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s after the upgrade = %q, want %q", bucket, got, want)
		}
	}

	// A schedule for go-basics, whose limit per person counts the places
	// unix-root has reserved (R1) and held (H1) as the file records them.
	s = mustOpenPath(t, path)
	replay(s, "reopened")
	eng := engine.New(s, engine.WithClock(func() time.Time { return now }))
	at := func(day, hour int) *time.Time {
		v := time.Date(2026, 12, day, hour, 0, 0, 0, time.UTC)
		return &v
	}
	description, location, zone, limit := "Bring a laptop.\nWe start on time.", "Room 2", "Europe/Berlin", 3
	patch := engine.WorkshopPatch{Description: &description, Location: &location, TimeZone: &zone,
		StartsAt: at(10, 9), EndsAt: at(10, 12), OpensAt: at(1, 0), ClosesAt: at(9, 18), MaxPerPerson: &limit}
	if _, err := eng.PatchWorkshop(ctx, "go-basics", patch, nil); err != nil {
		t.Fatal(err)
	}
	wantSchedule := engine.Schedule{Description: description, Location: location, TimeZone: zone,
		StartsAt: *at(10, 9), EndsAt: *at(10, 12), RegistrationOpensAt: *at(1, 0), RegistrationClosesAt: *at(9, 18), MaxPerPerson: limit}
	err = s.View(ctx, func(tx engine.Tx) error {
		w, ok, err := tx.Workshop("go-basics")
		if err != nil || !ok || w.Schedule != wantSchedule || w.Capacity != 5 || w.Reserved != 3 || w.Holding != 1 || w.Version != 2 || w.Hidden {
			t.Errorf("go-basics with a schedule = %+v, %t, %v; want schedule %+v", w, ok, err, wantSchedule)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	const overKey, limitBody = "0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5", `{"status":"limit_reached","workshop":"go-basics","quantity":1,"max_per_person":3,"already":3}`
	limited := fixtureAnswer{"unix-root", overKey, nil, engine.Request{Workshop: "go-basics", Quantity: 1}, limitBody}
	if out, err := eng.Reserve(ctx, limited.actor, engine.OperationKey(limited.key), limited.req); err != nil || out.Replayed || string(out.Answer.JSON()) != limitBody {
		t.Errorf("unix-root over the limit = %s (%+v), %v; want %s", out.Answer.JSON(), out, err, limitBody)
	}
	if out, err := eng.Reserve(ctx, "unix-nobody", "1d2e3f4a-5b6c-4d7e-8f80-91a2b3c4d5e6", engine.Request{Workshop: "go-basics", Quantity: 1}); err != nil || out.Answer.Status != engine.StatusReserved {
		t.Errorf("unix-nobody within the limit = %s, %v", out.Answer.JSON(), err)
	}
	replayFixture(t, s, now, []fixtureAnswer{limited}, nil, "after the limit")
	if findings, err := engine.CheckAt(ctx, s, now); err != nil || len(findings) != 0 {
		t.Errorf("engine check after the schedule: %v, %v", findings, err)
	}
	if findings, err := s.Check(ctx); err != nil || len(findings) != 0 {
		t.Errorf("check after the schedule: %v, %v", findings, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if raw := bucketOf(t, path, "workshops")["go-basics"]; raw == "" || raw[0] != 4 {
		t.Errorf("go-basics with a schedule stored as %x, want format 4", raw)
	}
	if raw := bucketOf(t, path, "receipts")["unix-root\x00"+overKey]; raw == "" || raw[0] != 4 {
		t.Errorf("the limit_reached receipt stored as %x, want format 4", raw)
	}
	delete(records["workshops"], "go-basics")
	sameRecords(t, path, records, "meta")

	s = mustOpenPath(t, path)
	replay(s, "after the schedule")
	replayFixture(t, s, now, []fixtureAnswer{limited}, nil, "after a reopen")
}

// bucketOf returns every record of bucket name in the file at path, nil
// when the file has no such bucket.
func bucketOf(t *testing.T, path, name string) map[string]string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var records map[string]string
	db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(name))
		if b == nil {
			return nil
		}
		records = map[string]string{}
		return b.ForEach(func(k, v []byte) error {
			records[string(k)] = string(v)
			return nil
		})
	})
	return records
}
