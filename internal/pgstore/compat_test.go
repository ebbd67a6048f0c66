package pgstore_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/pgstore"
	"github.com/reserve/reserve/internal/pgstore/pgtest"
	"github.com/reserve/reserve/internal/server"
)

// schemaAsOf returns the DSN of a fresh schema made by the named migrations
// only, the first ones, recorded as the runner records them.
func schemaAsOf(t *testing.T, names ...string) string {
	t.Helper()
	dsn, _ := pgtest.FreshSchema(t)
	pgtest.Exec(t, dsn, `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`)
	for v, name := range names {
		sql, err := os.ReadFile(filepath.Join("migrations", name+".sql"))
		if err != nil {
			t.Fatal(err)
		}
		for _, step := range pgstore.MigrationSteps(string(sql)) {
			pgtest.Exec(t, dsn, step)
		}
		pgtest.Exec(t, dsn, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, v+1, name)
	}
	return dsn
}

// TestSchema3Records: a database as schema versions 1–3 made it (only
// their migrations run) and their rows as they wrote them (each receipt
// with its HTTP status and body, a tombstone with its HTTP status, an event
// with its payload) is migrated on open; every receipt then replays the
// HTTP status and the bytes it replayed before, also a body that no engine
// wrote, the tombstone still refuses its key, and the event delivers its
// payload byte for byte.
func TestSchema3Records(t *testing.T) {
	dsn := schemaAsOf(t, "0001_init", "0002_token_kinds", "0003_lifecycle")
	at := time.Date(2026, 11, 29, 12, 0, 0, 123456000, time.UTC)
	req := engine.Request{Workshop: "go-basics", Quantity: 2}
	const resID, cancelled = "0192f0a1b2c3d4e5f60718293a4b5c6d", "0192f0a1b2c3d4e5f60718293a4b5c6e"
	type row struct {
		key, reservationID string
		version, status    int
		body               string
	}
	rows := []row{
		{"f47ac10b-58cc-4372-a567-0e02b2c3d470", resID, 1, 201, `{"status":"reserved","reservation_id":"` + resID + `","workshop":"go-basics","quantity":2}`},
		{"f47ac10b-58cc-4372-a567-0e02b2c3d471", "", 1, 409, `{"status":"unavailable","workshop":"go-basics","quantity":2}`},
		{"f47ac10b-58cc-4372-a567-0e02b2c3d472", cancelled, 2, 200, `{"status":"cancelled","reservation_id":"` + cancelled + `","workshop":"go-basics","quantity":2}`},
		{"f47ac10b-58cc-4372-a567-0e02b2c3d473", cancelled, 2, 409, `{"status":"already_cancelled","reservation_id":"` + cancelled + `","workshop":"go-basics","quantity":2}`},
		// A body that is not the answer's own encoding replays as it is.
		{"f47ac10b-58cc-4372-a567-0e02b2c3d474", "", 1, 409, `{"workshop":"go-basics","quantity":2,"status":"unavailable"}`},
	}
	for _, r := range rows {
		fp := engine.Fingerprint(req)
		if engine.FingerprintVersion(r.version) == engine.CancelFingerprintV1 {
			fp = engine.CancelFingerprint(r.reservationID)
		}
		var id *string
		if r.reservationID != "" {
			id = &r.reservationID
		}
		pgtest.Exec(t, dsn, `INSERT INTO receipts (actor, operation_key, fingerprint_version, fingerprint, workshop, quantity, http_status, body, reservation_id, created_at)
			VALUES ('alice', $1, $2, $3, 'go-basics', 2, $4, $5, $6, $7)`, r.key, r.version, fp, r.status, []byte(r.body), id, at)
	}
	const expiredKey = "f47ac10b-58cc-4372-a567-0e02b2c3d475"
	pgtest.Exec(t, dsn, `INSERT INTO tombstones (actor, operation_key, fingerprint_version, fingerprint, http_status, status, reservation_id, workshop, quantity, created_at, purged_at)
		VALUES ('alice', $1, 1, $2, 201, 'reserved', $3, 'go-basics', 2, $4, $4)`, expiredKey, engine.Fingerprint(req), resID, at)
	payload := `{"id":"e1","type":"reservation.confirmed","at":"2026-11-29T12:00:00.123456789Z"}`
	pgtest.Exec(t, dsn, `INSERT INTO events (id, type, reservation_id, actor, operation_key, payload, created_at) VALUES ('e1', 'reservation.confirmed', $1, 'alice', $2, $3, $4)`,
		resID, rows[0].key, []byte(payload), at)

	s := mustOpenDSN(t, dsn, pgstore.Options{})
	eng := engine.New(s)
	for _, r := range rows {
		var out engine.Outcome
		var err error
		if engine.FingerprintVersion(r.version) == engine.CancelFingerprintV1 {
			out, err = eng.Cancel(t.Context(), engine.Principal{Actor: "alice"}, engine.OperationKey(r.key), r.reservationID)
		} else {
			out, err = eng.Reserve(t.Context(), "alice", engine.OperationKey(r.key), req)
		}
		if err != nil || !out.Replayed || server.StatusOfAnswer(out.Answer) != r.status || string(out.Answer.JSON()) != r.body {
			t.Errorf("replay of %d %s = %d %s (%+v), %v", r.status, r.body, server.StatusOfAnswer(out.Answer), out.Answer.JSON(), out, err)
		}
	}
	_, err := eng.Reserve(t.Context(), "alice", expiredKey, req)
	var expired *engine.ExpiredError
	if !errors.As(err, &expired) || server.StatusOfAnswer(expired.Tombstone.Answer) != 201 {
		t.Errorf("retry of the expired key = %v", err)
	}
	evs, err := eng.PendingEvents(t.Context(), 10)
	if err != nil || len(evs) != 1 {
		t.Fatalf("pending events = %+v, %v", evs, err)
	}
	if got, err := evs[0].Payload(); err != nil || string(got) != payload {
		t.Errorf("payload = %s, %v; want %s", got, err, payload)
	}
}

