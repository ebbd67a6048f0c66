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

// testdata/schema12.dump was written by reserved of schema version 12
// (commit 349b9c4), driven with curl over its Unix socket by the users
// root, nobody and postgres (actors unix-root, unix-nobody and
// unix-postgres) on 2026-12-02 at 21:23:17Z, and dumped bucket by bucket.
// An admin created clay (10 places, at most 3 per reservation and 3 per
// person) and full (2 places, 2 per person, offers lasting 600 s). Then:
// unix-root reserved 2 of clay, held 1 for a day and was refused a fourth
// place (limit_reached, already 3); unix-nobody reserved 1 of clay under a
// UUIDv4 key and cancelled it, reserved 2 and held 1 for 60 s;
// unix-postgres reserved both places of full; unix-nobody joined its
// waiting list for 1, as did unix-root, who left it again.

// schema12Answers are answers of the file that replay byte for byte.
var schema12Answers = []fixtureAnswer{
	{"unix-root", "019ae0a0-0000-7000-8000-000000000001", nil, engine.Request{Workshop: "clay", Quantity: 2},
		`{"status":"reserved","reservation_id":"01a238a4d92178658a6ddb44094e2a1c","workshop":"clay","quantity":2}`},
	{"unix-root", "019ae0a0-0000-7000-8000-000000000003", nil, engine.Request{Workshop: "clay", Quantity: 1},
		`{"status":"limit_reached","workshop":"clay","quantity":1,"max_per_person":3,"already":3}`},
	{"unix-nobody", "0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5", nil, engine.Request{Workshop: "clay", Quantity: 1},
		`{"status":"reserved","reservation_id":"01a238a4d94a5499482496485521f636","workshop":"clay","quantity":1}`},
	{"unix-nobody", "019ae0a0-0000-7000-8000-000000000006", &engine.HoldRequest{Workshop: "clay", Quantity: 1, TTLSeconds: 60}, engine.Request{},
		`{"status":"held","hold_id":"01a238a4d99c529e5c8999cdaaaf41a4","workshop":"clay","quantity":1,"expires_at":"2026-12-02T21:25:17Z"}`},
	{"unix-nobody", "019ae0a0-0000-7000-8000-000000000008", nil, engine.Request{Workshop: "full", Quantity: 1, Waitlist: true},
		`{"status":"waiting","entry_id":"01a238a4d9bc3add8e3072e381752fe3","workshop":"full","quantity":1,"position":1}`},
}

// schema12Places are the places of each person of the file an hour after
// it was written, when unix-nobody's hold has passed its deadline.
var schema12Places = []struct {
	workshop, actor string
	places          engine.Places
}{
	{"clay", "unix-root", engine.Places{Reserved: 2, Held: 1}},
	{"clay", "unix-nobody", engine.Places{Reserved: 2}},
	{"clay", "unix-postgres", engine.Places{}},
	{"full", "unix-postgres", engine.Places{Reserved: 2}},
	{"full", "unix-nobody", engine.Places{Waiting: 1}},
	{"full", "unix-root", engine.Places{}},
}

// TestSchema12File opens a file as reserved of schema version 12 wrote it:
// read-only, the places of each person are counted from the records; the
// writing open that marks it with version 13 builds the counts of places
// and the list of open holds by person, rewriting no record; the limit per
// person then judges from them, and the file's answers replay byte for
// byte throughout.
func TestSchema12File(t *testing.T) {
	path, records := loadDump(t, "testdata/schema12.dump")
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 22, 23, 17, 0, time.UTC)
	places := slices.Clone(schema12Places)
	same := func(s *boltstore.Store, when string) {
		t.Helper()
		replayFixture(t, s, now, schema12Answers, nil, when)
		err := s.View(ctx, func(tx engine.Tx) error {
			for _, p := range places {
				got, err := tx.PlacesOf(p.workshop, p.actor, now)
				if err != nil {
					return err
				}
				if got != p.places {
					t.Errorf("%s: the places of %s in %s = %+v, want %+v", when, p.actor, p.workshop, got, p.places)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		checksClean(t, s, now, when)
	}

	upgradeKeepsRecords(t, path, 12, records, same)
	wantBucket := map[string]map[string]string{
		"places_by_person": {
			"clay\x00unix-root":     "\x01\x02\x00",
			"clay\x00unix-nobody":   "\x01\x02\x00",
			"full\x00unix-postgres": "\x01\x02\x00",
			"full\x00unix-nobody":   "\x01\x00\x01",
		},
		"holds_open_by_person": {
			"clay\x00unix-root\x0001a238a4d92e74a85083afd76892c73a":   "",
			"clay\x00unix-nobody\x0001a238a4d99c529e5c8999cdaaaf41a4": "",
		},
	}
	for name, want := range wantBucket {
		if got := bucketOf(t, path, name); !maps.Equal(got, want) {
			t.Errorf("%s after the upgrade = %q, want %q", name, got, want)
		}
	}

	// unix-root is refused a fourth place of clay as before; unix-nobody,
	// whose hold passed its deadline, is given a third; unix-root's
	// stored refusal still replays.
	s := mustOpenPath(t, path)
	eng := engine.New(s, engine.WithClock(func() time.Time { return now }))
	over, err := eng.Reserve(ctx, "unix-root", v7Key(t), engine.Request{Workshop: "clay", Quantity: 1})
	if want := `{"status":"limit_reached","workshop":"clay","quantity":1,"max_per_person":3,"already":3}`; err != nil || string(over.Answer.JSON()) != want {
		t.Errorf("unix-root asks for a fourth place = %s, %v; want %s", over.Answer.JSON(), err, want)
	}
	third, err := eng.Reserve(ctx, "unix-nobody", v7Key(t), engine.Request{Workshop: "clay", Quantity: 1})
	if err != nil || third.Answer.Status != engine.StatusReserved {
		t.Errorf("unix-nobody asks for a third place = %s, %v; want reserved", third.Answer.JSON(), err)
	}
	places[1].places.Reserved = 3
	same(s, "after new decisions")
}
