package pgstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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

// noTransaction is the first line of a migration that runs outside a
// transaction, because a statement of it cannot run inside one (CREATE
// INDEX CONCURRENTLY, which builds an index without blocking writes to its
// table). Its statements run one by one, each ended by a semicolon at the end
// of a line, and must be idempotent (IF NOT EXISTS): a daemon that stops
// midway leaves some of them done and the migration unrecorded, and the next
// start runs it again. Before a CREATE INDEX CONCURRENTLY IF NOT EXISTS, an
// index of that name that is INVALID (what an interrupted concurrent build
// leaves) is dropped, so that the statement builds it again instead of
// keeping it.
const noTransaction = "-- reserve:no-transaction"

// migrationLockPoll is how often a daemon that finds another one migrating
// the schema tries the migration lock again.
const migrationLockPoll = 20 * time.Millisecond

// migrate brings the schema of the connection's current_schema() up to
// SchemaVersion and reports whether it created the schema's tables, that is
// whether the database was new. A database at a newer version than this
// code knows is refused and left untouched. Without apply it changes nothing
// and refuses any version but SchemaVersion.
//
// Daemons starting together apply each step once, and the others find it
// done: every migration runs under an advisory lock keyed by the schema,
// which the same daemon holds from before it reads the version until it has
// recorded the last step (see lockMigrations). Consecutive migrations that
// run in a transaction run in one.
func migrate(ctx context.Context, pool *pgxpool.Pool, apply bool) (created bool, err error) {
	if !apply {
		return false, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			schema, err := currentSchema(ctx, tx)
			if err != nil {
				return err
			}
			var exists bool
			if err := tx.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists); err != nil {
				return fmt.Errorf("look for schema_migrations in schema %s: %w", schema, err)
			}
			if !exists {
				return fmt.Errorf("database schema %s holds no reserve tables (no schema_migrations): start reserved on it once to create them", schema)
			}
			current, err := schemaVersion(ctx, tx, schema)
			if err == nil && current < SchemaVersion {
				err = fmt.Errorf("database schema %s has schema version %d, older than this reserved's %d: start reserved on it once to migrate it", schema, current, SchemaVersion)
			}
			return err
		})
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return false, fmt.Errorf("connect to migrate: %w", err)
	}
	defer conn.Release()
	schema, err := currentSchema(ctx, conn)
	if err != nil {
		return false, err
	}
	unlock, err := lockMigrations(ctx, pool.Config().ConnConfig, schema)
	if err != nil {
		return false, err
	}
	defer unlock()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
	)`); err != nil {
		return false, fmt.Errorf("create schema_migrations in schema %s: %w", schema, err)
	}
	current, err := schemaVersion(ctx, conn, schema)
	if err != nil {
		return false, err
	}
	created = current == 0
	for pending := migrations[current:]; len(pending) > 0; {
		if pending[0].outsideTransaction() {
			if err := applyOutsideTransaction(ctx, conn, schema, pending[0]); err != nil {
				return false, err
			}
			pending = pending[1:]
			continue
		}
		n := 1
		for n < len(pending) && !pending[n].outsideTransaction() {
			n++
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			for _, m := range pending[:n] {
				if _, err := tx.Exec(ctx, m.sql); err != nil {
					return fmt.Errorf("apply migration %s to schema %s: %w", m.name, schema, err)
				}
				if err := record(ctx, tx, schema, m); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return false, err
		}
		pending = pending[n:]
	}
	return created, nil
}

// querier is what migrate reads and writes through: a connection or a
// transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// currentSchema is the schema that the connection's search_path names first.
func currentSchema(ctx context.Context, q querier) (string, error) {
	var schema *string
	if err := q.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return "", fmt.Errorf("read current schema: %w", err)
	}
	if schema == nil {
		return "", fmt.Errorf("no schema of the search_path exists: create it, or fix search_path in the DSN")
	}
	return *schema, nil
}

// schemaVersion reads the newest recorded migration and refuses a version
// newer than this code knows.
func schemaVersion(ctx context.Context, q querier, schema string) (int, error) {
	var current int
	if err := q.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return 0, fmt.Errorf("read schema version of schema %s: %w", schema, err)
	}
	if current > SchemaVersion {
		return 0, fmt.Errorf("database schema %s has schema version %d, newer than this reserved understands (%d): upgrade reserved", schema, current, SchemaVersion)
	}
	return current, nil
}

// record notes that m was applied.
func record(ctx context.Context, q querier, schema string, m migration) error {
	if _, err := q.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
		return fmt.Errorf("record migration %s in schema %s: %w", m.name, schema, err)
	}
	return nil
}

// lockMigrations takes the advisory lock of schema's migrations and returns
// the function that releases it. The lock belongs to a transaction on a
// connection of its own, outside the pool, that stays open (and idle) while
// the migration runs on another connection; unlock ends the transaction and
// closes the connection, and so does the server when the daemon dies. A
// session-level lock would not do: behind PgBouncer in transaction pooling
// mode the statements of one client connection run on whichever server
// connection is free, so the lock would stay behind on one of them, held for
// ever, while the unlock ran on another.
//
// The holding transaction is READ COMMITTED, which keeps no snapshot between
// statements, and takes the lock with the simple query protocol, which
// leaves no portal (and so no snapshot) behind, so that a concurrent index
// build of the migration does not wait for it. A daemon that finds the lock taken rolls back and tries again
// every migrationLockPoll instead of blocking in PostgreSQL, because a
// concurrent index build waits for every transaction that is older than it,
// and one blocked on the lock that the building daemon holds would never end.
func lockMigrations(ctx context.Context, cfg *pgx.ConnConfig, schema string) (func(), error) {
	const key = `hashtextextended('reserve pgstore migrate ' || $1, 0)`
	conn, err := pgx.ConnectConfig(ctx, cfg.Copy())
	if err != nil {
		return nil, fmt.Errorf("connect to take the migration lock of schema %s: %w", schema, err)
	}
	closeConn := func() { conn.Close(context.WithoutCancel(ctx)) } // Ends the transaction, and the lock with it.
	for {
		var locked bool
		tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
		if err == nil {
			err = tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(`+key+`)`, pgx.QueryExecModeSimpleProtocol, schema).Scan(&locked)
		}
		if err != nil {
			closeConn()
			return nil, fmt.Errorf("take the migration lock of schema %s: %w", schema, err)
		}
		if locked {
			// Rolling back waits for the server's answer, so the lock is
			// gone when unlock returns; closing alone would leave its
			// release to the server's own time (and, behind PgBouncer, to
			// PgBouncer's).
			return func() {
				rctx, cancel := finishing(ctx)
				defer cancel()
				tx.Rollback(rctx) // Closing ends the transaction too if this fails.
				closeConn()
			}, nil
		}
		if err := tx.Rollback(ctx); err != nil {
			closeConn()
			return nil, fmt.Errorf("wait for the migration lock of schema %s: %w", schema, err)
		}
		select {
		case <-ctx.Done():
			closeConn()
			return nil, fmt.Errorf("wait for the migration lock of schema %s: %w", schema, ctx.Err())
		case <-time.After(migrationLockPoll):
		}
	}
}

