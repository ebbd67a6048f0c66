// Package pgstore is the PostgreSQL engine.Store of reserve, for several
// daemons sharing one database: workshops, reservations, receipts and tokens
// in plain tables, a versioned schema embedded in the binary and applied by
// Open, and transactions that PostgreSQL's row locks and unique keys keep
// serializable for the engine's decision.
//
// It provides primitive reads and writes only; every decision is made by
// package engine. It must not import net/http or any front end.
//
// # Transactions
//
// Update runs at READ COMMITTED. Inside it, Workshop reads the workshop row
// with SELECT … FOR UPDATE, so reservations of one workshop queue on that
// row while reservations of different workshops never wait for each other.
// Every other decision is guarded by a primary key: a transaction that read
// a row as absent inserts it with a plain INSERT, so when a concurrent
// transaction inserted the same receipt (or reservation, workshop, token)
// first, the INSERT fails with a unique violation instead of overwriting it.
// Update then rolls back and runs fn again, and fn finds the row. A write to
// a row the transaction has not read is an upsert, like a bbolt Put.
// Unique violations, serialization failures and deadlocks are retried a
// bounded number of times with a small jittered backoff.
//
// A transaction that fails because the database cannot serve now (it is
// unreachable, restarting, full or failing over; see unavailableStates)
// returns an error marked engine.StoreUnavailable, with the cause in its
// chain; every other failure stays an internal error.
//
// # Group commit
//
// While the database is busy, concurrent Updates of one Store share one
// transaction, one COMMIT and so one WAL flush: each decision in a
// savepoint of its own, so that one that fails rolls back only itself, with
// the rows the group's decisions look up read ahead in one round trip (the
// locked ones in key order, so two daemons' groups cannot deadlock on them)
// and their writes sent with the COMMIT in one batch. Concurrent Views share
// read-only transactions the same way. group.go has the details.
//
// View runs at REPEATABLE READ READ ONLY, so all reads and scans of one View
// see a single snapshot.
//
// # Sessions and PgBouncer
//
// Nothing depends on a session outliving a transaction: no LISTEN/NOTIFY, no
// SET, no temporary tables, and the migrations' advisory lock belongs to a
// transaction (see lockMigrations). So the store works behind PgBouncer in
// transaction pooling mode, which hands each transaction (and each
// statement outside one) to whichever server connection is free. The one
// thing the DSN must say there is pgx's query exec mode: the default,
// cache_statement, prepares named statements on the server connection it
// happened to get, which PgBouncer 1.18 does not keep (ERROR: prepared
// statement "stmtcache_…" already exists / does not exist), so behind
// PgBouncer the DSN sets default_query_exec_mode=exec: one round trip per
// statement without anything left on the server, and no cached statement
// descriptions that a migration by another daemon could make stale. On a
// direct connection the default stays: prepared statements are about twice
// as fast there (BenchmarkReserveExecModes), and PgBouncer cannot be told
// apart from a server by the protocol.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/tracing"
)

// DefaultMaxAttempts is how often Update runs its function at most when
// Options.MaxAttempts is zero.
const DefaultMaxAttempts = 10

// The backoff before the n-th retry is drawn uniformly from
// [0, min(backoffBase<<n, backoffCap)).
const (
	backoffBase = time.Millisecond
	backoffCap  = 50 * time.Millisecond
)

// DefaultConnectTimeout bounds each attempt to connect to one host of the
// DSN when the DSN sets no connect_timeout. Without a bound, pgxpool waits
// two minutes for a host that accepts the connection but never answers (a
// hung or partitioned primary), and with a multi-host DSN every new
// connection would wait that long for the dead host before it tries the
// promoted one.
const DefaultConnectTimeout = 5 * time.Second

// finishTimeout bounds the COMMIT or ROLLBACK that ends a transaction. They
// are sent on a context that the caller's cancellation does not reach, so
// that a cancelled request cannot leave its outcome unknown; the bound keeps
// a server that hangs (stopped, or cut off without a reset) from pinning the
// connection, and with it a place of the pool, for ever. A COMMIT that runs
// out of time closes the connection, and its outcome is unknown, like that of
// any COMMIT whose connection fails.
const finishTimeout = 15 * time.Second

// The SQLSTATE codes that make Update run its function again.
const (
	codeSerializationFailure = "40001"
	codeDeadlockDetected     = "40P01"
	codeUniqueViolation      = "23505"
)

// ErrClosed is returned by operations on a closed Store, marked
// engine.StoreUnavailable.
var ErrClosed = errors.New("pgstore: store is closed")

