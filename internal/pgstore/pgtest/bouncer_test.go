package pgtest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestRefusedToEndAProcess: the refusal of DROP DATABASE ... WITH (FORCE)
// to end a process, as PostgreSQL 13 to 15 and 16 on word it (the psql
// of a server 15 shows it raised in TerminateOtherDBBackends), is tried
// again; other errors, another refusal of SQLSTATE 42501 among them, are
// not.
func TestRefusedToEndAProcess(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"PostgreSQL 15", &pgconn.PgError{Code: "42501", Routine: "TerminateOtherDBBackends",
			Message: "must be a member of the role whose process is being terminated or member of pg_signal_backend"}, true},
		{"PostgreSQL 16 on", &pgconn.PgError{Code: "42501", Routine: "TerminateOtherDBBackends",
			Message: "permission denied to terminate process",
			Detail:  `Only roles with privileges of the role whose process is being terminated or with privileges of the "pg_signal_backend" role may terminate this process.`}, true},
		{"a superuser's process, PostgreSQL 16 on", &pgconn.PgError{Code: "42501", Routine: "TerminateOtherDBBackends",
			Message: "permission denied to terminate process",
			Detail:  "Only roles with the SUPERUSER attribute may terminate processes of roles with the SUPERUSER attribute."}, true},
		{"wrapped", fmt.Errorf("drop: %w", &pgconn.PgError{Code: "42501", Routine: "TerminateOtherDBBackends"}), true},
		{"not the owner", &pgconn.PgError{Code: "42501", Routine: "aclcheck_error", Message: "must be owner of database x"}, false},
		{"in use without FORCE", &pgconn.PgError{Code: "55006", Routine: "dropdb", Message: `database "x" is being accessed by other users`}, false},
		{"not a server error", errors.New("connection reset"), false},
	} {
		if got := refusedToEndAProcess(c.err); got != c.want {
			t.Errorf("%s: refusedToEndAProcess(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}
