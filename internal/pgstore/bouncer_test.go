package pgstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/engine/enginetest"
	"github.com/reserve/reserve/internal/pgstore"
	"github.com/reserve/reserve/internal/pgstore/pgtest"
)

// TestConformanceBehindPgBouncer runs the store's conformance suite through
// PgBouncer in transaction pooling mode, where consecutive transactions of
// one pool connection run on different server connections.
func TestConformanceBehindPgBouncer(t *testing.T) {
	pgtest.BouncerDSN(t) // Skips or fails here, not in every subtest.
	enginetest.Run(t, func(tb testing.TB) engine.Store { return mustOpenDSN(tb, pgtest.BouncerDSN(tb), pgstore.Options{}) })
}

// TestConcurrentOpensMigrateOnceBehindPgBouncer starts several stores at
// once on a new database through PgBouncer in transaction pooling mode:
// every one must open, exactly one must create the tables, and no lock of
// the migration may outlive them, because a lock that PgBouncer's next
// client inherits with its server connection would hold off every later
// start for ever.
func TestConcurrentOpensMigrateOnceBehindPgBouncer(t *testing.T) {
	dsn := pgtest.BouncerDSN(t)
	const daemons = 6
	for round := range 3 {
		stores := make([]*pgstore.Store, daemons)
		errs := make([]error, daemons)
		var wg sync.WaitGroup
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		for i := range daemons {
			wg.Go(func() { stores[i], errs[i] = pgstore.Open(ctx, dsn, pgstore.Options{MaxConns: 2}) })
		}
		wg.Wait()
		cancel()
		created := 0
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, daemon %d: %v", round, i, err)
			}
			defer stores[i].Close()
			if stores[i].Created() {
				created++
			}
		}
		wantAllVersions(t, stores[0])
		if want := map[bool]int{true: 1, false: 0}[round == 0]; created != want {
			t.Fatalf("round %d: %d of %d concurrent opens say they created the database, want %d", round, created, daemons, want)
		}
		var held int
		if err := stores[0].Pool().QueryRow(t.Context(), `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&held); err != nil {
			t.Fatal(err)
		}
		if held != 0 {
			t.Fatalf("round %d: %d advisory locks are still held after every open returned", round, held)
		}
	}
}
