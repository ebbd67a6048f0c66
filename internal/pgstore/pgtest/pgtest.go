// Package pgtest gives tests a real PostgreSQL to work in: the server named
// by RESERVE_PG_DSN, and a fresh schema per test that is dropped when the
// test ends. Without RESERVE_PG_DSN a test is skipped with a loud message,
// except in CI (RESERVE_CI set), where it fails, so the PostgreSQL tests can
// never pass by being skipped there. It is for tests only.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/reserve/reserve/internal/testskip"
)

// EnvDSN names the environment variable holding the test server's DSN.
const EnvDSN = "RESERVE_PG_DSN"

// SkipMessage tells a developer how to run the tests that are skipped.
const SkipMessage = `PostgreSQL tests SKIPPED: RESERVE_PG_DSN is not set.
Run them against a PostgreSQL server whose role may create schemas, e.g.
    RESERVE_PG_DSN='postgres://reserve@localhost:5432/reserve' ./test.sh
(see "PostgreSQL store (tests)" in docs/testing.md).`

// Announce prints SkipMessage to stderr when the tests will be skipped; call
// it from TestMain so the notice shows even without -v.
func Announce() {
	if os.Getenv(EnvDSN) == "" && os.Getenv("RESERVE_CI") == "" {
		fmt.Fprintln(os.Stderr, "\n*** "+strings.ReplaceAll(SkipMessage, "\n", "\n*** ")+"\n")
	}
}

// ServerDSN returns the DSN of the test server, skips the test when there is
// none, and fails it when there is none in CI.
func ServerDSN(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv(EnvDSN)
	if dsn != "" {
		return dsn
	}
	if os.Getenv("RESERVE_CI") != "" {
		tb.Fatal("RESERVE_PG_DSN is not set, but RESERVE_CI is: CI must run the PostgreSQL tests, so .ci/run has to start PostgreSQL and export RESERVE_PG_DSN")
	}
	testskip.Missing(tb, "PostgreSQL", "%s", SkipMessage)
	return ""
}

// WithParams returns dsn with extra run-time parameters, for URL and
// key=value DSNs alike.
func WithParams(tb testing.TB, dsn string, params map[string]string) string {
	tb.Helper()
	if strings.Contains(dsn, "://") {
		u, err := url.Parse(dsn)
		if err != nil {
			tb.Fatalf("%s: %v", EnvDSN, err)
		}
		q := u.Query()
		for k, v := range params {
			q.Set(k, v)
		}
		u.RawQuery = q.Encode()
		return u.String()
	}
	for k, v := range params {
		dsn += fmt.Sprintf(" %s='%s'", k, v)
	}
	return dsn
}

// Exec runs a statement on a connection of its own to dsn.
func Exec(tb testing.TB, dsn string, sql string, args ...any) {
	tb.Helper()
	conn := connect(tb, dsn)
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), sql, args...); err != nil {
		tb.Fatalf("%s: %v", sql, err)
	}
}

// connect opens a connection to dsn, which the caller closes.
func connect(tb testing.TB, dsn string) *pgx.Conn {
	tb.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		tb.Fatalf("connect to %s: %v", EnvDSN, err)
	}
	return conn
}

// FreshSchema creates an empty schema that is dropped when the test ends,
// and returns a DSN whose search_path selects it.
func FreshSchema(tb testing.TB) (dsn, schema string) {
	tb.Helper()
	server := ServerDSN(tb)
	var raw [8]byte
	rand.Read(raw[:])
	schema = "reserve_test_" + hex.EncodeToString(raw[:])
	Exec(tb, server, "CREATE SCHEMA "+schema)
	tb.Cleanup(func() { Exec(tb, server, "DROP SCHEMA "+schema+" CASCADE") })
	return WithParams(tb, server, map[string]string{"search_path": schema}), schema
}