// ErrReadOnly is returned by writes inside View.
var ErrReadOnly = errors.New("pgstore: write in a read-only transaction")

// Options tune a Store. The zero value is the production default.
type Options struct {
	// MaxConns caps the connections of the pool. Zero keeps the DSN's
	// pool_max_conns, or pgx's default (the larger of 4 and the CPU count).
	MaxConns int32
	// MaxAttempts bounds how often Update runs its function when
	// transactions collide. Zero means DefaultMaxAttempts.
	MaxAttempts int
	// OnRetry, if set, is told of every collision that makes Update run its
	// function again (for a daemon's retry metric and tests).
	OnRetry func(attempt int, err error)
	// OnCommit, if set, is told how many Updates shared each successful
	// commit and how many of them were batches (engine.BatchItems), before
	// their callers return (for the daemon's metrics).
	OnCommit func(calls, batches int)
	// Tracer, if not nil, gives each write transaction a span
	// (tracing.SpanCommit), as the bbolt store does for its commits: it
	// carries how many Updates the transaction took, is the child of the
	// first one's span and links to the others', and ends before any of
	// them is answered. It records the highest attempt among its Updates,
	// an event for each Update that collided in it (and so runs again in a
	// later transaction, with a span of its own), and the error of a
	// transaction that committed nothing because it failed. Views have no
	// span. Nil costs nothing.
	Tracer *tracing.Tracer
	// NoMigrate leaves the schema as it is and refuses a database whose
	// schema version is not exactly SchemaVersion, for tools that must not
	// change the database (reserved check).
	NoMigrate bool
}

// Store is an engine.Store on a PostgreSQL database. It is safe for
// concurrent use, also by several processes on one database.
type Store struct {
	pool        *pgxpool.Pool
	maxAttempts int
	onRetry     func(int, error)
	onCommit    func(calls, batches int)
	tracer      *tracing.Tracer
	groups      grouper // Updates.
	views       grouper
	closed      atomic.Bool
	created     bool   // Open created the tables.
	where       string // The database, for messages.
}

var _ engine.Store = (*Store)(nil)

// Open connects to the database named by dsn (a postgres:// URL or a
// key=value string, as libpq takes them; search_path selects the schema),
// applies the embedded schema migrations that the database lacks (unless
// opts.NoMigrate), and returns the store. A database whose schema is newer
// than this code is refused.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse PostgreSQL DSN: %w", err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.ConnConfig.ConnectTimeout <= 0 {
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	cfg.AfterConnect = scanTimesInUTC
	where := describe(cfg.ConnConfig)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL %s: %w", where, err)
	}
	created, err := migrate(ctx, pool, !opts.NoMigrate)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("PostgreSQL %s: %w", where, explainPooler(err))
	}
	s := &Store{pool: pool, maxAttempts: opts.MaxAttempts, onRetry: opts.OnRetry, onCommit: opts.OnCommit, tracer: opts.Tracer, created: created, where: where}
	s.groups = grouper{opts: pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, begin: "BEGIN ISOLATION LEVEL READ COMMITTED", write: true}
	s.views = grouper{opts: pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, begin: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"}
	for _, g := range []*grouper{&s.groups, &s.views} {
		g.max = int(cfg.MaxConns)
		g.slots = min(groupSlots, g.max)
	}
	return s, nil
}

// Created reports whether Open created the schema's tables, that is whether
// the database was new. Of several daemons starting on one new database,
// exactly one sees true.
func (s *Store) Created() bool { return s.created }

// String names the database, without its password.
func (s *Store) String() string { return "PostgreSQL " + s.where }

// scanTimesInUTC makes the connection return TIMESTAMPTZ values in UTC, as
// the engine writes them, instead of in the local time zone.
func scanTimesInUTC(_ context.Context, conn *pgx.Conn) error {
	conn.TypeMap().RegisterType(&pgtype.Type{Name: "timestamptz", OID: pgtype.TimestamptzOID, Codec: &pgtype.TimestamptzCodec{ScanLocation: time.UTC}})
	return nil
}

// describe names a database for error messages without its password.
func describe(c *pgx.ConnConfig) string {
	return fmt.Sprintf("database %q on %s:%d as %q", c.Database, c.Host, c.Port, c.User)
}

// Pool returns the connection pool, for tools that inspect the database.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close waits for the transactions in flight and closes every connection.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.pool.Close()
	return nil
}

