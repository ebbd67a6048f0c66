package pgstore

import (
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
