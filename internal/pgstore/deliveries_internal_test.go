package pgstore

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reserve/reserve/internal/engine"
)

// TestDeliveryScanPlans: the scans of pending events (for the simple
// channels), of unrouted events, of due deliveries and of the deliveries
// of one state, planned as prepared statements' generic plans on tables
// where nearly every row is settled, read their partial or leading
// indexes, not the tables' primary keys; and no hold event is pending for
// the simple channels, so none is in the index of pending events.
func TestDeliveryScanPlans(t *testing.T) {
	ctx := t.Context()
	s := openFresh(t)
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	eng := engine.New(s, engine.WithClock(func() time.Time { return now }))
	if _, _, err := eng.PutWorkshop(ctx, "kiln", engine.WorkshopSpec{Capacity: 10, MaxQuantity: 1}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Hold(ctx, "ada", "0e3c5f2a-8b1d-4c6e-9f7a-1b2c3d4e5f60", engine.HoldRequest{Workshop: "kiln", Quantity: 1, TTLSeconds: 60}); err != nil {
		t.Fatal(err)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var holdsPending int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM events WHERE delivered_at IS NULL AND type LIKE 'hold.%'").Scan(&holdsPending); err != nil || holdsPending != 0 {
		t.Fatalf("hold events pending for the simple channels: %d, %v", holdsPending, err)
	}
	// Thousands of settled rows around a few open ones.
	for _, stmt := range []string{
		`INSERT INTO events (id, type, reservation_id, actor, operation_key, payload, created_at, delivered_at, routed)
			SELECT lpad(to_hex(i), 32, '0'), 'reservation.confirmed', 'r', 'ada', 'k', '\x7b7d', now(), CASE WHEN i % 500 = 0 THEN NULL ELSE now() END, i % 700 <> 0
			FROM generate_series(1, 5000) i`,
		`INSERT INTO deliveries (id, event_id, event_type, channel, endpoint, state, attempts, created_at, since, next_attempt_at, last_status, done_at)
			SELECT lpad(to_hex(i), 32, '0') || '-w', lpad(to_hex(i), 32, '0'), 'reservation.confirmed', 'webhook', 'w',
				CASE WHEN i % 500 = 0 THEN 'pending' ELSE 'delivered' END, 1, now(), now(),
				CASE WHEN i % 500 = 0 THEN now() END, 204, CASE WHEN i % 500 <> 0 THEN now() END
			FROM generate_series(1, 5000) i`,
		"ANALYZE events",
		"ANALYZE deliveries",
		"SET plan_cache_mode = force_generic_plan",
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	at, id := "'2026-12-02 12:00:00Z'", "'00000000000000000000000000000001'"
	for _, c := range []struct {
		index, params, sql, args string
	}{
		{"events_pending", "text", pendingEvents.pageSQL(false), id},
		{"events_unrouted", "text", unroutedSQL(true, firstPage, " FOR UPDATE SKIP LOCKED"), id},
		{"deliveries_due", "timestamptz, timestamptz, text", dueSQL(true, firstPage, " FOR UPDATE SKIP LOCKED"), at + ", " + at + ", " + id},
		{"deliveries_by_state", "text, text, text", inStateSQL(firstPage), "'pending', " + id + ", '" + aboveEveryID + "'"},
	} {
		sql := c.sql
		if c.index == "events_pending" {
			sql = pendingEvents.pageSQL(true)
		}
		wantIndexOrder(t, conn, c.index, c.params, sql, c.args)
	}
}

// wantIndexOrder checks that the plan of sql, prepared with parameters
// of the types params and executed with the SQL values args on conn,
// scans index and sorts nothing: it reads the index in its order. Run on
// a connection with plan_cache_mode force_generic_plan, it checks the
// generic plan, which knows no parameter.
func wantIndexOrder(t *testing.T, conn *pgxpool.Conn, index, params, sql, args string) {
	t.Helper()
	ctx := t.Context()
	if _, err := conn.Exec(ctx, "PREPARE page("+params+") AS "+sql); err != nil {
		t.Fatalf("prepare %s: %v", sql, err)
	}
	var plan []byte
	err := conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) EXECUTE page("+args+")").Scan(&plan)
	if _, derr := conn.Exec(ctx, "DEALLOCATE page"); err == nil {
		err = derr
	}
	if err != nil {
		t.Fatalf("explain %s: %v", sql, err)
	}
	var nodes []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal(plan, &nodes); err != nil || len(nodes) != 1 {
		t.Fatalf("plan %s: %v", plan, err)
	}
	scan := nodes[0].Plan.find(func(p planNode) bool {
		return strings.Contains(p.NodeType, "Index") || strings.Contains(p.NodeType, "Scan")
	})
	sorted := nodes[0].Plan.find(func(p planNode) bool { return p.NodeType == "Sort" })
	if scan == nil || scan.IndexName != index || sorted != nil {
		t.Errorf("the generic plan of %q does not read %s in its order: %s", sql, index, plan)
	}
}