// TestSchema4GetsHolds: a database as schema versions 1–4 made it, with a
// workshop and a receipt as version 4 wrote them, gets the holds of
// migration 5 on open: the workshop's holding counter starts at zero,
// holds work in it, and the receipt replays byte for byte.
func TestSchema4GetsHolds(t *testing.T) {
	dsn := schemaAsOf(t, "0001_init", "0002_token_kinds", "0003_lifecycle", "0004_answer_status")
	req := engine.Request{Workshop: "go-basics", Quantity: 2}
	const key = "f47ac10b-58cc-4372-a567-0e02b2c3d470"
	body := `{"status":"unavailable","workshop":"go-basics","quantity":2}`
	pgtest.Exec(t, dsn, `INSERT INTO workshops (id, title, capacity, reserved, max_quantity, version) VALUES ('go-basics', 'Go', 3, 0, 2, 1)`)
	pgtest.Exec(t, dsn, `INSERT INTO receipts (actor, operation_key, fingerprint_version, fingerprint, workshop, quantity, status, body, reservation_id, created_at)
		VALUES ('alice', $1, 1, $2, 'go-basics', 2, 'unavailable', $3, NULL, $4)`, key, engine.Fingerprint(req), []byte(body), time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))

	s := mustOpenDSN(t, dsn, pgstore.Options{})
	eng := engine.New(s)
	out, err := eng.Reserve(t.Context(), "alice", key, req)
	if err != nil || !out.Replayed || string(out.Answer.JSON()) != body {
		t.Fatalf("replay of a version 4 receipt = %+v %s, %v; want %s", out, out.Answer.JSON(), err, body)
	}
	held, err := eng.Hold(t.Context(), "bob", "f47ac10b-58cc-4372-a567-0e02b2c3d471", engine.HoldRequest{Workshop: "go-basics", Quantity: 2, TTLSeconds: 60})
	if err != nil || held.Answer.Status != engine.StatusHeld {
		t.Fatalf("hold after the upgrade = %+v, %v", held, err)
	}
	if again, err := eng.Hold(t.Context(), "bob", "f47ac10b-58cc-4372-a567-0e02b2c3d471", engine.HoldRequest{Workshop: "go-basics", Quantity: 2, TTLSeconds: 60}); err != nil || !again.Replayed || string(again.Answer.JSON()) != string(held.Answer.JSON()) {
		t.Fatalf("hold replay = %+v, %v", again, err)
	}
	if w, err := eng.Workshop(t.Context(), "go-basics"); err != nil || w.Held != 2 || w.Available != 1 {
		t.Fatalf("workshop after a hold = %+v, %v", w, err)
	}
	if findings, err := engine.Check(t.Context(), s); err != nil || len(findings) != 0 {
		t.Errorf("check after the upgrade: %v, %v", findings, err)
	}
	// A daemon of version 4 still running reads and writes workshops as
	// below; after the migration that fails (undefined column) instead of
	// deciding without the held places.
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	for _, old := range []string{
		`SELECT id, title, capacity, reserved, max_quantity, version FROM workshops WHERE (id) = ($1) FOR UPDATE`,
		`INSERT INTO workshops (id, title, capacity, reserved, max_quantity, version) VALUES ($1, 'x', 9, 0, 1, 1) ON CONFLICT (id) DO UPDATE SET reserved = EXCLUDED.reserved`,
	} {
		var pgErr *pgconn.PgError
		_, err := conn.Exec(t.Context(), old, "go-basics")
		if !errors.As(err, &pgErr) || pgErr.Code != "42703" {
			t.Errorf("a version 4 statement on the migrated database: %v, want undefined_column", err)
		}
	}
}

// TestSchema4GetsTimeIndexes: a database as schema versions 1–4 left it,
// with rows, and with an INVALID index of the name migration 0006 uses (what
// an interrupted concurrent build leaves), is migrated on open: both time
// indexes exist, are valid and have the columns of the time order, version
// 6 is recorded, receipts still replay byte for byte, the operations view
// lists the rows newest first, and the old receipts expire.
func TestSchema4GetsTimeIndexes(t *testing.T) {
	dsn := schemaAsOf(t, "0001_init", "0002_token_kinds", "0003_lifecycle", "0004_answer_status")
	at := time.Date(2026, 11, 29, 12, 0, 0, 123456000, time.UTC)
	req := engine.Request{Workshop: "go-basics", Quantity: 2}
	body := `{"status":"unavailable","workshop":"go-basics","quantity":2}`
	keys := []string{"f47ac10b-58cc-4372-a567-0e02b2c3d470", "f47ac10b-58cc-4372-a567-0e02b2c3d471", "f47ac10b-58cc-4372-a567-0e02b2c3d472"}
	for i, key := range keys {
		pgtest.Exec(t, dsn, `INSERT INTO receipts (actor, operation_key, fingerprint_version, fingerprint, workshop, quantity, status, body, reservation_id, created_at)
			VALUES ('alice', $1, 1, $2, 'go-basics', 2, 'unavailable', $3, NULL, $4)`, key, engine.Fingerprint(req), []byte(body), at.Add(time.Duration(i)*time.Hour))
	}
	const expiredKey = "f47ac10b-58cc-4372-a567-0e02b2c3d475"
	pgtest.Exec(t, dsn, `INSERT INTO tombstones (actor, operation_key, fingerprint_version, fingerprint, status, reservation_id, workshop, quantity, created_at, purged_at)
		VALUES ('bob', $1, 1, $2, 'unavailable', NULL, 'go-basics', 2, $3, $3)`, expiredKey, engine.Fingerprint(req), at.Add(90*time.Minute))
	// A unique index that cannot be built leaves an INVALID index behind.
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(t.Context(), `CREATE UNIQUE INDEX CONCURRENTLY receipts_by_time ON receipts (workshop)`)
	conn.Close(t.Context())
	if err == nil {
		t.Fatal("the unique index of duplicates was built")
	}

	s := mustOpenDSN(t, dsn, pgstore.Options{})
	wantAllVersions(t, s)
	for _, name := range []string{"receipts", "tombstones"} {
		var valid bool
		var def string
		err := s.Pool().QueryRow(t.Context(), `SELECT i.indisvalid, pg_get_indexdef(i.indexrelid) FROM pg_index i WHERE i.indexrelid = to_regclass($1)`,
			name+"_by_time").Scan(&valid, &def)
		if err != nil || !valid || !strings.HasPrefix(def, "CREATE INDEX ") || !strings.HasSuffix(def, "."+name+" USING btree (created_at, actor, operation_key)") {
			t.Errorf("index %s_by_time: valid %v, %q, %v", name, valid, def, err)
		}
	}
	clock := at.Add(48 * time.Hour)
	eng := engine.New(s, engine.WithClock(func() time.Time { return clock }))
	out, err := eng.Reserve(t.Context(), "alice", engine.OperationKey(keys[0]), req)
	if err != nil || !out.Replayed || string(out.Answer.JSON()) != body {
		t.Fatalf("replay = %s (%+v), %v; want %s", out.Answer.JSON(), out, err, body)
	}
	ops, _, err := eng.Operations(t.Context(), engine.OperationFilter{})
	var got []string
	for _, op := range ops {
		got = append(got, string(op.Operation))
	}
	if want := []string{keys[2], expiredKey, keys[1], keys[0]}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("operations view = %q, %v; want %q", got, err, want)
	}
	if n, err := eng.ExpireReceipts(t.Context(), 47*time.Hour-30*time.Minute, 10); err != nil || n != 2 {
		t.Fatalf("ExpireReceipts = %d, %v; want the 2 receipts older than the cutoff", n, err)
	}
	if findings, err := s.Check(t.Context()); err != nil || len(findings) != 0 {
		t.Fatalf("check: %v, %v", findings, err)
	}
}