// Check reports every broken invariant of the engine, read from one
// snapshot, and then every count of places_by_person that the rows do not
// bear out (see checkPlaces), read from another.
func (s *Store) Check(ctx context.Context) ([]engine.Finding, error) {
	findings, err := engine.Check(ctx, s)
	if err != nil {
		return nil, err
	}
	more, err := s.checkPlaces(ctx)
	if err != nil {
		return nil, fmt.Errorf("check the places by person: %w", err)
	}
	return append(findings, more...), nil
}

// Update implements engine.Store: it runs fn in a READ COMMITTED transaction,
// alone or shared with concurrent Updates (see the package comment for why
// that is serializable for the engine, and for group commit), and runs it
// again after a unique violation, serialization failure or deadlock,
// up to the configured number of attempts. Cancelling ctx while fn runs rolls
// the transaction back and returns an error; once fn has returned nil, the
// COMMIT is sent on a context that is not cancelled, so that an error from
// Update means nothing was committed, unless the connection itself failed
// during the COMMIT. A failure that retrying later resolves by itself (the
// database unreachable or restarting, see unavailableStates) is marked
// engine.StoreUnavailable.
func (s *Store) Update(ctx context.Context, fn func(engine.Tx) error) error {
	return s.classify(s.update(ctx, fn))
}

// update is Update without the classification of its error.
func (s *Store) update(ctx context.Context, fn func(engine.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := s.grouped(&s.groups, ctx, fn, attempt)
		if err == nil || !retryable(err) {
			return err
		}
		if attempt >= s.maxAttempts {
			return fmt.Errorf("pgstore: gave up after %d attempts: %w", attempt, err)
		}
		if s.onRetry != nil {
			s.onRetry(attempt, err)
		}
		if backoff(ctx, attempt) != nil {
			return fmt.Errorf("pgstore: no retry, %w, after: %w", ctx.Err(), err)
		}
	}
}

// View implements engine.Store with a REPEATABLE READ READ ONLY transaction,
// which concurrent Views share like Updates (every View of a group was
// called before the transaction took its snapshot); its failures are
// classified like Update's.
func (s *Store) View(ctx context.Context, fn func(engine.Tx) error) error {
	return s.classify(s.grouped(&s.views, ctx, fn, 1))
}

// runTx runs fn once in a transaction of the given options and commits if
// fn and every statement it ran succeeded.
func (s *Store) runTx(ctx context.Context, opts pgx.TxOptions, write bool, fn func(engine.Tx) error) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	ptx, err := s.pool.BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("pgstore: begin: %w", err)
	}
	// The rollback must reach the server even when ctx is cancelled; after a
	// commit it does nothing.
	defer func() {
		fctx, cancel := finishing(ctx)
		defer cancel()
		ptx.Rollback(fctx)
	}()
	t := &tx{ctx: ctx, tx: ptx, write: write}
	if err := outcome(fn(t), t.err); err != nil {
		return err
	}
	fctx, cancel := finishing(ctx)
	defer cancel()
	if err := ptx.Commit(fctx); err != nil {
		return fmt.Errorf("pgstore: commit: %w", err)
	}
	return nil
}

// finishing returns the context of the COMMIT or ROLLBACK of a transaction
// of ctx: not cancelled with ctx, but bounded by finishTimeout.
func finishing(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
}

// outcome is the error of a transaction whose function returned err after
// the statement that failed with stmtErr, if any.
func outcome(err, stmtErr error) error {
	switch {
	case stmtErr == nil:
		return err
	case err == nil:
		// A statement failed, so PostgreSQL has aborted the transaction
		// whatever fn made of the error.
		return stmtErr
	case !errors.Is(err, stmtErr):
		// Keep the statement's error visible to retryable even when fn
		// reported it without wrapping.
		return fmt.Errorf("%w (after a failed statement: %w)", err, stmtErr)
	}
	return err
}

// retryable reports whether err is a collision with a concurrent
// transaction that running the function again resolves.
func retryable(err error) bool {
	_, ok := collision(err)
	return ok
}

// collision returns the SQLSTATE of err when it is a collision with a
// concurrent transaction (see retryable).
func collision(err error) (sqlstate string, ok bool) {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return "", false
	}
	switch pgErr.Code {
	case codeSerializationFailure, codeDeadlockDetected, codeUniqueViolation:
		return pgErr.Code, true
	}
	return "", false
}

// backoff waits a random time below min(backoffBase<<attempt, backoffCap),
// or until ctx is done.
func backoff(ctx context.Context, attempt int) error {
	limit := backoffCap
	if attempt < 16 {
		limit = min(backoffBase<<attempt, backoffCap)
	}
	timer := time.NewTimer(rand.N(limit))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