// outsideTransaction reports whether m runs outside a transaction.
func (m migration) outsideTransaction() bool {
	first, _, _ := strings.Cut(m.sql, "\n")
	return strings.TrimSpace(first) == noTransaction
}

// concurrentIndex finds the name of the index a statement builds with
// CREATE INDEX CONCURRENTLY IF NOT EXISTS.
var concurrentIndex = regexp.MustCompile(`(?is)^CREATE\s+(?:UNIQUE\s+)?INDEX\s+CONCURRENTLY\s+IF\s+NOT\s+EXISTS\s+([a-z_][a-z0-9_]*)\s`)

// statements splits the SQL of a migration that runs outside a transaction
// into its statements, leaving out comment lines.
func (m migration) statements() []string {
	var out []string
	var cur strings.Builder
	for line := range strings.Lines(m.sql) {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "--") {
			continue
		}
		cur.WriteString(line)
		if strings.HasSuffix(trimmed, ";") {
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		}
	}
	if rest := strings.TrimSpace(cur.String()); rest != "" {
		out = append(out, rest)
	}
	return out
}

// applyOutsideTransaction runs the statements of m one by one on conn, with
// no transaction around them, and then records m.
func applyOutsideTransaction(ctx context.Context, conn *pgxpool.Conn, schema string, m migration) error {
	for _, stmt := range m.statements() {
		if match := concurrentIndex.FindStringSubmatch(stmt); match != nil {
			var invalid bool
			err := conn.QueryRow(ctx, `SELECT coalesce((SELECT NOT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)), false)`,
				pgx.Identifier{schema, match[1]}.Sanitize()).Scan(&invalid)
			if err != nil {
				return fmt.Errorf("apply migration %s to schema %s: look for an invalid index %s: %w", m.name, schema, match[1], err)
			}
			if invalid {
				if _, err := conn.Exec(ctx, "DROP INDEX CONCURRENTLY IF EXISTS "+pgx.Identifier{schema, match[1]}.Sanitize()); err != nil {
					return fmt.Errorf("apply migration %s to schema %s: drop the invalid index %s: %w", m.name, schema, match[1], err)
				}
			}
		}
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("apply migration %s to schema %s: %w", m.name, schema, err)
		}
	}
	return record(ctx, conn, schema, m)
}