// TestSchema7GetsHiddenWorkshops: a database as schema versions 1–7 made
// it, with a workshop and a receipt as version 7 wrote them, gets hidden
// workshops on open: the workshop stays listed, its receipt replays byte
// for byte, hiding it leaves it out of the list only, and an update by a
// daemon of version 7 (which names no hidden column) keeps it hidden.
func TestSchema7GetsHiddenWorkshops(t *testing.T) {
	dsn := schemaAsOf(t, "0001_init", "0002_token_kinds", "0003_lifecycle", "0004_answer_status", "0005_holds", "0006_time_index", "0007_actor_index")
	req := engine.Request{Workshop: "go-basics", Quantity: 2}
	const key = "f47ac10b-58cc-4372-a567-0e02b2c3d470"
	body := `{"status":"unavailable","workshop":"go-basics","quantity":2}`
	pgtest.Exec(t, dsn, `INSERT INTO workshops (id, title, capacity, reserved_places, max_quantity, version, holding) VALUES ('go-basics', 'Go', 3, 0, 2, 1, 0)`)
	pgtest.Exec(t, dsn, `INSERT INTO receipts (actor, operation_key, fingerprint_version, fingerprint, workshop, quantity, status, body, reservation_id, created_at)
		VALUES ('alice', $1, 1, $2, 'go-basics', 2, 'unavailable', $3, NULL, $4)`, key, engine.Fingerprint(req), []byte(body), time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))

	s := mustOpenDSN(t, dsn, pgstore.Options{})
	wantAllVersions(t, s)
	eng := engine.New(s)
	if ws, err := eng.Workshops(t.Context(), false); err != nil || len(ws) != 1 || ws[0].Hidden {
		t.Fatalf("workshops after the upgrade = %+v, %v", ws, err)
	}
	hidden := true
	if w, _, err := eng.PutWorkshop(t.Context(), "go-basics", engine.WorkshopSpec{Capacity: 3, Hidden: &hidden}, nil); err != nil || !w.Hidden {
		t.Fatalf("hide = %+v, %v", w, err)
	}
	if ws, err := eng.Workshops(t.Context(), false); err != nil || len(ws) != 0 {
		t.Errorf("listed workshops after hiding = %+v, %v", ws, err)
	}
	out, err := eng.Reserve(t.Context(), "alice", key, req)
	if err != nil || !out.Replayed || string(out.Answer.JSON()) != body {
		t.Fatalf("replay of a version 7 receipt = %+v %s, %v; want %s", out, out.Answer.JSON(), err, body)
	}
	pgtest.Exec(t, dsn, `INSERT INTO workshops (id, title, capacity, reserved_places, max_quantity, version, holding) VALUES ('go-basics', 'Go', 5, 0, 2, 3, 0)
		ON CONFLICT (id) DO UPDATE SET title = EXCLUDED.title, capacity = EXCLUDED.capacity, reserved_places = EXCLUDED.reserved_places,
		max_quantity = EXCLUDED.max_quantity, version = EXCLUDED.version, holding = EXCLUDED.holding`)
	if ws, err := eng.Workshops(t.Context(), true); err != nil || len(ws) != 1 || !ws[0].Hidden || ws[0].Capacity != 5 {
		t.Errorf("workshops after an update by a version 7 daemon = %+v, %v", ws, err)
	}
}

