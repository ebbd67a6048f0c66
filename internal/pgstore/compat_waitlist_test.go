package pgstore_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/pgstore"
	"github.com/reserve/reserve/internal/pgstore/pgtest"
)

// migrationsThrough returns the names of the migrations of versions 1 to
// version, in order.
func migrationsThrough(t *testing.T, version int) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("migrations", "*.sql"))
	if err != nil || len(files) < version {
		t.Fatalf("migrations: %v, %v", files, err)
	}
	names := make([]string, version)
	for i := range names {
		names[i] = strings.TrimSuffix(filepath.Base(files[i]), ".sql")
	}
	return names
}

// fixtureAsOf returns the DSN of a schema as the migrations of versions 1
// to version made it, holding the rows of testdata/schemaNN.sql, NN being
// version.
func fixtureAsOf(t *testing.T, version int) string {
	t.Helper()
	dsn := schemaAsOf(t, migrationsThrough(t, version)...)
	loadFixture(t, dsn, fmt.Sprintf("schema%d.sql", version))
	return dsn
}

// loadFixture runs the statements of testdata/name, one a line.
func loadFixture(t *testing.T, dsn, name string) {
	t.Helper()
	fixture, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(fixture)) {
		if strings.HasPrefix(line, "INSERT ") {
			pgtest.Exec(t, dsn, line)
		}
	}
}

// The columns of workshops, holds and tombstones that a daemon of schema
// version 15 reads and writes, in the order it names them.
var (
	workshopColumns15 = []string{"id", "title", "capacity", "reserved_places", "max_quantity", "version", "holding", "hidden",
		"description", "location", "time_zone", "starts_at", "ends_at", "registration_opens_at", "registration_closes_at", "max_per_person"}
	holdColumns15 = []string{"id", "actor", "operation_key", "workshop", "quantity", "state", "created_at", "expires_at",
		"reservation_id", "settled_at", "settle_operation"}
	tombstoneColumns15 = []string{"actor", "operation_key", "fingerprint_version", "fingerprint", "status",
		"reservation_id", "workshop", "quantity", "created_at", "purged_at", "hold_id", "hold_expires_at", "max_per_person", "already", "delivery_id"}
)

// rewrite15 writes row id of table (keyed by its first column) back as a
// daemon of schema version 15 writes a record it read: its upsert of the
// columns it knows, here with the values stored, but for the column set
// to the SQL expression to.
func rewrite15(t *testing.T, conn *pgx.Conn, table string, columns []string, id, set, to string) error {
	t.Helper()
	values, updates := make([]string, len(columns)), make([]string, 0, len(columns)-1)
	for i, c := range columns {
		values[i] = c
		if c == set {
			values[i] = to
		}
		if i > 0 {
			updates = append(updates, c+" = EXCLUDED."+c)
		}
	}
	list := strings.Join(columns, ", ")
	_, err := conn.Exec(t.Context(), fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s WHERE id = $1 ON CONFLICT (id) DO UPDATE SET %s",
		table, list, strings.Join(values, ", "), table, strings.Join(updates, ", ")), id)
	return err
}

// wantSQLState fails the test unless err is a PostgreSQL error of code.
func wantSQLState(t *testing.T, what string, err error, code string) {
	t.Helper()
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != code {
		t.Errorf("%s: %v; want SQLSTATE %s", what, err, code)
	}
}

