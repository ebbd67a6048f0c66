package pgstore

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// TestLoadMigrations checks the rules for the embedded migration files; it
// is an internal test because those files are not part of the API.
func TestLoadMigrations(t *testing.T) {
	file := &fstest.MapFile{Data: []byte("SELECT 1;")}
	ms, err := loadMigrations(fstest.MapFS{"migrations/0002_more.sql": file, "migrations/0001_init.sql": file})
	if err != nil || len(ms) != 2 || ms[0].name != "0001_init" || ms[1].version != 2 {
		t.Fatalf("loadMigrations = %+v, %v", ms, err)
	}
	for name, fsys := range map[string]fstest.MapFS{
		"gap":       {"migrations/0001_init.sql": file, "migrations/0003_more.sql": file},
		"duplicate": {"migrations/0001_init.sql": file, "migrations/0001_again.sql": file},
		"no number": {"migrations/init.sql": file},
		"zero":      {"migrations/0000_init.sql": file},
		"none":      {},
	} {
		if _, err := loadMigrations(fsys); err == nil {
			t.Errorf("%s: loadMigrations accepted it", name)
		}
	}
	if len(migrations) != SchemaVersion || !strings.Contains(migrations[0].sql, "CREATE TABLE receipts") {
		t.Fatalf("embedded migrations: %d, SchemaVersion %d", len(migrations), SchemaVersion)
	}
}

// TestMigrationsOutsideATransaction: only a migration whose first line is
// the marker runs outside a transaction, statement by statement, and the
// runner finds the name of each index it builds concurrently.
func TestMigrationsOutsideATransaction(t *testing.T) {
	for _, m := range migrations {
		if got, want := m.outsideTransaction(), m.name == "0006_time_index" || m.name == "0007_actor_index" || m.name == "0012_workshop_index" || m.name == "0015_unrouted_index" ||
			m.name == "0018_open_holds_by_person"; got != want {
			t.Errorf("migration %s runs outside a transaction: %v, want %v", m.name, got, want)
		}
	}
	m := migration{name: "0009_test", sql: noTransaction + "\n-- A comment; with a semicolon.\n\nCREATE INDEX CONCURRENTLY IF NOT EXISTS a_b\n    ON a (b);\nDROP INDEX CONCURRENTLY IF EXISTS c;\n"}
	got := m.statements()
	want := []string{"CREATE INDEX CONCURRENTLY IF NOT EXISTS a_b\n    ON a (b);", "DROP INDEX CONCURRENTLY IF EXISTS c;"}
	if !slices.Equal(got, want) {
		t.Fatalf("statements = %q, want %q", got, want)
	}
	if match := concurrentIndex.FindStringSubmatch(got[0]); match == nil || match[1] != "a_b" {
		t.Fatalf("index name of %q = %q", got[0], match)
	}
	if match := concurrentIndex.FindStringSubmatch(got[1]); match != nil {
		t.Fatalf("index name of %q = %q", got[1], match)
	}
}
