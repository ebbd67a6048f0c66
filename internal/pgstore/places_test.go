package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/pgstore"
)

// placesRows returns the rows of places_by_person, one
// "workshop/actor reserved waiting" each, in key order.
func placesRows(t *testing.T, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}) []string {
	t.Helper()
	rows, err := q.Query(t.Context(), "SELECT workshop || '/' || actor || ' ' || reserved || ' ' || waiting FROM places_by_person ORDER BY workshop, actor")
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// placesFindings returns the details of the findings of kind
// places_mismatch.
func placesFindings(findings []engine.Finding) []string {
	var details []string
	for _, f := range findings {
		if f.Kind == engine.FindingPlaces {
			details = append(details, f.Detail)
		}
	}
	return details
}

// wantPlacesConsistent fails the test if the store's check finds a count
// of places that the rows do not bear out.
func wantPlacesConsistent(t *testing.T, s *pgstore.Store) {
	t.Helper()
	findings, err := s.Check(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if details := placesFindings(findings); len(details) != 0 {
		t.Errorf("check finds wrong counts of places:\n%s", strings.Join(details, "\n"))
	}
}

// TestSchema16GetsPlacesByPerson: a database as schema versions 1–16
// made it, with the rows of testdata/schema16.sql as a daemon of version
// 16 wrote them, gets the counts of places by person on open, from its
// active reservations and waiting entries (not the cancelled ones, nor
// the entries that left or were offered places); a person's places
// count them and the open holds whose deadline has not passed; the limit
// per person refuses by them; and the counts follow the decisions made
// after the upgrade.
func TestSchema16GetsPlacesByPerson(t *testing.T) {
	dsn := fixtureAsOf(t, 16)
	s := mustOpenDSN(t, dsn, pgstore.Options{})
	wantAllVersions(t, s)
	ctx := t.Context()
	want := []string{"kiln/ada 2 0", "kiln/bob 1 0", "kiln/dan 0 2", "loom/ada 1 0"}
	if got := placesRows(t, s.Pool()); strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("places_by_person after the migration = %q, want %q", got, want)
	}
	// bob's hold of loom lasts until 09:10:19, cleo's offer until the
	// next day.
	before, after := time.Date(2026, 12, 2, 9, 5, 0, 0, time.UTC), time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		workshop, actor string
		at              time.Time
		want            engine.Places
	}{
		{"kiln", "ada", after, engine.Places{Reserved: 2}},
		{"kiln", "bob", after, engine.Places{Reserved: 1}},
		{"kiln", "cleo", after, engine.Places{Held: 1}},
		{"kiln", "dan", after, engine.Places{Waiting: 2}},
		{"kiln", "erin", after, engine.Places{}},
		{"loom", "ada", after, engine.Places{Reserved: 1}},
		{"loom", "bob", before, engine.Places{Held: 1}},
		{"loom", "bob", after, engine.Places{}},
	} {
		err := s.View(ctx, func(tx engine.Tx) error {
			got, err := tx.PlacesOf(c.workshop, c.actor, c.at)
			if err == nil && got != c.want {
				t.Errorf("places of %s in %s at %s = %+v, want %+v", c.actor, c.workshop, c.at.Format(time.TimeOnly), got, c.want)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	clock := after
	eng := engine.New(s, engine.WithClock(func() time.Time { return clock }))
	// kiln allows 3 places per person: ada has 2 reserved and dan 2
	// waiting, so 2 more are refused; cleo, offered 1, may wait for 2.
	for _, c := range []struct {
		actor   string
		status  string
		already int
	}{
		{"ada", engine.StatusLimitReached, 2},
		{"dan", engine.StatusLimitReached, 2},
		{"cleo", engine.StatusWaiting, 0},
	} {
		out, err := eng.Reserve(ctx, c.actor, newKey(t), engine.Request{Workshop: "kiln", Quantity: 2, Waitlist: true})
		if err != nil || out.Answer.Status != c.status || out.Answer.Limit.Already != c.already {
			t.Errorf("%s asks for 2 more places of kiln = %s, %v; want %s with %d already", c.actor, out.Answer.JSON(), err, c.status, c.already)
		}
	}
	if _, err := eng.Confirm(ctx, engine.Principal{Actor: "cleo"}, newKey(t), "01a235fba85e7bf66ac57cd28bcb2b50"); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Cancel(ctx, engine.Principal{Actor: "bob"}, newKey(t), "01a235fb90414b689c5f4e18631fde73"); err != nil {
		t.Fatal(err)
	}
	want = []string{"kiln/ada 2 0", "kiln/cleo 1 2", "kiln/dan 0 2", "loom/ada 1 0"}
	if got := placesRows(t, s.Pool()); strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("places_by_person after cleo waits and confirms her offer and bob cancels = %q, want %q", got, want)
	}
	if findings, err := engine.CheckAt(ctx, s, clock); err != nil || len(findings) != 0 {
		t.Errorf("check after the upgrade: %v, %v", findings, err)
	}
	wantPlacesConsistent(t, s)
}

// TestMigration17CountsWritesDuringIt: writes of a daemon of version 16
// that run while migration 0017 fills places_by_person are counted once:
// one that is not committed when the migration starts is waited for and
// counted by the fill, and one that starts while the migration runs
// waits for it and is counted by the triggers.
func TestMigration17CountsWritesDuringIt(t *testing.T) {
	dsn := fixtureAsOf(t, 16)
	ctx := t.Context()
	connect := func() *pgx.Conn {
		t.Helper()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(context.Background()) })
		return conn
	}
	observer, early, late := connect(), connect(), connect()
	lockWaits := func(n int) {
		t.Helper()
		pollUntil(t, 30*time.Second, fmt.Sprintf("%d waiting for a lock of reservations", n), func() (bool, error) {
			var waiting int
			err := observer.QueryRow(ctx, "SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = 'reservations'::regclass").Scan(&waiting)
			return waiting >= n, err
		})
	}
	// early: gil reserves a place of loom, not committed yet.
	earlyTx, err := early.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := earlyTx.Exec(ctx, `INSERT INTO reservations (id, actor, operation_key, workshop, quantity, created_at)
		VALUES ('01a235fbc0000000000000000000000a', 'gil', '1f4d6b3a-9c2e-4d7f-8a1b-2c3d4e5f6a99', 'loom', 1, now())`); err != nil {
		t.Fatal(err)
	}
	opened := make(chan error, 1)
	var s *pgstore.Store
	go func() {
		var err error
		s, err = pgstore.Open(ctx, dsn, pgstore.Options{MaxConns: 4})
		opened <- err
	}()
	lockWaits(1) // The migration waits for early.
	// late: ada cancels her reservation of loom and dan leaves kiln's
	// waiting list, behind the migration.
	lateDone := make(chan error, 1)
	lateTx, err := late.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		_, err := lateTx.Exec(ctx, `UPDATE reservations SET cancelled_at = now(), cancelled_by = 'ada', cancel_operation = '1f4d6b3a-9c2e-4d7f-8a1b-2c3d4e5f6a98'
			WHERE id = '01a235fbb2036402434da79a70332c1a'`)
		if err == nil {
			_, err = lateTx.Exec(ctx, `UPDATE wait_entries SET state = 'left', settled_at = now() WHERE id = '01a235fb99e753c3b7c7b846b9872d4a'`)
		}
		lateDone <- err
	}()
	lockWaits(2)
	if err := earlyTx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// late's writes go on once migration 0017 commits. Its transaction
	// ends before the store opens: migration 0018, which builds an
	// index concurrently, waits for the transactions that may still
	// read the table without it.
	if err := <-lateDone; err != nil {
		t.Fatal(err)
	}
	if err := lateTx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-opened; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	want := []string{"kiln/ada 2 0", "kiln/bob 1 0", "loom/gil 1 0"}
	if got := placesRows(t, observer); strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("places_by_person after writes around the migration = %q, want %q", got, want)
	}
	wantPlacesConsistent(t, s)
}