// TestSchema8GetsBindings: a database as schema versions 1–8 made it, with
// the receipts of socket actors as version 8 named them (unix-alice for
// uid 1000, uid-1001 for a uid without a name), gets the bindings of
// migration 9 on open: each uid's first request binds it to the actor name
// it resolves to then, its receipts replay byte for byte as that actor,
// and the binding is one row of actor_bindings, which a second subject
// wanting the name does not get.
func TestSchema8GetsBindings(t *testing.T) {
	dsn := schemaAsOf(t, "0001_init", "0002_token_kinds", "0003_lifecycle", "0004_answer_status", "0005_holds", "0006_time_index", "0007_actor_index", "0008_workshop_hidden")
	req := engine.Request{Workshop: "go-basics", Quantity: 2}
	body := `{"status":"unavailable","workshop":"go-basics","quantity":2}`
	keys := map[string]string{"unix-alice": "f47ac10b-58cc-4372-a567-0e02b2c3d470", "uid-1001": "f47ac10b-58cc-4372-a567-0e02b2c3d471"}
	pgtest.Exec(t, dsn, `INSERT INTO workshops (id, title, capacity, reserved_places, max_quantity, version, holding, hidden) VALUES ('go-basics', 'Go', 3, 0, 2, 1, 0, false)`)
	for actor, key := range keys {
		pgtest.Exec(t, dsn, `INSERT INTO receipts (actor, operation_key, fingerprint_version, fingerprint, workshop, quantity, status, body, reservation_id, created_at)
			VALUES ($1, $2, 1, $3, 'go-basics', 2, 'unavailable', $4, NULL, $5)`, actor, key, engine.Fingerprint(req), []byte(body), time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	}

	s := mustOpenDSN(t, dsn, pgstore.Options{})
	wantAllVersions(t, s)
	eng := engine.New(s)
	for uid, name := range map[uint32]string{1000: "unix-alice", 1001: "uid-1001"} {
		actor, err := eng.ActorOf(t.Context(), engine.UIDSubject(uid), func() (string, error) { return name, nil })
		if err != nil || actor != name {
			t.Fatalf("uid %d after the upgrade is bound to %s, %v; want %s", uid, actor, err, name)
		}
		out, err := eng.Reserve(t.Context(), actor, engine.OperationKey(keys[name]), req)
		if err != nil || !out.Replayed || string(out.Answer.JSON()) != body {
			t.Fatalf("replay of %s's version 8 receipt = %+v %s, %v; want %s", actor, out, out.Answer.JSON(), err, body)
		}
	}
	if actor, err := engine.New(s).ActorOf(t.Context(), engine.UIDSubject(1002), func() (string, error) { return "unix-alice", nil }); err != nil || actor != "unix-alice-2" {
		t.Fatalf("a second uid named alice is bound to %s, %v; want unix-alice-2", actor, err)
	}
	var n int
	if err := s.Pool().QueryRow(t.Context(), `SELECT count(*) FROM actor_bindings WHERE subject_kind = 'uid' AND subject_id = '1000' AND actor = 'unix-alice'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows of uid 1000 in actor_bindings = %d, %v; want 1", n, err)
	}
	if findings, err := s.Check(t.Context()); err != nil || len(findings) != 0 {
		t.Errorf("check after binding: %v, %v", findings, err)
	}
}

// TestSchema8GetsTokenLifecycle: API tokens, a login code and a session as
// a database of schema version 8 holds them (no id, no last use) are
// migrated on open: every API token gets the id engine.TokenID derives,
// is listed (the others are not), authenticates without expiry and is
// revoked by its id; a token that a daemon of version 8 creates after the
// migration, writing only the columns it knows, has its id too.
func TestSchema8GetsTokenLifecycle(t *testing.T) {
	dsn := schemaAsOf(t, "0001_init", "0002_token_kinds", "0003_lifecycle", "0004_answer_status", "0005_holds", "0006_time_index", "0007_actor_index", "0008_workshop_hidden")
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	const alice, ops, session, late = "rsv_alice-as-version-8-stored-it", "rsv_ops-as-version-8-stored-it", "rss_a-session-of-version-8", "rsv_made-by-a-version-8-daemon-later"
	insert := func(secret, kind, actor string, admin bool, expires *time.Time) {
		pgtest.Exec(t, dsn, `INSERT INTO tokens (hash, kind, actor, admin, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
			engine.HashToken(secret), kind, actor, admin, at, expires)
	}
	insert(alice, "api", "alice", false, nil)
	insert(ops, "api", "ops", true, nil)
	until := at.Add(time.Hour)
	insert(session, "session", "dave", false, &until)

	s := mustOpenDSN(t, dsn, pgstore.Options{})
	wantAllVersions(t, s)
	insert(late, "api", "late", false, nil) // A daemon of version 8, still running.
	eng := engine.New(s, engine.WithClock(func() time.Time { return at.Add(time.Minute) }), engine.WithTokenCacheTTL(time.Millisecond))
	list, err := eng.Tokens(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]engine.TokenInfo{}
	for secret, p := range map[string]engine.Principal{alice: {Actor: "alice"}, ops: {Actor: "ops", Admin: true}, late: {Actor: "late"}} {
		id := engine.TokenID(engine.HashToken(secret))
		want[id] = engine.TokenInfo{ID: id, Actor: p.Actor, Admin: p.Admin, CreatedAt: at}
		if got, err := eng.Authenticate(t.Context(), secret); err != nil || got != p {
			t.Errorf("token of %s after the migration = %+v, %v", p.Actor, got, err)
		}
	}
	if len(list) != len(want) {
		t.Fatalf("tokens after the migration = %+v, want %d", list, len(want))
	}
	for _, info := range list {
		if info != want[info.ID] {
			t.Errorf("listed %+v, want %+v", info, want[info.ID])
		}
	}
	if p, err := eng.SessionPrincipal(t.Context(), session); err != nil || p.Actor != "dave" {
		t.Errorf("the session after the migration = %+v, %v", p, err)
	}
	if err := eng.RevokeToken(t.Context(), engine.TokenID(engine.HashToken(late))); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Authenticate(t.Context(), late); engine.ErrorCode(err) != engine.CodeUnauthenticated {
		t.Errorf("the revoked token: %v", err)
	}
}

// TestSchema10GetsWorkshopSchedules: a database as schema versions 1–10
// made it, with the rows that a daemon of version 10 wrote (copied from
// one: four workshops, one hidden; reservations, one cancelled; an open
// and a confirmed hold; the receipts of every answer with their bodies;
// a tombstone), gets the schedules of migration 11 on open: every answer
// replays byte for byte, the workshops have an empty schedule and open
// registration, the new indexes by workshop and actor list the old rows,
// and a limit set afterwards counts them: its limit_reached answer
// replays, and its tombstone keeps the limit and the places already,
// while the old tombstone reads without one.
func TestSchema10GetsWorkshopSchedules(t *testing.T) {
	dsn := schemaAsOf(t, "0001_init", "0002_token_kinds", "0003_lifecycle", "0004_answer_status", "0005_holds", "0006_time_index",
		"0007_actor_index", "0008_workshop_hidden", "0009_identity_bindings", "0010_token_lifecycle")
	at := time.Date(2026, 12, 2, 5, 47, 33, 0, time.UTC)
	ms := func(n int) time.Time { return at.Add(time.Duration(n) * time.Millisecond) }
	const (
		r1, r2, r3 = "01a2354b3da00e0c36927cf3cbecf69a", "01a2354b3db1076a8181edb23a486ef4", "01a2354b3dc3135b5a66b775598e8211"
		r4, r5, r6 = "01a2354b3e067a59a040cf785209b7fe", "01a2354b3e1a4823ffc1db3b23778112", "01a2354b3eaa7a90f306882a6f117786"
		h1, h2     = "01a2354b3de30321b6c4c01d0ba07c70", "01a2354b3df33e6ec24863bf852f950a"
	)
	event := func(id, typ, reservation, actor, key, workshop string, quantity int, at time.Time) {
		payload := fmt.Sprintf(`{"id":%q,"type":%q,"reservation_id":%q,"owner":%q,"actor":%q,"operation":%q,"workshop":%q,"quantity":%d,"at":%q}`,
			id, typ, reservation, actor, actor, key, workshop, quantity, at.Format(time.RFC3339Nano))
		pgtest.Exec(t, dsn, `INSERT INTO events (id, type, reservation_id, actor, operation_key, payload, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			id, typ, reservation, actor, key, []byte(payload), at)
	}
	for _, w := range []string{`'backstage', 'Backstage tour', 3, 0, 3, 1, 0, true`, `'full', 'full', 1, 1, 1, 1, 0, false`,
		`'go-basics', 'Go basics', 5, 3, 5, 1, 1, false`, `'rust-intro', 'Intro to Rust', 4, 3, 2, 1, 0, false`} {
		pgtest.Exec(t, dsn, `INSERT INTO workshops (id, title, capacity, reserved_places, max_quantity, version, holding, hidden) VALUES (`+w+`)`)
	}
	for _, r := range []struct {
		id, actor, key, workshop string
		quantity, at             int
	}{
		{r1, "unix-root", "19f20b8d-eaa2-4eba-be3c-392caa9a1a4e", "go-basics", 2, 152},
		{r2, "unix-nobody", "7c923086-6736-49a8-9990-a20391735580", "go-basics", 1, 169},
		{r3, "unix-postgres", "c1c0e921-0499-4e06-878d-693c0bb429cc", "full", 1, 187},
		{r4, "unix-postgres", "85941a08-3f88-4a61-bba3-ccb98187ebe5", "rust-intro", 2, 254},
		{r5, "unix-nobody", "d4af3e76-4265-4d02-806e-80c705a826ab", "backstage", 1, 274},
		{r6, "unix-root", "77dcfc8a-5ced-4c07-87ce-67f7bf3ae9d9", "rust-intro", 1, 418},
	} {
		pgtest.Exec(t, dsn, `INSERT INTO reservations (id, actor, operation_key, workshop, quantity, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
			r.id, r.actor, r.key, r.workshop, r.quantity, ms(r.at))
		event(r.id+"c", "reservation.confirmed", r.id, r.actor, r.key, r.workshop, r.quantity, ms(r.at))
	}
	const cancelKey = "ed1943ba-0486-4627-b964-5a31019450cd"
	pgtest.Exec(t, dsn, `UPDATE reservations SET cancelled_at = $1, cancelled_by = 'unix-nobody', cancel_operation = $2 WHERE id = $3`, ms(402), cancelKey, r5)
	event(r5+"x", "reservation.cancelled", r5, "unix-nobody", cancelKey, "backstage", 1, ms(402))
	pgtest.Exec(t, dsn, `INSERT INTO holds (id, actor, operation_key, workshop, quantity, state, created_at, expires_at) VALUES ($1, 'unix-root', '50cf9ff5-c729-40e8-8bae-2bca9df24d38', 'go-basics', 1, 'held', $2, $3)`,
		h1, ms(219), at.Add(24*time.Hour))
	pgtest.Exec(t, dsn, `INSERT INTO holds (id, actor, operation_key, workshop, quantity, state, created_at, expires_at, reservation_id, settled_at, settle_operation)
		VALUES ($1, 'unix-postgres', 'e03bc603-de6f-48c8-9b22-4665e50304ea', 'rust-intro', 2, 'confirmed', $2, $3, $4, $5, '85941a08-3f88-4a61-bba3-ccb98187ebe5')`,
		h2, ms(235), at.Add(10*time.Minute), r4, ms(254))
	type receipt struct {
		actor, key, op, workshop string
		quantity, at, ttl        int
		id, status, body         string // id: the reservation's, or for a hold and its confirmation the hold's.
	}
	receipts := []receipt{
		{"unix-root", "19f20b8d-eaa2-4eba-be3c-392caa9a1a4e", "reserve", "go-basics", 2, 152, 0, r1, "reserved",
			`{"status":"reserved","reservation_id":"` + r1 + `","workshop":"go-basics","quantity":2}`},
		{"unix-nobody", "7c923086-6736-49a8-9990-a20391735580", "reserve", "go-basics", 1, 169, 0, r2, "reserved",
			`{"status":"reserved","reservation_id":"` + r2 + `","workshop":"go-basics","quantity":1}`},
		{"unix-postgres", "c1c0e921-0499-4e06-878d-693c0bb429cc", "reserve", "full", 1, 187, 0, r3, "reserved",
			`{"status":"reserved","reservation_id":"` + r3 + `","workshop":"full","quantity":1}`},
		{"unix-nobody", "1fe5c56f-f51a-4bd9-ad1b-e0220f19e179", "reserve", "full", 1, 203, 0, "", "unavailable",
			`{"status":"unavailable","workshop":"full","quantity":1}`},
		{"unix-root", "50cf9ff5-c729-40e8-8bae-2bca9df24d38", "hold", "go-basics", 1, 219, 86400, h1, "held",
			`{"status":"held","hold_id":"` + h1 + `","workshop":"go-basics","quantity":1,"expires_at":"2026-12-03T05:47:33Z"}`},
		{"unix-postgres", "e03bc603-de6f-48c8-9b22-4665e50304ea", "hold", "rust-intro", 2, 235, 600, h2, "held",
			`{"status":"held","hold_id":"` + h2 + `","workshop":"rust-intro","quantity":2,"expires_at":"2026-12-02T05:57:33Z"}`},
		{"unix-postgres", "85941a08-3f88-4a61-bba3-ccb98187ebe5", "confirm", "rust-intro", 2, 254, 0, h2, "reserved",
			`{"status":"reserved","reservation_id":"` + r4 + `","hold_id":"` + h2 + `","workshop":"rust-intro","quantity":2}`},
		{"unix-nobody", "d4af3e76-4265-4d02-806e-80c705a826ab", "reserve", "backstage", 1, 274, 0, r5, "reserved",
			`{"status":"reserved","reservation_id":"` + r5 + `","workshop":"backstage","quantity":1}`},
		{"unix-nobody", cancelKey, "cancel", "backstage", 1, 402, 0, r5, "cancelled",
			`{"status":"cancelled","reservation_id":"` + r5 + `","workshop":"backstage","quantity":1}`},
		{"unix-root", "77dcfc8a-5ced-4c07-87ce-67f7bf3ae9d9", "reserve", "rust-intro", 1, 418, 0, r6, "reserved",
			`{"status":"reserved","reservation_id":"` + r6 + `","workshop":"rust-intro","quantity":1}`},
	}
	for _, r := range receipts {
		req := engine.Request{Workshop: r.workshop, Quantity: r.quantity}
		version, fp, resID, holdID := engine.ReserveFingerprintV1, engine.Fingerprint(req), &r.id, (*string)(nil)
		var expires *time.Time
		switch r.op {
		case "cancel":
			version, fp = engine.CancelFingerprintV1, engine.CancelFingerprint(r.id)
		case "hold":
			version, fp, resID, holdID = engine.HoldFingerprintV1, engine.HoldFingerprint(engine.HoldRequest{Workshop: r.workshop, Quantity: r.quantity, TTLSeconds: r.ttl}), nil, &r.id
			until := at.Add(time.Duration(r.ttl) * time.Second)
			expires = &until
		case "confirm":
			version, fp, resID, holdID = engine.ConfirmFingerprintV1, engine.SettleFingerprint(engine.OperationConfirm, r.id), ptr(r4), &r.id
		}
		if r.status == "unavailable" {
			resID = nil
		}
		pgtest.Exec(t, dsn, `INSERT INTO receipts (actor, operation_key, fingerprint_version, fingerprint, workshop, quantity, body, reservation_id, created_at, status, hold_id, hold_expires_at, hold_ttl_seconds)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
			r.actor, r.key, version, fp, r.workshop, r.quantity, []byte(r.body), resID, ms(r.at), r.status, holdID, expires, r.ttl)
	}
	const oldTombstone = "0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d3"
	oldReq := engine.Request{Workshop: "full", Quantity: 1}
	pgtest.Exec(t, dsn, `INSERT INTO tombstones (actor, operation_key, fingerprint_version, fingerprint, status, reservation_id, workshop, quantity, created_at, purged_at)
		VALUES ('unix-root', $1, 1, $2, 'unavailable', NULL, 'full', 1, $3, $4)`, oldTombstone, engine.Fingerprint(oldReq), at.Add(-48*time.Hour), at.Add(-time.Hour))

	s := mustOpenDSN(t, dsn, pgstore.Options{})
	wantAllVersions(t, s)
	clock := at.Add(time.Minute)
	eng := engine.New(s, engine.WithClock(func() time.Time { return clock }))
	replay := func(when string) {
		t.Helper()
		for _, r := range receipts {
			key, who := engine.OperationKey(r.key), engine.Principal{Actor: r.actor}
			var out engine.Outcome
			var err error
			switch r.op {
			case "reserve":
				out, err = eng.Reserve(t.Context(), r.actor, key, engine.Request{Workshop: r.workshop, Quantity: r.quantity})
			case "hold":
				out, err = eng.Hold(t.Context(), r.actor, key, engine.HoldRequest{Workshop: r.workshop, Quantity: r.quantity, TTLSeconds: r.ttl})
			case "confirm":
				out, err = eng.Confirm(t.Context(), who, key, r.id)
			case "cancel":
				out, err = eng.Cancel(t.Context(), who, key, r.id)
			}
			if err != nil || !out.Replayed || string(out.Answer.JSON()) != r.body {
				t.Errorf("%s: replay of %s's %s %s = %s (replayed %t), %v; want %s", when, r.actor, r.op, r.key, out.Answer.JSON(), out.Replayed, err, r.body)
			}
		}
	}
	replay("after the migration")
	ws, err := eng.Workshops(t.Context(), true)
	if err != nil || len(ws) != 4 {
		t.Fatalf("workshops after the migration = %+v, %v", ws, err)
	}
	for _, w := range ws {
		// A workshop without a schedule shows no registration state, as
		// before; its registration is open.
		if w.Schedule != (engine.Schedule{}) || w.Registration != "" || w.RegistrationAt(clock) != engine.RegistrationOpen || w.Hidden != (w.ID == "backstage") {
			t.Errorf("workshop %s after the migration = %+v, want no schedule", w.ID, w)
		}
	}

	// The indexes by workshop and actor exist, a workshop's page is read
	// through them, and they list the old rows.
	for _, name := range []string{"reservations", "holds"} {
		var valid bool
		var def string
		err := s.Pool().QueryRow(t.Context(), `SELECT i.indisvalid, pg_get_indexdef(i.indexrelid) FROM pg_index i WHERE i.indexrelid = to_regclass($1)`,
			name+"_by_workshop").Scan(&valid, &def)
		if err != nil || !valid || !strings.HasSuffix(def, "."+name+" USING btree (workshop, actor, id)") {
			t.Errorf("index %s_by_workshop: valid %v, %q, %v", name, valid, def, err)
		}
	}
	err = pgx.BeginFunc(t.Context(), s.Pool(), func(tx pgx.Tx) error {
		if _, err := tx.Exec(t.Context(), "SET LOCAL enable_seqscan = off"); err != nil {
			return err
		}
		var plan strings.Builder
		rows, err := tx.Query(t.Context(), `EXPLAIN SELECT id FROM reservations WHERE workshop = $1 AND (actor, id) > ($2, $3) ORDER BY workshop, actor, id LIMIT 100`, "go-basics", "", "")
		if err != nil {
			return err
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				return err
			}
			plan.WriteString(line + "\n")
		}
		if !strings.Contains(plan.String(), "reservations_by_workshop") || strings.Contains(plan.String(), "Sort") {
			t.Errorf("a page of a workshop's reservations is not read through reservations_by_workshop:\n%s", plan.String())
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	for workshop, want := range map[string]struct{ reservations, holds []string }{
		"go-basics":  {[]string{"unix-nobody/" + r2, "unix-root/" + r1}, []string{"unix-root/" + h1}},
		"rust-intro": {[]string{"unix-postgres/" + r4, "unix-root/" + r6}, []string{"unix-postgres/" + h2}},
		"full":       {[]string{"unix-postgres/" + r3}, nil},
		"backstage":  {[]string{"unix-nobody/" + r5 + " cancelled"}, nil},
	} {
		var rs, hs []string
		err := s.View(t.Context(), func(tx engine.Tx) error {
			rs, hs = nil, nil
			if err := tx.ForEachReservationIn(workshop, engine.PersonPosition{}, func(r engine.Reservation) error {
				e := r.Actor + "/" + r.ID
				if r.Cancelled() {
					e += " cancelled"
				}
				rs = append(rs, e)
				return nil
			}); err != nil {
				return err
			}
			return tx.ForEachHoldIn(workshop, engine.PersonPosition{}, func(h engine.Hold) error {
				hs = append(hs, h.Actor+"/"+h.ID)
				return nil
			})
		})
		if err != nil || !slices.Equal(rs, want.reservations) || !slices.Equal(hs, want.holds) {
			t.Errorf("records of %s = %q, %q, %v; want %q, %q", workshop, rs, hs, err, want.reservations, want.holds)
		}
		as, _, err := eng.Attendees(t.Context(), engine.Principal{Actor: "unix-root", Admin: true}, workshop, engine.AttendeeFilter{Status: engine.ListAll})
		var got []string
		for _, a := range as {
			e := a.Actor + "/" + a.ReservationID
			if a.Status == engine.AttendeeCancelled {
				e += " cancelled"
			}
			got = append(got, e)
		}
		if err != nil || !slices.Equal(got, want.reservations) {
			t.Errorf("attendees of %s = %q, %v; want %q", workshop, got, err, want.reservations)
		}
	}

	// A limit per person counts the old rows: unix-root has 2 places
	// reserved and 1 held in go-basics.
	limit, starts := 3, at.Add(7*24*time.Hour)
	if _, err := eng.PatchWorkshop(t.Context(), "go-basics", engine.WorkshopPatch{MaxPerPerson: &limit, StartsAt: &starts}, nil); err != nil {
		t.Fatal(err)
	}
	const overKey, limitBody = "0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5", `{"status":"limit_reached","workshop":"go-basics","quantity":1,"max_per_person":3,"already":3}`
	over := engine.Request{Workshop: "go-basics", Quantity: 1}
	for _, replayed := range []bool{false, true} {
		if out, err := eng.Reserve(t.Context(), "unix-root", overKey, over); err != nil || out.Replayed != replayed || string(out.Answer.JSON()) != limitBody {
			t.Fatalf("unix-root over the limit = %s (replayed %t), %v; want %s (replayed %t)", out.Answer.JSON(), out.Replayed, err, limitBody, replayed)
		}
	}
	replay("after the limit")

	// Retention turns every receipt into a tombstone; the limit_reached
	// one keeps its limit, the old one has none.
	clock = at.Add(48 * time.Hour)
	if n, err := eng.ExpireReceipts(t.Context(), 24*time.Hour, 100); err != nil || n != len(receipts)+1 {
		t.Fatalf("ExpireReceipts = %d, %v; want %d", n, err, len(receipts)+1)
	}
	var maxPerPerson, already *int
	if err := s.Pool().QueryRow(t.Context(), `SELECT max_per_person, already FROM tombstones WHERE actor = 'unix-root' AND operation_key = $1`, overKey).Scan(&maxPerPerson, &already); err != nil ||
		maxPerPerson == nil || *maxPerPerson != 3 || already == nil || *already != 3 {
		t.Errorf("the limit_reached tombstone's columns = %v, %v, %v; want 3, 3", maxPerPerson, already, err)
	}
	for key, want := range map[string]struct {
		req   engine.Request
		limit engine.Limit
	}{overKey: {over, engine.Limit{MaxPerPerson: 3, Already: 3}}, oldTombstone: {oldReq, engine.Limit{}}} {
		_, err := eng.Reserve(t.Context(), "unix-root", engine.OperationKey(key), want.req)
		var expired *engine.ExpiredError
		if !errors.As(err, &expired) || expired.Tombstone.Answer.Limit != want.limit {
			t.Errorf("retry of the expired key %s = %v; want expired with limit %+v", key, err, want.limit)
		}
	}
	if findings, err := engine.CheckAt(t.Context(), s, clock); err != nil || len(findings) != 0 {
		t.Errorf("check after the expiry: %v, %v", findings, err)
	}
}

func ptr[T any](v T) *T { return &v }

// TestSchema12GetsProfiles: a database as schema versions 1–12 made it,
// with a binding of a provider's person, a workshop and a receipt as a
// daemon of version 12 wrote them, gets the profiles of migration 13 on
// open: the receipt replays byte for byte, the person keeps the actor, its
// profile is empty until it is changed, and a change is one row of
// profiles that a fresh engine reads.
func TestSchema12GetsProfiles(t *testing.T) {
	dsn := schemaAsOf(t, "0001_init", "0002_token_kinds", "0003_lifecycle", "0004_answer_status", "0005_holds", "0006_time_index",
		"0007_actor_index", "0008_workshop_hidden", "0009_identity_bindings", "0010_token_lifecycle", "0011_workshop_schedule", "0012_workshop_index")
	at := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
	req := engine.Request{Workshop: "go-basics", Quantity: 2}
	const key, body = "3b9f1c2e-4d5a-4e6f-8a7b-9c0d1e2f3a4b", `{"status":"unavailable","workshop":"go-basics","quantity":2}`
	subject := engine.OIDCSubject("https://id.example.org", "248289761001")
	pgtest.Exec(t, dsn, `INSERT INTO actor_bindings (subject_kind, subject_id, actor, created_at) VALUES ($1, $2, 'ada', $3)`, subject.Kind, subject.ID, at)
	pgtest.Exec(t, dsn, `INSERT INTO workshops (id, title, capacity, reserved_places, max_quantity, version, holding, hidden) VALUES ('go-basics', 'Go', 1, 0, 1, 1, 0, false)`)
	pgtest.Exec(t, dsn, `INSERT INTO receipts (actor, operation_key, fingerprint_version, fingerprint, workshop, quantity, status, body, reservation_id, created_at)
		VALUES ('ada', $1, 1, $2, 'go-basics', 2, 'unavailable', $3, NULL, $4)`, key, engine.Fingerprint(req), []byte(body), at)

	s := mustOpenDSN(t, dsn, pgstore.Options{})
	wantAllVersions(t, s)
	eng := engine.New(s, engine.WithClock(func() time.Time { return at.Add(time.Minute) }))
	if actor, err := eng.ActorOf(t.Context(), subject, func() (string, error) { return "other", nil }); err != nil || actor != "ada" {
		t.Fatalf("the provider's person after the migration is %s, %v; want ada", actor, err)
	}
	if out, err := eng.Reserve(t.Context(), "ada", key, req); err != nil || !out.Replayed || string(out.Answer.JSON()) != body {
		t.Fatalf("replay of ada's version 12 receipt = %+v %s, %v; want %s", out, out.Answer.JSON(), err, body)
	}
	if p, err := eng.ProfileOf(t.Context(), "ada"); err != nil || p != (engine.Profile{Actor: "ada"}) {
		t.Fatalf("ada's profile after the migration = %+v, %v; want the empty one", p, err)
	}
	if err := eng.FillDisplayName(t.Context(), "ada", "Ada Lovelace"); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.ChangeProfile(t.Context(), "ada", engine.ProfileChange{Language: ptr("de")}); err != nil {
		t.Fatal(err)
	}
	want := engine.Profile{Actor: "ada", DisplayName: "Ada Lovelace", Language: "de"}
	if p, err := engine.New(s).ProfileOf(t.Context(), "ada"); err != nil || p != want {
		t.Errorf("ada's profile read by a fresh engine = %+v, %v; want %+v", p, err, want)
	}
	var n int
	if err := s.Pool().QueryRow(t.Context(), `SELECT count(*) FROM profiles WHERE actor = 'ada' AND display_name = 'Ada Lovelace' AND language = 'de'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("rows of ada in profiles = %d, %v; want 1", n, err)
	}
	if findings, err := engine.CheckAt(t.Context(), s, at.Add(time.Minute)); err != nil || len(findings) != 0 {
		t.Errorf("check after the migration: %v, %v", findings, err)
	}
}

// TestSchema13GetsDeliveries: a database as schema versions 1–13 made it,
// with the rows of testdata/schema13.sql as a daemon of version 13 wrote
// them, gets hold events, routing, webhook endpoints and deliveries on
// open: its receipts replay byte for byte; its undelivered events stay
// pending for the simple channels, their payloads byte for byte, and are
// not routed anew, not even to an endpoint older than they are; the events
// written after the migration are routed once each, a hold event is not
// pending for the simple channels, also for the pending scan of a daemon
// of version 13 still running, and an event that daemon writes is routed
// too; the old profile gets a verified address.
func TestSchema13GetsDeliveries(t *testing.T) {
	dsn := schemaAsOf(t, migrationsThrough(t, 13)...)
	loadFixture(t, dsn, "schema13.sql")
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	// The scan of pending events of a daemon of version 13.
	oldPending := func() []string {
		t.Helper()
		rows, err := conn.Query(t.Context(), `SELECT id, type, reservation_id, actor, operation_key, payload, created_at, delivered_at FROM events WHERE delivered_at IS NULL ORDER BY id LIMIT 500`)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (string, error) {
			var id, typ, res, actor, key string
			var payload []byte
			var created time.Time
			var delivered *time.Time
			err := row.Scan(&id, &typ, &res, &actor, &key, &payload, &created, &delivered)
			return id, err
		})
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	const bobReserved, adaConfirmed, adaCancelled = "01a235fb7cf73356dec9336c743692d9", "01a235fb869c52aac95514c78ae451ba", "01a235fb8b6f4232994680aad76b0cc3"
	oldEvents := oldPending()
	if want := []string{bobReserved, adaConfirmed, adaCancelled}; !slices.Equal(oldEvents, want) {
		t.Fatalf("the fixture's pending events = %q, want %q", oldEvents, want)
	}
	payloads := map[string][]byte{}
	for _, id := range oldEvents {
		var p []byte
		if err := conn.QueryRow(t.Context(), `SELECT payload FROM events WHERE id = $1`, id).Scan(&p); err != nil {
			t.Fatal(err)
		}
		payloads[id] = p
	}

	s := mustOpenDSN(t, dsn, pgstore.Options{})
	wantAllVersions(t, s)
	clock := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	eng := engine.New(s, engine.WithClock(func() time.Time { return clock }))
	root := engine.Principal{Actor: "root", Admin: true}
	hook, err := eng.AddWebhook(t.Context(), root, "https://hooks.example.org/all", nil)
	if err != nil {
		t.Fatal(err)
	}
	clock = time.Date(2026, 12, 2, 9, 30, 0, 0, time.UTC)
	ada, kiln := engine.Principal{Actor: "ada"}, engine.Request{Workshop: "kiln", Quantity: 1}
	const hold, cancelled = "01a235fb81ca74a26ee2af6717da161a", "01a235fb7825230f6208ecf810aadb73"
	for _, r := range []struct {
		op   func() (engine.Outcome, error)
		body string
	}{
		{func() (engine.Outcome, error) {
			return eng.Reserve(t.Context(), "ada", "0e3c5f2a-8b1d-4c6e-9f7a-1b2c3d4e5f60", engine.Request{Workshop: "kiln", Quantity: 2})
		}, `{"status":"reserved","reservation_id":"` + cancelled + `","workshop":"kiln","quantity":2}`},
		{func() (engine.Outcome, error) {
			return eng.Reserve(t.Context(), "bob", "0e3c5f2a-8b1d-4c6e-9f7a-1b2c3d4e5f61", kiln)
		}, `{"status":"reserved","reservation_id":"01a235fb7cf73356dec9336bdf85c879","workshop":"kiln","quantity":1}`},
		{func() (engine.Outcome, error) {
			return eng.Hold(t.Context(), "ada", "0e3c5f2a-8b1d-4c6e-9f7a-1b2c3d4e5f62", engine.HoldRequest{Workshop: "kiln", Quantity: 1, TTLSeconds: 600})
		}, `{"status":"held","hold_id":"` + hold + `","workshop":"kiln","quantity":1,"expires_at":"2026-12-02T09:10:04Z"}`},
		{func() (engine.Outcome, error) {
			return eng.Confirm(t.Context(), ada, "0e3c5f2a-8b1d-4c6e-9f7a-1b2c3d4e5f63", hold)
		}, `{"status":"reserved","reservation_id":"01a235fb869c52aac95514c73ec887bd","hold_id":"` + hold + `","workshop":"kiln","quantity":1}`},
		{func() (engine.Outcome, error) {
			return eng.Cancel(t.Context(), ada, "0e3c5f2a-8b1d-4c6e-9f7a-1b2c3d4e5f64", cancelled)
		}, `{"status":"cancelled","reservation_id":"` + cancelled + `","workshop":"kiln","quantity":2}`},
	} {
		if out, err := r.op(); err != nil || !out.Replayed || string(out.Answer.JSON()) != r.body {
			t.Errorf("replay = %s (replayed %t), %v; want %s", out.Answer.JSON(), out.Replayed, err, r.body)
		}
	}
	pending := func() []string {
		t.Helper()
		evs, err := eng.PendingEvents(t.Context(), 100)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, ev := range evs {
			ids = append(ids, ev.ID)
			if want, old := payloads[ev.ID]; old {
				if got, err := ev.Payload(); err != nil || string(got) != string(want) {
					t.Errorf("payload of %s = %s, %v; want %s", ev.ID, got, err, want)
				}
			}
		}
		return ids
	}
	if got := pending(); !slices.Equal(got, oldEvents) {
		t.Fatalf("pending events after the migration = %q, want %q", got, oldEvents)
	}
	route := func() int {
		t.Helper()
		n, more, err := eng.RouteEvents(t.Context(), 100, engine.RouteOptions{Mail: true})
		if err != nil || more {
			t.Fatalf("RouteEvents = %d, more %t, %v", n, more, err)
		}
		return n
	}
	if n := route(); n != 0 {
		t.Fatalf("routed %d events stored before the migration", n)
	}
	deliveries := func() []string {
		t.Helper()
		page, err := eng.Deliveries(t.Context(), root, engine.DeliveryFilter{State: engine.DeliveryPending})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, d := range page.Deliveries {
			ids = append(ids, d.ID)
		}
		return ids
	}
	if got := deliveries(); len(got) != 0 {
		t.Fatalf("deliveries of the events stored before the migration: %q", got)
	}
	if p, err := eng.ProfileOf(t.Context(), "ada"); err != nil || p != (engine.Profile{Actor: "ada", Language: "de"}) {
		t.Fatalf("ada's profile after the migration = %+v, %v", p, err)
	}
	if err := eng.KeepVerifiedEmail(t.Context(), "ada", "ada@example.org"); err != nil {
		t.Fatal(err)
	}
	if p, err := engine.New(s).ProfileOf(t.Context(), "ada"); err != nil || p.Email != "ada@example.org" || p.Language != "de" {
		t.Fatalf("ada's profile read by a fresh engine = %+v, %v", p, err)
	}

	// Written after the migration: a reservation and a hold.
	reserved, err := eng.Reserve(t.Context(), "ada", newKey(t), kiln)
	if err != nil || reserved.Answer.Status != engine.StatusReserved {
		t.Fatalf("reserve = %+v, %v", reserved, err)
	}
	held, err := eng.Hold(t.Context(), "bob", newKey(t), engine.HoldRequest{Workshop: "kiln", Quantity: 1, TTLSeconds: 60})
	if err != nil || held.Answer.Status != engine.StatusHeld {
		t.Fatalf("hold = %+v, %v", held, err)
	}
	var reservedEvent, holdEvent string
	err = s.View(t.Context(), func(tx engine.Tx) error {
		return tx.ForEachEvent(func(ev engine.Event) error {
			switch {
			case ev.ReservationID == reserved.Answer.ReservationID:
				reservedEvent = ev.ID
			case ev.HoldID == held.Answer.HoldID && ev.Type == engine.EventHoldCreated && ev.Owner == "bob" && ev.Workshop == "kiln" && ev.Quantity == 1:
				holdEvent = ev.ID
			}
			return nil
		})
	})
	if err != nil || reservedEvent == "" || holdEvent == "" {
		t.Fatalf("events of the new reservation and hold: %q, %q, %v", reservedEvent, holdEvent, err)
	}
	if findings, err := engine.CheckAt(t.Context(), s, clock); err != nil || len(findings) != 0 {
		t.Errorf("check after the migration: %v, %v", findings, err)
	}
	// The daemon of version 13 writes an event as it knows them.
	const oldDaemonEvent = "01a235fc0000000000000000000000ff"
	if _, err := conn.Exec(t.Context(), `INSERT INTO events (id, type, reservation_id, actor, operation_key, payload, created_at, delivered_at) VALUES ($1, 'reservation.confirmed', $2, 'bob', $3, '{}', $4, NULL)`,
		oldDaemonEvent, reserved.Answer.ReservationID, string(newKey(t)), clock); err != nil {
		t.Fatal(err)
	}
	wantPending := append(slices.Clone(oldEvents), reservedEvent, oldDaemonEvent)
	slices.Sort(wantPending)
	if got := pending(); !slices.Equal(got, wantPending) {
		t.Errorf("pending events = %q, want %q (not the hold event %s)", got, wantPending, holdEvent)
	}
	if got := oldPending(); !slices.Equal(got, wantPending) {
		t.Errorf("pending events for a daemon of version 13 = %q, want %q (not the hold event %s)", got, wantPending, holdEvent)
	}
	if n := route(); n != 3 {
		t.Fatalf("routed %d events written after the migration, want 3", n)
	}
	if n := route(); n != 0 {
		t.Fatalf("routed %d events again", n)
	}
	// ada has an address; bob has none, and the event of the daemon of
	// version 13 lacks the owner a mail goes to.
	want := []string{engine.DeliveryIDOf(reservedEvent, hook.ID), engine.DeliveryIDOf(reservedEvent, engine.ChannelMail),
		engine.DeliveryIDOf(holdEvent, hook.ID), engine.DeliveryIDOf(oldDaemonEvent, hook.ID)}
	slices.Sort(want)
	if got := deliveries(); !slices.Equal(got, want) {
		t.Fatalf("deliveries = %q, want %q", got, want)
	}
}
