package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// EnvBouncerDSN names the environment variable holding the DSN of a
// PgBouncer in transaction pooling mode in front of the server of EnvDSN.
const EnvBouncerDSN = "RESERVE_PGBOUNCER_DSN"

// BouncerSkipMessage tells a developer how to run the tests through
// PgBouncer that are skipped.
const BouncerSkipMessage = `PgBouncer tests SKIPPED: RESERVE_PGBOUNCER_DSN is not set.
Run them through a PgBouncer in transaction pooling mode in front of the
server of RESERVE_PG_DSN, whose role may create databases, e.g.
    RESERVE_PGBOUNCER_DSN='postgres://reserve@localhost:6432/reserve' ./test.sh
(see "PostgreSQL store (tests)" in docs/testing.md).`

// BouncerDSN returns a DSN that reaches, through the PgBouncer of
// EnvBouncerDSN, a new empty database of the server of EnvDSN, dropped
// when the test ends. It asks for pgx's query exec mode "exec", as README.md
// tells operators to: PgBouncer in transaction pooling mode does not keep
// the prepared statements of pgx's default mode. It skips the test without a PgBouncer and fails it in
// CI (RESERVE_CI set). The test selects its tables by database, not by
// search_path: PgBouncer refuses search_path as a startup parameter, and a
// SET of it would stay on whichever server connection ran it.
func BouncerDSN(tb testing.TB) string {
	tb.Helper()
	server := ServerDSN(tb)
	bouncer := os.Getenv(EnvBouncerDSN)
	if bouncer == "" {
		if os.Getenv("RESERVE_CI") != "" {
			tb.Fatal("RESERVE_PGBOUNCER_DSN is not set, but RESERVE_CI is: CI must run the PostgreSQL tests through PgBouncer too, so .ci/run has to start PgBouncer and export RESERVE_PGBOUNCER_DSN")
		}
		tb.Skip(BouncerSkipMessage)
	}
	var raw [8]byte
	rand.Read(raw[:])
	db := "reserve_test_" + hex.EncodeToString(raw[:])
	Exec(tb, server, "CREATE DATABASE "+db)
	tb.Cleanup(func() { dropDatabase(tb, server, db) })
	return WithParams(tb, WithDatabase(tb, bouncer, db), map[string]string{"default_query_exec_mode": "exec"})
}

// dropDatabase drops database db of the server of dsn with FORCE, which
// ends the server connections that PgBouncer keeps to it. FORCE refuses
// when the database has a process that the test's role may not end: an
// autovacuum worker, which the tests' many writes call in. Then it tries
// again until the worker has moved on, for a minute at most.
func dropDatabase(tb testing.TB, dsn, db string) {
	tb.Helper()
	ctx := context.Background()
	conn := connect(tb, dsn)
	defer conn.Close(ctx)
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := conn.Exec(ctx, "DROP DATABASE "+db+" WITH (FORCE)")
		if err == nil {
			return
		}
		if !refusedToEndAProcess(err) || time.Now().After(deadline) {
			tb.Fatalf("DROP DATABASE %s WITH (FORCE): %v", db, err)
		}
		time.Sleep(100 * time.Millisecond) // The worker's own time: there is nothing to wait on.
	}
}

// refusedToEndAProcess reports whether err is FORCE's refusal to end a
// process of the database: SQLSTATE 42501 raised where the server ends
// them. The function's name, which the server reports untranslated, tells
// it from other refusals of the same SQLSTATE (a role that does not own
// the database); the message does not, as it changed in PostgreSQL 16
// ("permission denied to terminate process", the role in the detail) and
// follows the server's lc_messages.
func refusedToEndAProcess(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42501" && pgErr.Routine == "TerminateOtherDBBackends"
}

// AnnounceBouncer prints BouncerSkipMessage to stderr when the tests through
// PgBouncer will be skipped; call it from TestMain.
func AnnounceBouncer() {
	if os.Getenv(EnvBouncerDSN) == "" && os.Getenv("RESERVE_CI") == "" {
		fmt.Fprintln(os.Stderr, "\n*** "+strings.ReplaceAll(BouncerSkipMessage, "\n", "\n*** ")+"\n")
	}
}

// WithDatabase returns dsn with its database replaced by db, for URL and
// key=value DSNs alike.
func WithDatabase(tb testing.TB, dsn, db string) string {
	tb.Helper()
	if strings.Contains(dsn, "://") {
		u, err := url.Parse(dsn)
		if err != nil {
			tb.Fatalf("%s: %v", EnvBouncerDSN, err)
		}
		u.Path = "/" + db
		return u.String()
	}
	return dsn + fmt.Sprintf(" dbname='%s'", db)
}
