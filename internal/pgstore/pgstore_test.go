package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/engine/enginetest"
	"github.com/reserve/reserve/internal/pgstore"
	"github.com/reserve/reserve/internal/pgstore/pgtest"
)

// testConns is the pool size of the stores under test. The conformance suite
// runs its tests in parallel, each on its own store, so the server needs
// about testConns × 2 × (go test -parallel) connections.
const testConns = 3

func TestMain(m *testing.M) {
	pgtest.Announce()
	pgtest.AnnounceBouncer()
	os.Exit(m.Run())
}

// mustOpen opens a store on a fresh, empty schema and closes it (and drops
// the schema) when the test ends.
func mustOpen(tb testing.TB, opts pgstore.Options) *pgstore.Store {
	tb.Helper()
	dsn, _ := pgtest.FreshSchema(tb)
	return mustOpenDSN(tb, dsn, opts)
}

// mustOpenDSN opens a store on dsn and closes it when the test ends.
func mustOpenDSN(tb testing.TB, dsn string, opts pgstore.Options) *pgstore.Store {
	tb.Helper()
	if opts.MaxConns == 0 {
		opts.MaxConns = testConns
	}
	s, err := pgstore.Open(context.Background(), dsn, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Error(err)
		}
	})
	return s
}

// TestConformance runs the engine's suite; its concurrent tests queue
// Updates behind the store's one write transaction, so they also exercise
// group commit.
func TestConformance(t *testing.T) {
	pgtest.ServerDSN(t)
	enginetest.Run(t, func(tb testing.TB) engine.Store { return mustOpen(tb, pgstore.Options{}) })
}

// schemaVersions returns the versions recorded in schema_migrations.
func schemaVersions(t *testing.T, s *pgstore.Store) []int {
	t.Helper()
	rows, err := s.Pool().Query(t.Context(), "SELECT version FROM schema_migrations ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	return versions
}

func wantAllVersions(t *testing.T, s *pgstore.Store) {
	t.Helper()
	got := schemaVersions(t, s)
	if len(got) != pgstore.SchemaVersion || got[len(got)-1] != pgstore.SchemaVersion {
		t.Fatalf("schema_migrations holds versions %v, want 1 to %d once each", got, pgstore.SchemaVersion)
	}
}

func TestReopenKeepsEverything(t *testing.T) {
	dsn, _ := pgtest.FreshSchema(t)
	ctx := t.Context()
	s, err := pgstore.Open(ctx, dsn, pgstore.Options{MaxConns: testConns})
	if err != nil {
		t.Fatal(err)
	}
	eng := engine.New(s)
	if _, _, err := eng.PutWorkshop(ctx, "go-basics", engine.WorkshopSpec{Capacity: 3, MaxQuantity: 2}, nil); err != nil {
		t.Fatal(err)
	}
	key := engine.OperationKey("f47ac10b-58cc-4372-a567-0e02b2c3d479")
	req := engine.Request{Workshop: "go-basics", Quantity: 2}
	first, err := eng.Reserve(ctx, "alice", key, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Reserve(ctx, "alice", key, req); err == nil {
		t.Fatal("Reserve on a closed store succeeded")
	}
	s = mustOpenDSN(t, dsn, pgstore.Options{})
	wantAllVersions(t, s)
	again, err := engine.New(s).Reserve(ctx, "alice", key, req)
	if err != nil || !again.Replayed || string(again.Answer.JSON()) != string(first.Answer.JSON()) {
		t.Fatalf("replay after reopen = %+v %v, want %s", again, err, first.Answer.JSON())
	}
}

func TestConcurrentOpensMigrateOnce(t *testing.T) {
	dsn, _ := pgtest.FreshSchema(t)
	const daemons = 6
	stores := make([]*pgstore.Store, daemons)
	errs := make([]error, daemons)
	var wg sync.WaitGroup
	for i := range daemons {
		wg.Go(func() { stores[i], errs[i] = pgstore.Open(t.Context(), dsn, pgstore.Options{MaxConns: 1}) })
	}
	wg.Wait()
	created := 0
	for i, err := range errs {
		if err != nil {
			t.Fatalf("daemon %d: %v", i, err)
		}
		defer stores[i].Close()
		if stores[i].Created() {
			created++
		}
	}
	wantAllVersions(t, stores[0])
	if created != 1 {
		t.Fatalf("%d of %d concurrent opens say they created the database, want exactly 1", created, daemons)
	}
	again := mustOpenDSN(t, dsn, pgstore.Options{MaxConns: 1})
	if again.Created() {
		t.Fatal("reopening an existing database says it created it")
	}
}

func TestNewerSchemaIsRefused(t *testing.T) {
	dsn, schema := pgtest.FreshSchema(t)
	s := mustOpenDSN(t, dsn, pgstore.Options{})
	future := pgstore.SchemaVersion + 98
	pgtest.Exec(t, dsn, "INSERT INTO schema_migrations (version, name) VALUES ($1, 'from the future')", future)
	s.Close()
	_, err := pgstore.Open(t.Context(), dsn, pgstore.Options{})
	want := fmt.Sprintf("database schema %s has schema version %d, newer than this reserved understands (%d): upgrade reserved", schema, future, pgstore.SchemaVersion)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("open of a newer schema: %v, want an error containing %q", err, want)
	}
}

func TestNoMigrateChangesNothing(t *testing.T) {
	dsn, schema := pgtest.FreshSchema(t)
	_, err := pgstore.Open(t.Context(), dsn, pgstore.Options{NoMigrate: true})
	if err == nil || !strings.Contains(err.Error(), "database schema "+schema+" holds no reserve tables") {
		t.Fatalf("NoMigrate open of an empty schema: %v", err)
	}
	s := mustOpenDSN(t, dsn, pgstore.Options{})
	pgtest.Exec(t, dsn, "DELETE FROM schema_migrations WHERE version = $1", pgstore.SchemaVersion)
	_, err = pgstore.Open(t.Context(), dsn, pgstore.Options{NoMigrate: true})
	want := fmt.Sprintf("has schema version %d, older than this reserved's %d", pgstore.SchemaVersion-1, pgstore.SchemaVersion)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("NoMigrate open of an older schema: %v, want an error containing %q", err, want)
	}
	pgtest.Exec(t, dsn, "INSERT INTO schema_migrations (version, name) VALUES ($1, 'back')", pgstore.SchemaVersion)
	mustOpenDSN(t, dsn, pgstore.Options{NoMigrate: true})
	wantAllVersions(t, s)
}

func TestMissingSchemaIsReported(t *testing.T) {
	dsn := pgtest.WithParams(t, pgtest.ServerDSN(t), map[string]string{"search_path": "reserve_no_such_schema"})
	_, err := pgstore.Open(t.Context(), dsn, pgstore.Options{})
	if err == nil || !strings.Contains(err.Error(), "no schema of the search_path exists") {
		t.Fatalf("open with a missing schema: %v", err)
	}
}

func TestBadDSNIsReported(t *testing.T) {
	_, err := pgstore.Open(t.Context(), "postgres://%zz", pgstore.Options{})
	if err == nil || !strings.Contains(err.Error(), "parse PostgreSQL DSN") {
		t.Fatalf("open with a malformed DSN: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err = pgstore.Open(ctx, "postgres://nobody@127.0.0.1:1/none?connect_timeout=5", pgstore.Options{})
	if err == nil || !strings.Contains(err.Error(), `database "none" on 127.0.0.1:1 as "nobody"`) {
		t.Fatalf("open of an unreachable server: %v", err)
	}
}
