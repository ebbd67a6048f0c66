package pgstore_test

import (
	"errors"
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
