package pgstore

import (
	"testing"
)

// TestWaitEntryScanPlans: the scans of a workshop's queue, of all its
// entries and of a person's entries, planned as prepared statements'
// generic plans on a table where one workshop and one person have nearly
// every entry and nearly every entry has left its queue, read the partial
// index of waiting entries and the indexes by workshop and by actor in
// their order, not the table's primary key.
func TestWaitEntryScanPlans(t *testing.T) {
	ctx := t.Context()
	s := openFresh(t)
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, stmt := range []string{
		`INSERT INTO wait_entries (id, actor, operation_key, workshop, quantity, state, created_at)
			SELECT lpad(to_hex(i), 32, '0'), CASE WHEN i % 1000 = 0 THEN 'ada' ELSE 'busy' END, 'k',
				CASE WHEN i % 1000 = 0 THEN 'quiet' ELSE 'busy' END, 1, CASE WHEN i % 500 = 0 THEN 'waiting' ELSE 'left' END, now()
			FROM generate_series(1, 5000) i`,
		"ANALYZE wait_entries",
		"SET plan_cache_mode = force_generic_plan",
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	id, above := "'00000000000000000000000000000001'", "'"+aboveEveryID+"'"
	for _, c := range []struct {
		index, params, sql, args string
	}{
		{"wait_entries_waiting", "text, text, text", entriesInSQL("waiting", firstPage), "'quiet', " + id + ", " + above},
		{"wait_entries_by_workshop", "text, text, text", entriesInSQL("", firstPage), "'quiet', " + id + ", " + above},
		{"wait_entries_by_actor", "text, text", newestOfSQL(waitEntries, firstPage), "'ada', " + above},
	} {
		wantIndexOrder(t, conn, c.index, c.params, c.sql, c.args)
	}
}
