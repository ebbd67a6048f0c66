// Package pgclustertest gives a test a PostgreSQL cluster of its own.
package pgclustertest

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/pgcluster"
	"github.com/reserve/reserve/internal/testskip"
)

// New builds a primary with a synchronous standby for t and removes it
// when t ends, with the servers' logs if t failed. Without root or the
// PostgreSQL server binaries t fails under RESERVE_CI and is skipped
// loudly elsewhere.
func New(t testing.TB) *pgcluster.Cluster {
	t.Helper()
	bin, err := pgcluster.FindBinaries()
	if err != nil {
		if os.Getenv("RESERVE_CI") != "" {
			t.Fatalf("%s builds PostgreSQL servers, and CI (RESERVE_CI) must run it: %v", t.Name(), err)
		}
		testskip.Missing(t, "PostgreSQL", "%s: %v; run it as root on a machine with the postgresql package", t.Name(), err)
	}
	c, err := pgcluster.New(context.Background(), bin, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			var logs strings.Builder
			c.WriteLogs(&logs)
			t.Log(logs.String())
		}
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return c
}
