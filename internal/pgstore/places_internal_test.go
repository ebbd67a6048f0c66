package pgstore

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/pgstore/pgtest"
)

// AddHistory writes n cancelled reservations, n released holds and n
// entries that left the waiting list of actor in workshop (1 place each),
// as a long history leaves them, into the tables of the schema that dsn
// selects. Their ids start with prefix (hex digits), which keeps several
// histories apart; none of them has places now.
func AddHistory(tb testing.TB, dsn, workshop, actor, prefix string, n int) {
	tb.Helper()
	at := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	const ids = `$3 || lpad(to_hex(i), 32 - length($3), '0'), $2, 'history-' || $3 || '-' || i, $1, 1`
	for _, stmt := range []string{
		`INSERT INTO reservations (id, actor, operation_key, workshop, quantity, created_at, cancelled_at, cancelled_by, cancel_operation)
			SELECT ` + ids + `, $5, $5, $2, 'cancel-' || $3 || '-' || i FROM generate_series(1, $4::int) AS i`,
		`INSERT INTO holds (id, actor, operation_key, workshop, quantity, state, created_at, expires_at, settled_at, settle_operation)
			SELECT ` + ids + `, 'released', $5, $5::timestamptz + interval '10 minutes', $5, 'release-' || $3 || '-' || i FROM generate_series(1, $4::int) AS i`,
		`INSERT INTO wait_entries (id, actor, operation_key, workshop, quantity, state, created_at, settled_at)
			SELECT ` + ids + `, 'left', $5, $5 FROM generate_series(1, $4::int) AS i`,
	} {
		pgtest.Exec(tb, dsn, stmt, workshop, actor, prefix, n, at)
	}
}

// TestPlacesPlanReadsNoHistory: the statement that reads a person's
// places, planned both as a prepared statement's custom plan and as its
// generic plan, reads a handful of rows for a person with 3,000
// cancelled reservations, released holds and entries that left the
// waiting list of the workshop (and an open hold past its deadline),
// among the histories and open holds of 50 other people: one row of
// places_by_person and the person's open holds in the index of open
// holds by person. Counted are
// the rows that the plan's scans return or read and drop (EXPLAIN
// ANALYZE), not time.
func TestPlacesPlanReadsNoHistory(t *testing.T) {
	ctx := t.Context()
	dsn, _ := pgtest.FreshSchema(t)
	s, err := Open(ctx, dsn, Options{MaxConns: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	const history = 3000
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	AddHistory(t, dsn, "clay", "busy", "a", history)
	for i := range 50 {
		AddHistory(t, dsn, "clay", fmt.Sprintf("other-%02d", i), fmt.Sprintf("b%02x", i), 60)
	}
	for _, stmt := range []string{
		`INSERT INTO reservations (id, actor, operation_key, workshop, quantity, created_at) VALUES ('c1', 'busy', 'now-1', 'clay', 2, $1)`,
		`INSERT INTO holds (id, actor, operation_key, workshop, quantity, state, created_at, expires_at) VALUES ('c2', 'busy', 'now-2', 'clay', 1, 'held', $1, $1::timestamptz + interval '10 minutes')`,
		`INSERT INTO holds (id, actor, operation_key, workshop, quantity, state, created_at, expires_at) VALUES ('c3', 'busy', 'now-3', 'clay', 1, 'held', $1, $1::timestamptz - interval '10 minutes')`,
		`INSERT INTO wait_entries (id, actor, operation_key, workshop, quantity, state, created_at) VALUES ('c4', 'busy', 'now-4', 'clay', 1, 'waiting', $1)`,
		`INSERT INTO holds (id, actor, operation_key, workshop, quantity, state, created_at, expires_at)
			SELECT 'd' || i, 'other-' || lpad(i::text, 2, '0'), 'now-d' || i, 'clay', 1, 'held', $1, $1::timestamptz + interval '10 minutes' FROM generate_series(0, 49) AS i`,
	} {
		pgtest.Exec(t, dsn, stmt, now)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, stmt := range []string{"ANALYZE reservations", "ANALYZE holds", "ANALYZE wait_entries", "ANALYZE places_by_person",
		"PREPARE places(text, text, timestamptz) AS " + placesSQL} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	execute := "EXECUTE places('clay', 'busy', '" + now.Format(time.RFC3339) + "')"
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		if _, err := conn.Exec(ctx, "SET plan_cache_mode = "+mode); err != nil {
			t.Fatal(err)
		}
		var reserved, waiting, held int
		if err := conn.QueryRow(ctx, execute).Scan(&reserved, &waiting, &held); err != nil || reserved != 2 || waiting != 1 || held != 1 {
			t.Fatalf("%s: places of busy = %d reserved, %d waiting, %d held, %v; want 2, 1, 1", mode, reserved, waiting, held, err)
		}
		var plan []byte
		if err := conn.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+execute).Scan(&plan); err != nil {
			t.Fatal(err)
		}
		var nodes []struct {
			Plan planNode `json:"Plan"`
		}
		if err := json.Unmarshal(plan, &nodes); err != nil || len(nodes) != 1 {
			t.Fatalf("plan %s: %v", plan, err)
		}
		if read := nodes[0].Plan.rowsScanned(); read > 5 {
			t.Errorf("%s: the plan of the places of a person with a history of %d of each record reads %.0f rows: %s", mode, history, read, plan)
		}
	}
}

// rowsScanned adds up what the scans of the plan returned and what they
// read and dropped, in every loop.
func (p planNode) rowsScanned() float64 {
	var n float64
	if strings.Contains(p.NodeType, "Scan") {
		n = (p.ActualRows + p.RemovedByFilter + p.RemovedByRecheck) * max(p.ActualLoops, 1)
	}
	for _, c := range p.Plans {
		n += c.rowsScanned()
	}
	return n
}
