package pgstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrationFiles holds the schema, one file per version, named
// NNNN_what.sql. A file's statements are never changed once released (its
// comments may be reworded); a change of schema is a new file.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one embedded schema step.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations are the embedded steps in version order, numbered 1, 2, … with
// no gap (checked by loadMigrations).
var migrations = mustLoadMigrations()

// SchemaVersion is the newest schema version this package writes and
// understands. A database at a newer version is refused by Open.
var SchemaVersion = migrations[len(migrations)-1].version

func mustLoadMigrations() []migration {
	ms, err := loadMigrations(migrationFiles)
	if err != nil {
		panic(err) // The files are embedded: this is a build mistake.
	}
	return ms
}

// loadMigrations reads and orders the migration files of fsys and checks
// that their versions run 1, 2, … without gaps or duplicates.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, fmt.Errorf("list migrations: %w", err)
	}
	var ms []migration
	for _, name := range names {
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive version number and '_'", name)
		}
		raw, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", name, err)
		}
		ms = append(ms, migration{version: v, name: strings.TrimSuffix(base, ".sql"), sql: string(raw)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: version %d, want %d (versions must run 1, 2, … without gaps)", m.name, m.version, i+1)
		}
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("no migrations embedded")
	}
	return ms, nil
}

// migrate brings the schema of the connection's current_schema() up to
// SchemaVersion in one transaction, under a transaction-scoped advisory lock
// keyed by that schema, so that daemons starting together apply each step
// once and the others find it done. A database at a newer version than this
// code knows is refused and left untouched. Without apply it changes
// nothing and refuses any version but SchemaVersion. It reports whether it
// created the schema's tables, that is whether the database was new.
func migrate(ctx context.Context, pool *pgxpool.Pool, apply bool) (created bool, err error) {
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var schema *string
		if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
			return fmt.Errorf("read current schema: %w", err)
		}
		if schema == nil {
			return fmt.Errorf("no schema of the search_path exists: create it, or fix search_path in the DSN")
		}
		if apply {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('reserve pgstore migrate ' || $1, 0))`, *schema); err != nil {
				return fmt.Errorf("take the migration lock of schema %s: %w", *schema, err)
			}
			if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
				version    INTEGER PRIMARY KEY,
				name       TEXT NOT NULL,
				applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
			)`); err != nil {
				return fmt.Errorf("create schema_migrations in schema %s: %w", *schema, err)
			}
		} else {
			var exists bool
			if err := tx.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists); err != nil {
				return fmt.Errorf("look for schema_migrations in schema %s: %w", *schema, err)
			}
			if !exists {
				return fmt.Errorf("database schema %s holds no reserve tables (no schema_migrations): start reserved on it once to create them", *schema)
			}
		}
		var current int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
			return fmt.Errorf("read schema version of schema %s: %w", *schema, err)
		}
		switch {
		case current > SchemaVersion:
			return fmt.Errorf("database schema %s has schema version %d, newer than this reserved understands (%d): upgrade reserved", *schema, current, SchemaVersion)
		case !apply && current < SchemaVersion:
			return fmt.Errorf("database schema %s has schema version %d, older than this reserved's %d: start reserved on it once to migrate it", *schema, current, SchemaVersion)
		}
		created = current == 0
		for _, m := range migrations[current:] {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("apply migration %s to schema %s: %w", m.name, *schema, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
				return fmt.Errorf("record migration %s in schema %s: %w", m.name, *schema, err)
			}
		}
		return nil
	})
	return created, err
}