// TestCheckFindsBrokenPlaces: the store's check reports a count of
// places_by_person that differs from the rows, a row for someone without
// places, and a missing row; the engine's check sees the wrong count
// through PlacesOf; and a write that would take away places the table
// does not count fails instead of storing a wrong count.
func TestCheckFindsBrokenPlaces(t *testing.T) {
	ctx := t.Context()
	s := mustOpen(t, pgstore.Options{})
	eng := engine.New(s)
	if _, _, err := eng.PutWorkshop(ctx, "clay", engine.WorkshopSpec{Capacity: 10, MaxQuantity: 2, Schedule: engine.Schedule{MaxPerPerson: 3}}, nil); err != nil {
		t.Fatal(err)
	}
	erin, err := eng.Reserve(ctx, "erin", newKey(t), engine.Request{Workshop: "clay", Quantity: 2})
	if err != nil {
		t.Fatal(err)
	}
	fay, err := eng.Reserve(ctx, "fay", newKey(t), engine.Request{Workshop: "clay", Quantity: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Hold(ctx, "erin", newKey(t), engine.HoldRequest{Workshop: "clay", Quantity: 1, TTLSeconds: 600}); err != nil {
		t.Fatal(err)
	}
	wantPlacesConsistent(t, s)
	for _, stmt := range []string{
		"UPDATE places_by_person SET reserved = 1 WHERE workshop = 'clay' AND actor = 'erin'",
		"INSERT INTO places_by_person (workshop, actor, reserved, waiting) VALUES ('clay', 'nobody', 0, 1)",
		"DELETE FROM places_by_person WHERE workshop = 'clay' AND actor = 'fay'",
	} {
		if _, err := s.Pool().Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	findings, err := s.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(placesFindings(findings), "\n")
	for _, want := range []string{
		`places_by_person ("clay", "erin") counts 1 reserved and 0 waiting, but the rows add up to 2 and 0`,
		`places_by_person ("clay", "nobody") counts 0 reserved and 1 waiting, but the rows have no places there`,
		`places_by_person lacks ("clay", "fay"), whose rows add up to 1 reserved and 0 waiting`,
		`erin has {Reserved:1 Held:1 Waiting:0} in workshop "clay" by the store's count, but {Reserved:2 Held:1 Waiting:0} by the records`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("check findings %q lack %q", got, want)
		}
	}
	if _, err := eng.Cancel(ctx, engine.Principal{Actor: "fay"}, newKey(t), fay.Answer.ReservationID); err == nil || !strings.Contains(err.Error(), "no longer match") {
		t.Errorf("fay's cancellation without a count of her places = %v; want it refused", err)
	}
	if _, err := eng.Cancel(ctx, engine.Principal{Actor: "erin"}, newKey(t), erin.Answer.ReservationID); err == nil || !strings.Contains(err.Error(), "places_by_person_reserved_check") {
		t.Errorf("erin's cancellation of 2 places, counted 1 = %v; want it refused", err)
	}
}

// TestPlacesOfInAGroup: in a group, PlacesOf sees the writes of the
// decisions before it and of its own, and not those of a decision that
// failed after it had read its places.
func TestPlacesOfInAGroup(t *testing.T) {
	s := mustOpen(t, pgstore.Options{MaxConns: 1})
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	active := engine.Reservation{ID: "r1", Actor: "ada", OperationKey: newKey(t), Workshop: "clay", Quantity: 2, CreatedAt: now}
	cancelled := active
	cancelled.CancelledAt, cancelled.CancelledBy, cancelled.CancelOperation = now, "ada", newKey(t)
	entry := engine.WaitEntry{ID: "e1", Actor: "ada", OperationKey: newKey(t), Workshop: "clay", Quantity: 1, State: engine.WaitWaiting, CreatedAt: now}
	var seen [4]engine.Places
	errFailed := fmt.Errorf("decided to fail")
	// write writes the records, then reads ada's places into seen[i].
	write := func(i int, fail error, put func(engine.Tx) error) func(engine.Tx) error {
		return func(tx engine.Tx) error {
			if put != nil {
				if err := put(tx); err != nil {
					return err
				}
			}
			var err error
			if seen[i], err = tx.PlacesOf("clay", "ada", now); err != nil {
				return err
			}
			return fail
		}
	}
	errs := inOneGroup(t, s,
		write(0, nil, func(tx engine.Tx) error { return tx.PutReservation(active) }),
		write(1, errFailed, func(tx engine.Tx) error { return tx.PutWaitEntry(entry) }),
		write(2, nil, nil),
		write(3, nil, func(tx engine.Tx) error { return tx.PutReservation(cancelled) }),
	)
	for i, want := range []error{nil, errFailed, nil, nil} {
		if errs[i] != want {
			t.Errorf("decision %d: %v, want %v", i, errs[i], want)
		}
	}
	for i, want := range []engine.Places{{Reserved: 2}, {Reserved: 2, Waiting: 1}, {Reserved: 2}, {}} {
		if seen[i] != want {
			t.Errorf("decision %d saw the places %+v, want %+v", i, seen[i], want)
		}
	}
	if got := placesRows(t, s.Pool()); len(got) != 0 {
		t.Errorf("places_by_person after the group = %q, want no row", got)
	}
}
