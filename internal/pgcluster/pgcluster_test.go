package pgcluster_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/reserve/reserve/internal/pgcluster/pgclustertest"
)

// TestEveryCommitSurvives builds a cluster, commits rows through its DSN,
// and checks after a restart of the primary, a failover after SIGKILL and
// a failover after SIGSTOP that every committed row is there and the
// cluster takes writes again (which, with a synchronous standby, means a
// standby streams again). While the frozen primary hangs, the new primary
// takes writes. Close leaves no directory.
func TestEveryCommitSurvives(t *testing.T) {
	ctx := context.Background()
	c := pgclustertest.New(t)
	// A hung server accepts a connection and never answers: each host
	// gets a few seconds.
	dsn := c.DSN() + " connect_timeout=3"
	withConn := func(f func(*pgx.Conn) error) {
		t.Helper()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatalf("connect through %s: %v", dsn, err)
		}
		defer conn.Close(ctx)
		if err := f(conn); err != nil {
			t.Fatal(err)
		}
	}
	exec := func(sql string) {
		t.Helper()
		withConn(func(conn *pgx.Conn) error { _, err := conn.Exec(ctx, sql); return err })
	}
	rows := func() (n int) {
		t.Helper()
		withConn(func(conn *pgx.Conn) error { return conn.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n) })
		return n
	}
	exec("CREATE TABLE t (n int)")
	want := 0
	commit := func() {
		t.Helper()
		exec("INSERT INTO t SELECT generate_series(1, 100)")
		want += 100
	}
	commit()

	first := c.Primary()
	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if c.Primary() != first {
		t.Errorf("after a restart the primary is node %s, not node %s", c.Primary(), first)
	}
	if got := rows(); got != want {
		t.Errorf("after the restart %d rows, want %d", got, want)
	}
	commit()

	// failover fails the primary over (frozen as Failover takes it) and
	// checks that another node took its place with every committed row.
	failover := func(what string, frozen func()) {
		t.Helper()
		old := c.Primary()
		if err := c.Failover(ctx, frozen); err != nil {
			t.Fatal(err)
		}
		if c.Primary() == old {
			t.Errorf("after %s node %s is still the primary", what, old)
		}
		if got := rows(); got != want {
			t.Errorf("after %s %d rows, want %d", what, got, want)
		}
		commit()
	}
	failover("a failover", nil)
	failover("the failover from a hung primary", commit)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	dir := strings.Split(strings.TrimPrefix(c.DSN(), "host="), ",")[0]
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("after Close %s is still there (%v)", dir, err)
	}
}