// TestSchema15GetsWaitlists: a database as schema versions 1–15 made it,
// with the rows of testdata/schema15.sql as a daemon of version 15 wrote
// them, gets waiting lists on open: its receipts replay byte for byte; its
// full workshop gets a waiting list whose freed places are offered in
// order, confirmed and declined; the answers of joining and leaving
// replay byte for byte and, once their receipts expire, their tombstones
// name their entries. A daemon of version 15 still running is refused
// every write that would corrupt a waiting list (55P03, which it answers
// as the store being unavailable, or a check violation for its receipt
// expiry), and keeps writing the workshops and holds nobody waits for.
func TestSchema15GetsWaitlists(t *testing.T) {
	dsn := fixtureAsOf(t, 15)
	s := mustOpenDSN(t, dsn, pgstore.Options{})
	wantAllVersions(t, s)
	ctx := t.Context()
	clock := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	eng := engine.New(s, engine.WithClock(func() time.Time { return clock }))
	ada, bob, dan := engine.Principal{Actor: "ada"}, engine.Principal{Actor: "bob"}, engine.Principal{Actor: "dan"}
	root := engine.Principal{Actor: "root", Admin: true}
	const (
		hold, loomHold   = "01a235fb869c1ffde68140fa6bd98714", "01a235fb99e77b5ec919ba2bd6b38b28"
		cancelled, bobs  = "01a235fb7cf70b51cbfcab4fad7c686d", "01a235fb81ca70c7710b2e5103284d6f"
		confirmed, dans  = "01a235fb8b6f4b2cfb5eb133d75b6b17", "01a235fb95146263c06f05f87d06cc9f"
		skippedDelivery  = "01a235fb7cf70b51cbfcab5061deef30-01a235fb6e8022f097de5b581b0d9afb"
		kilnOne, kilnTwo = `"workshop":"kiln","quantity":1}`, `"workshop":"kiln","quantity":2}`
	)
	for _, r := range []struct {
		op   func() (engine.Outcome, error)
		body string
	}{
		{func() (engine.Outcome, error) {
			return eng.Reserve(ctx, "ada", "0e3c5f2a-8b1d-4c6e-9f7a-1b2c3d4e5f60", engine.Request{Workshop: "kiln", Quantity: 2})
		}, `{"status":"reserved","reservation_id":"` + cancelled + `",` + kilnTwo},
		{func() (engine.Outcome, error) {
			return eng.Reserve(ctx, "bob", "0e3c5f2a-8b1d-4c6e-9f7a-1b2c3d4e5f61", engine.Request{Workshop: "kiln", Quantity: 1})
		}, `{"status":"reserved","reservation_id":"` + bobs + `",` + kilnOne},
		{func() (engine.Outcome, error) {
			return eng.Hold(ctx, "ada", "0e3c5f2a-8b1d-4c6e-9f7a-1b2c3d4e5f62", engine.HoldRequest{Workshop: "kiln", Quantity: 1, TTLSeconds: 600})
		}, `{"status":"held","hold_id":"` + hold + `","workshop":"kiln","quantity":1,"expires_at":"2026-12-02T09:10:06Z"}`},
		{func() (engine.Outcome, error) {
			return eng.Confirm(ctx, ada, "0e3c5f2a-8b1d-4c6e-9f7a-1b2c3d4e5f63", hold)
		}, `{"status":"reserved","reservation_id":"` + confirmed + `","hold_id":"` + hold + `",` + kilnOne},
		{func() (engine.Outcome, error) {
			return eng.Cancel(ctx, ada, "0e3c5f2a-8b1d-4c6e-9f7a-1b2c3d4e5f64", cancelled)
		}, `{"status":"cancelled","reservation_id":"` + cancelled + `",` + kilnTwo},
		{func() (engine.Outcome, error) {
			return eng.Reserve(ctx, "dan", "0e3c5f2a-8b1d-4c6e-9f7a-1b2c3d4e5f65", engine.Request{Workshop: "kiln", Quantity: 2})
		}, `{"status":"reserved","reservation_id":"` + dans + `",` + kilnTwo},
		{func() (engine.Outcome, error) {
			return eng.Hold(ctx, "bob", "0e3c5f2a-8b1d-4c6e-9f7a-1b2c3d4e5f66", engine.HoldRequest{Workshop: "loom", Quantity: 1, TTLSeconds: 86400})
		}, `{"status":"held","hold_id":"` + loomHold + `","workshop":"loom","quantity":1,"expires_at":"2026-12-03T09:00:11Z"}`},
		{func() (engine.Outcome, error) {
			return eng.Reserve(ctx, "erin", "0e3c5f2a-8b1d-4c6e-9f7a-1b2c3d4e5f67", engine.Request{Workshop: "kiln", Quantity: 1})
		}, `{"status":"unavailable",` + kilnOne},
		{func() (engine.Outcome, error) {
			return eng.SkipDelivery(ctx, root, "0e3c5f2a-8b1d-4c6e-9f7a-1b2c3d4e5f68", skippedDelivery)
		}, `{"status":"skipped","delivery_id":"` + skippedDelivery + `",` + kilnTwo},
	} {
		if out, err := r.op(); err != nil || !out.Replayed || string(out.Answer.JSON()) != r.body {
			t.Errorf("replay = %s (replayed %t), %v; want %s", out.Answer.JSON(), out.Replayed, err, r.body)
		}
	}
	// The same key asking to wait is another request.
	if _, err := eng.Reserve(ctx, "erin", "0e3c5f2a-8b1d-4c6e-9f7a-1b2c3d4e5f67", engine.Request{Workshop: "kiln", Quantity: 1, Waitlist: true}); engine.ErrorCode(err) != engine.CodeOperationConflict {
		t.Errorf("erin's old key with waitlist: %v; want a conflict", err)
	}
	if w, err := eng.Workshop(ctx, "kiln"); err != nil || w.Waiting != 0 || w.OfferTTLSeconds != 0 || w.Available != 0 {
		t.Fatalf("kiln after the migration = %+v, %v; want full, nobody waiting", w, err)
	}

	// kiln is full: erin and frank join its waiting list.
	join := func(who string, quantity int) (engine.OperationKey, engine.Outcome) {
		t.Helper()
		key := newKey(t)
		out, err := eng.Reserve(ctx, who, key, engine.Request{Workshop: "kiln", Quantity: quantity, Waitlist: true})
		if err != nil || out.Answer.Status != engine.StatusWaiting {
			t.Fatalf("%s joins = %+v, %v", who, out, err)
		}
		return key, out
	}
	erinKey, erinJoin := join("erin", 1)
	_, frankJoin := join("frank", 2)
	if want := `{"status":"waiting","entry_id":"` + frankJoin.Answer.EntryID + `",` + strings.TrimSuffix(kilnTwo, "}") + `,"position":2}`; string(frankJoin.Answer.JSON()) != want {
		t.Errorf("frank's join = %s, want %s", frankJoin.Answer.JSON(), want)
	}
	if again, err := engine.New(s).Reserve(ctx, "erin", erinKey, engine.Request{Workshop: "kiln", Quantity: 1, Waitlist: true}); err != nil || !again.Replayed || string(again.Answer.JSON()) != string(erinJoin.Answer.JSON()) {
		t.Errorf("replay of erin's join = %s, %v; want %s", again.Answer.JSON(), err, erinJoin.Answer.JSON())
	}

	// The daemon of version 15 may not change kiln, whose waiting list it
	// would not serve, nor delete it; loom and its hold it still writes.
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	wantSQLState(t, "a version 15 reservation of kiln", rewrite15(t, conn, "workshops", workshopColumns15, "kiln", "reserved_places", "reserved_places + 1"), "55P03")
	wantSQLState(t, "a version 15 change of kiln's capacity", rewrite15(t, conn, "workshops", workshopColumns15, "kiln", "capacity", "capacity + 3"), "55P03")
	_, err = conn.Exec(ctx, "DELETE FROM workshops WHERE (id) = ($1)", "kiln")
	wantSQLState(t, "a version 15 deletion of kiln", err, "55P03")
	if err := rewrite15(t, conn, "workshops", workshopColumns15, "loom", "title", "'Loom room'"); err != nil {
		t.Errorf("a version 15 change of loom: %v", err)
	}
	if err := rewrite15(t, conn, "holds", holdColumns15, loomHold, "state", "state"); err != nil {
		t.Errorf("a version 15 write of bob's hold of loom: %v", err)
	}
	if w, err := eng.Workshop(ctx, "loom"); err != nil || w.Title != "Loom room" || w.Held != 1 {
		t.Errorf("loom after its change by the daemon of version 15 = %+v, %v", w, err)
	}

	// bob cancels: his place is offered to erin, whose offer the daemon
	// of version 15 may not settle; she confirms it.
	if out, err := eng.Cancel(ctx, bob, newKey(t), bobs); err != nil || out.Answer.Status != engine.StatusCancelled {
		t.Fatalf("bob cancels = %+v, %v", out, err)
	}
	es, _, err := eng.Waitlist(ctx, engine.Principal{Actor: "erin"}, engine.ListFilter{})
	if err != nil || len(es) != 1 || es[0].State != engine.WaitOffered {
		t.Fatalf("erin's entries after bob cancelled = %+v, %v", es, err)
	}
	offer := es[0].HoldID
	wantSQLState(t, "a version 15 confirmation of erin's offer", rewrite15(t, conn, "holds", holdColumns15, offer, "state", "'confirmed'"), "55P03")
	if out, err := eng.Confirm(ctx, engine.Principal{Actor: "erin"}, newKey(t), offer); err != nil || out.Answer.Status != engine.StatusReserved {
		t.Fatalf("erin confirms her offer = %+v, %v", out, err)
	}
	// dan cancels: frank is offered his 2 places, and declines them.
	if _, err := eng.Cancel(ctx, dan, newKey(t), dans); err != nil {
		t.Fatal(err)
	}
	leaveKey := newKey(t)
	frank := engine.Principal{Actor: "frank"}
	left, err := eng.LeaveWaitlist(ctx, frank, leaveKey, frankJoin.Answer.EntryID)
	if want := `{"status":"left","entry_id":"` + frankJoin.Answer.EntryID + `",` + kilnTwo; err != nil || string(left.Answer.JSON()) != want {
		t.Fatalf("frank leaves = %s, %v; want %s", left.Answer.JSON(), err, want)
	}
	if again, err := engine.New(s).LeaveWaitlist(ctx, frank, leaveKey, frankJoin.Answer.EntryID); err != nil || !again.Replayed || string(again.Answer.JSON()) != string(left.Answer.JSON()) {
		t.Errorf("replay of frank's leaving = %s, %v; want %s", again.Answer.JSON(), err, left.Answer.JSON())
	}
	if w, err := eng.Workshop(ctx, "kiln"); err != nil || w.Waiting != 0 || w.Available != 2 {
		t.Fatalf("kiln after the waiting list = %+v, %v; want nobody waiting, 2 places free", w, err)
	}
	var stamped int
	if err := conn.QueryRow(ctx, "SELECT (SELECT count(*) FROM workshops WHERE writer_schema IS NOT NULL) + (SELECT count(*) FROM holds WHERE writer_schema IS NOT NULL)").Scan(&stamped); err != nil || stamped != 0 {
		t.Errorf("%d rows keep the schema version of their writer (%v); the column must never be stored", stamped, err)
	}
	if findings, err := engine.CheckAt(ctx, s, clock); err != nil || len(findings) != 0 {
		t.Errorf("check after the waiting list: %v, %v", findings, err)
	}

	// The receipts expire: the tombstones of joining and leaving name
	// their entries, which the receipt expiry of the daemon of version 15
	// would drop.
	clock = clock.Add(48 * time.Hour)
	if _, err := eng.ExpireReceipts(ctx, 24*time.Hour, 100); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		retry func() error
		want  engine.Answer
	}{
		{func() error {
			_, err := eng.Reserve(ctx, "erin", erinKey, engine.Request{Workshop: "kiln", Quantity: 1, Waitlist: true})
			return err
		}, erinJoin.Answer},
		{func() error { _, err := eng.LeaveWaitlist(ctx, frank, leaveKey, frankJoin.Answer.EntryID); return err }, left.Answer},
	} {
		var expired *engine.ExpiredError
		if err := c.retry(); !errors.As(err, &expired) || expired.Tombstone.Answer.EntryID != c.want.EntryID || expired.Tombstone.Answer.Position != c.want.Position {
			t.Errorf("retry of an expired %s = %v; want expired naming entry %s at position %d", c.want.Status, err, c.want.EntryID, c.want.Position)
		}
	}
	_, err = conn.Exec(ctx, fmt.Sprintf("INSERT INTO tombstones (%s) VALUES ('gil', $1, 8, 'f', 'waiting', NULL, 'kiln', 1, $2, $2, NULL, NULL, NULL, NULL, NULL)",
		strings.Join(tombstoneColumns15, ", ")), string(newKey(t)), clock)
	wantSQLState(t, "a version 15 tombstone of a waiting answer", err, "23514")
	if findings, err := engine.CheckAt(ctx, s, clock); err != nil || len(findings) != 0 {
		t.Errorf("check after the receipts expired: %v, %v", findings, err)
	}
}
