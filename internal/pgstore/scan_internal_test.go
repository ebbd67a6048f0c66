package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/pgstore/pgtest"
)

// countingConn counts the rows that the queries of a transaction return.
type countingConn struct {
	txConn
	rows int
}

func (c *countingConn) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	rows, err := c.txConn.Query(ctx, sql, args...)
	return &countingRows{Rows: rows, n: &c.rows}, err
}

type countingRows struct {
	pgx.Rows
	n *int
}

func (r *countingRows) Next() bool {
	ok := r.Rows.Next()
	if ok {
		*r.n++
	}
	return ok
}

// TestScansReadTheirPage: a person's list and the open holds past their
// deadline, read by a function that stops after the first records, read
// about as many rows as it used from an actor with many records, from
// the newest and from a cursor deep in the history; so does the read of
// the open holds of a workshop past their deadline. Counted are the rows
// the server returns, not time.
func TestScansReadTheirPage(t *testing.T) {
	ctx := t.Context()
	s := openFresh(t)
	const n = 1200
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	eng := engine.New(s, engine.WithClock(func() time.Time { return now }))
	if _, _, err := eng.PutWorkshop(ctx, "sale", engine.WorkshopSpec{Capacity: 10 * n, MaxQuantity: 1}, nil); err != nil {
		t.Fatal(err)
	}
	items := make([]engine.BatchItem, n)
	for i := range items {
		items[i] = engine.BatchItem{Actor: "alice", Key: engine.OperationKey(uuid.NewString()), Request: engine.Request{Workshop: "sale", Quantity: 1}}
	}
	if _, err := eng.ReserveBatch(ctx, items); err != nil {
		t.Fatal(err)
	}
	err := s.Update(ctx, func(tx engine.Tx) error {
		for i := range n {
			h := engine.Hold{ID: fmt.Sprintf("%032x", i+1), Actor: "alice", OperationKey: engine.OperationKey(uuid.NewString()),
				Workshop: "sale", Quantity: 1, State: engine.HoldHeld, CreatedAt: now, ExpiresAt: now.Add(time.Duration(i) * time.Second)}
			if err := tx.PutHold(h); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// read runs scan in a read-only transaction whose function stops after
	// take records, and returns the rows the server returned and the last
	// record's id.
	read := func(take int, scan func(tx *tx, fn func(id string) error) error) (rows int, last string) {
		t.Helper()
		ptx, err := s.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
		if err != nil {
			t.Fatal(err)
		}
		defer ptx.Rollback(ctx)
		c := &countingConn{txConn: ptx}
		seen := 0
		err = scan(&tx{ctx: ctx, tx: c}, func(id string) error {
			seen, last = seen+1, id
			if seen == take {
				return errStop
			}
			return nil
		})
		if err != errStop {
			t.Fatalf("scan ended with %v after %d records, want it stopped after %d", err, seen, take)
		}
		return c.rows, last
	}
	reservationsOf := func(before string) func(*tx, func(string) error) error {
		return func(tx *tx, fn func(string) error) error {
			return tx.ForEachReservationOf("alice", before, func(r engine.Reservation) error { return fn(r.ID) })
		}
	}
	holdsOf := func(before string) func(*tx, func(string) error) error {
		return func(tx *tx, fn func(string) error) error {
			return tx.ForEachHoldOf("alice", before, func(h engine.Hold) error { return fn(h.ID) })
		}
	}
	_, deep := read(n/2, reservationsOf(""))
	_, deepHold := read(n/2, holdsOf(""))
	for _, tc := range []struct {
		name string
		scan func(*tx, func(string) error) error
	}{
		{"newest reservations", reservationsOf("")},
		{"reservations below a deep cursor", reservationsOf(deep)},
		{"newest holds", holdsOf("")},
		{"holds below a deep cursor", holdsOf(deepHold)},
		{"open holds past their deadline", func(tx *tx, fn func(string) error) error {
			return tx.ForEachOpenHold("sale", now.Add(time.Hour), func(h engine.Hold) error { return fn(h.ID) })
		}},
	} {
		for _, take := range []int{1, 2, 3 * firstPage} {
			rows, _ := read(take, tc.scan)
			if want := 2*take + firstPage; rows > want {
				t.Errorf("%s: a scan stopped after %d of %d records read %d rows, want at most %d", tc.name, take, n, rows, want)
			}
		}
	}
}

var errStop = fmt.Errorf("stop")

// openFresh opens a store on a fresh schema, closed when the test ends.
func openFresh(t *testing.T) *Store {
	t.Helper()
	dsn, _ := pgtest.FreshSchema(t)
	s, err := Open(t.Context(), dsn, Options{MaxConns: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestListPlanSeeksToTheCursor: the statement that reads the page of a
// person's list below a cursor, planned as a prepared statement's generic
// plan (which the server switches to after a few executions), on a table
// where one actor has nearly every row, scans the index by actor bounded
// by the cursor instead of filtering the actor's rows from the newest on.
func TestListPlanSeeksToTheCursor(t *testing.T) {
	ctx := t.Context()
	s := openFresh(t)
	eng := engine.New(s)
	if _, _, err := eng.PutWorkshop(ctx, "sale", engine.WorkshopSpec{Capacity: 2000, MaxQuantity: 1}, nil); err != nil {
		t.Fatal(err)
	}
	items := make([]engine.BatchItem, 1000)
	for i := range items {
		items[i] = engine.BatchItem{Actor: "busy", Key: engine.OperationKey(uuid.NewString()), Request: engine.Request{Workshop: "sale", Quantity: 1}}
	}
	items[0].Actor = "fresh"
	if _, err := eng.ReserveBatch(ctx, items); err != nil {
		t.Fatal(err)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "ANALYZE reservations"); err != nil {
		t.Fatal(err)
	}
	for _, tb := range []string{"reservations", "holds"} {
		sql := newestOfSQL(reservations, firstPage)
		if tb == "holds" {
			sql = newestOfSQL(holds, firstPage)
		}
		for _, stmt := range []string{
			"SET plan_cache_mode = force_generic_plan",
			"PREPARE page(text, text) AS " + sql,
		} {
			if _, err := conn.Exec(ctx, stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
		var plan []byte
		if err := conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) EXECUTE page('fresh', '0123456789abcdef0123456789abcdef')").Scan(&plan); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "DEALLOCATE page"); err != nil {
			t.Fatal(err)
		}
		var nodes []struct {
			Plan planNode `json:"Plan"`
		}
		if err := json.Unmarshal(plan, &nodes); err != nil || len(nodes) != 1 {
			t.Fatalf("plan %s: %v", plan, err)
		}
		scan := nodes[0].Plan.find(func(p planNode) bool { return strings.Contains(p.NodeType, "Index") })
		if scan == nil || scan.IndexName != tb+"_by_actor" || !strings.Contains(scan.IndexCond, "< ROW($1, $2)") {
			t.Errorf("%s: the generic plan of %q does not seek to the cursor in the index by actor: %s", tb, sql, plan)
		}
	}
}

// planNode is a node of EXPLAIN (FORMAT JSON).
type planNode struct {
	NodeType  string     `json:"Node Type"`
	IndexName string     `json:"Index Name"`
	IndexCond string     `json:"Index Cond"`
	Plans     []planNode `json:"Plans"`
	// With ANALYZE: the rows the node returned per loop, its loops, and
	// the rows it read and dropped.
	ActualRows       float64 `json:"Actual Rows"`
	ActualLoops      float64 `json:"Actual Loops"`
	RemovedByFilter  float64 `json:"Rows Removed by Filter"`
	RemovedByRecheck float64 `json:"Rows Removed by Index Recheck"`
}

// find returns the first node of the plan, depth first, that match selects.
func (p planNode) find(match func(planNode) bool) *planNode {
	if match(p) {
		return &p
	}
	for _, c := range p.Plans {
		if f := c.find(match); f != nil {
			return f
		}
	}
	return nil
}
