package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/reserve/reserve/internal/engine"
)

// TestClassify pins which failures are store_unavailable (retry later with
// the same key) and which stay internal, for the conditions a test cannot
// easily bring about on a shared server; the tests in unavailable_test.go
// cause the others on a real one.
func TestClassify(t *testing.T) {
	pg := func(code string) error { return &pgconn.PgError{Severity: "FATAL", Code: code, Message: "m"} }
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"admin shutdown", fmt.Errorf("pgstore: begin: %w", pg("57P01")), engine.CodeStoreUnavailable},
		{"crash shutdown", pg("57P02"), engine.CodeStoreUnavailable},
		{"starting up", fmt.Errorf("connect: %w", pg("57P03")), engine.CodeStoreUnavailable},
		{"too many connections", pg("53300"), engine.CodeStoreUnavailable},
		{"read-only transaction", pg("25006"), engine.CodeStoreUnavailable},
		{"statement timeout", pg("57014"), engine.CodeStoreUnavailable},
		{"lock timeout", pg("55P03"), engine.CodeStoreUnavailable},
		{"connection failure", pg("08006"), engine.CodeStoreUnavailable},
		{"serialization failures exhausted", fmt.Errorf("pgstore: gave up after 10 attempts: %w", pg("40001")), engine.CodeStoreUnavailable},
		{"deadlocks exhausted", fmt.Errorf("pgstore: gave up after 10 attempts: %w", pg("40P01")), engine.CodeStoreUnavailable},
		{"refused", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, engine.CodeStoreUnavailable},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), engine.CodeStoreUnavailable},
		{"broken pipe", fmt.Errorf("write: %w", syscall.EPIPE), engine.CodeStoreUnavailable},
		{"closed by the server", fmt.Errorf("receive message: %w", io.ErrUnexpectedEOF), engine.CodeStoreUnavailable},
		{"conn closed", fmt.Errorf("pgstore: begin: %w", pgconn.ErrConnClosed), engine.CodeStoreUnavailable},
		{"deadline", fmt.Errorf("pgstore: begin: %w", context.DeadlineExceeded), engine.CodeStoreUnavailable},
		{"unique violations exhausted", fmt.Errorf("pgstore: gave up after 10 attempts: %w", pg("23505")), engine.CodeInternal},
		{"password refused", fmt.Errorf("connect: %w", pg("28P01")), engine.CodeInternal},
		{"no such database", pg("3D000"), engine.CodeInternal},
		{"no such table", pg("42P01"), engine.CodeInternal},
		{"disk full", pg("53100"), engine.CodeInternal},
		{"bad text", pg("22021"), engine.CodeInternal},
		{"cancelled", fmt.Errorf("pgstore: begin: %w", context.Canceled), engine.CodeInternal},
		{"write in View", ErrReadOnly, engine.CodeInternal},
		{"other", errors.New("something else"), engine.CodeInternal},
		{"engine error", engine.Errorf(engine.CodeUnknownWorkshop, "no"), engine.CodeUnknownWorkshop},
	} {
		s := &Store{}
		err := s.classify(tc.err)
		if got := engine.ErrorCode(err); got != tc.want {
			t.Errorf("%s: classify(%v) has code %s, want %s", tc.name, tc.err, got, tc.want)
		}
		if !errors.Is(err, tc.err) {
			t.Errorf("%s: classify(%v) = %v lost its cause", tc.name, tc.err, err)
		}
	}
	if (&Store{}).classify(nil) != nil {
		t.Error("classify(nil) is not nil")
	}
	closed := &Store{}
	closed.closed.Store(true)
	if err := closed.classify(errors.New("closed pool")); engine.ErrorCode(err) != engine.CodeStoreUnavailable {
		t.Errorf("a failure after Close = %v, want store_unavailable", err)
	}
}

// TestPreparedStatementBehindPoolerIsExplained pins the hint for pgx's
// prepared statements behind PgBouncer in transaction pooling mode: the
// failure stays internal and says which DSN option cures it.
func TestPreparedStatementBehindPoolerIsExplained(t *testing.T) {
	const hint = "add default_query_exec_mode=exec to the DSN"
	for _, cause := range []*pgconn.PgError{
		{Severity: "ERROR", Code: "42P05", Message: `prepared statement "stmtcache_a7524e1fba7b764f" already exists`},
		{Severity: "ERROR", Code: "26000", Message: `prepared statement "stmtcache_a7524e1fba7b764f" does not exist`},
	} {
		err := (&Store{}).classify(fmt.Errorf("read workshops: %w", cause))
		if engine.ErrorCode(err) != engine.CodeInternal || !errors.Is(err, cause) || !strings.Contains(err.Error(), hint) {
			t.Errorf("classify(%v) = %v, want an internal error that keeps its cause and says %q", cause, err, hint)
		}
	}
	other := &pgconn.PgError{Severity: "ERROR", Code: "26000", Message: `prepared statement "mine" does not exist`}
	if err := (&Store{}).classify(other); strings.Contains(err.Error(), hint) {
		t.Errorf("classify(%v) = %v, a statement that is not pgx's", other, err)
	}
}
