package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/reserve/reserve/internal/engine"
)

// The database cannot serve now, but will without anyone's action, when a
// transaction fails for one of these reasons. Such a failure is marked
// engine.StoreUnavailable (503 store_unavailable: the client retries with
// the same key after Retry-After); every other failure stays an internal
// error (500), because retrying does not cure it.
//
// Unavailable:
//   - No connection: refused or reset, closed by the server, a dial or read
//     timeout, a name that does not resolve right now, a broken TLS
//     handshake, a connection that pgx already knows is closed, SQLSTATE
//     class 08 (connection_exception).
//   - The server stops, crashed or starts: 57P01 admin_shutdown (also what
//     pg_terminate_backend sends), 57P02 crash_shutdown (another backend
//     crashed and the server restarts), 57P03 cannot_connect_now (starting
//     up, shutting down, in recovery).
//   - The server is full: 53300 too_many_connections.
//   - A standby answered a write: 25006 read_only_sql_transaction, as
//     during a failover or with a connection to a replica.
//   - The database gave up waiting: 57014 query_canceled (statement_timeout
//     or an administrator's pg_cancel_backend), 55P03 lock_not_available
//     (lock_timeout).
//   - Contention that did not clear: 40001 serialization_failure and 40P01
//     deadlock_detected once Update has used up its attempts.
//   - The request's deadline passed while connecting, while waiting for a
//     free connection of the pool, or while waiting for an answer.
//   - The store is closed (the daemon is stopping).
//
// Internal:
//   - 23505 unique_violation that still fails after every attempt: each
//     attempt reads the row afresh, so a lasting one is a bug.
//   - Authentication and authorization (class 28, 42501), a missing
//     database (3D000), schema or data errors (classes 22, 23, 42), disk
//     full (53100) and out of memory (53200), which need an operator, and
//     everything else PostgreSQL or pgx reports.
//   - A cancelled context: the caller stopped waiting for the answer.
var unavailableStates = map[string]bool{
	"57P01": true, // admin_shutdown
	"57P02": true, // crash_shutdown
	"57P03": true, // cannot_connect_now
	"53300": true, // too_many_connections
	"25006": true, // read_only_sql_transaction
	"57014": true, // query_canceled
	"55P03": true, // lock_not_available
	"40001": true, // serialization_failure, after the last attempt
	"40P01": true, // deadlock_detected, after the last attempt
}

// classify returns err marked engine.StoreUnavailable when it means that the
// database cannot serve now (see unavailableStates), and err itself
// otherwise. An error that already carries an engine code keeps it.
func (s *Store) classify(err error) error {
	if err == nil || errors.As(err, new(*engine.Error)) {
		return err
	}
	if s.closed.Load() || unavailable(err) {
		return engine.StoreUnavailable(err)
	}
	return explainPooler(err)
}

// explainPooler adds what to change to a failure of a prepared statement of
// pgx's default query exec mode that a connection pooler in transaction mode
// lost or handed to another client: 42P05 duplicate_prepared_statement or
// 26000 invalid_sql_statement_name about one of pgx's statements. Such a
// failure stays internal, because only the operator can cure it.
func explainPooler(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "42P05" || pgErr.Code == "26000") && strings.Contains(pgErr.Message, `"stmtcache_`) {
		return fmt.Errorf("%w (behind PgBouncer in transaction pooling mode, add default_query_exec_mode=exec to the DSN)", err)
	}
	return err
}

// unavailable reports whether err is a failure that retrying later resolves
// by itself. A SQLSTATE decides when there is one, even inside a connection
// error (a refused password stays internal); otherwise the connection
// itself failed, or the deadline passed.
func unavailable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return unavailableStates[pgErr.Code] || strings.HasPrefix(pgErr.Code, "08")
	}
	var netErr net.Error
	return errors.As(err, &netErr) ||
		errors.As(err, new(*pgconn.ConnectError)) ||
		errors.Is(err, pgconn.ErrConnClosed) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, context.DeadlineExceeded)
}
