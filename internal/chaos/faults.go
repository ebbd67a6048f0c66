package chaos

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/reserve/reserve/internal/redact"
)

// diskSize is the size of the tmpfs a bolt run's database lives on when
// the disk is to fill up.
const diskSize = "48m"

// mountDisk mounts a small tmpfs for the bolt file, or notes that the full
// disk fault is skipped (it needs root).
func (r *run) mountDisk() {
	dir := filepath.Join(r.dir, "disk")
	if err := os.Mkdir(dir, 0o700); err != nil {
		r.skip("full disk: " + err.Error())
		return
	}
	if os.Geteuid() != 0 {
		r.skip("full disk: mounting a tmpfs needs root")
		return
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+diskSize+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		r.skip(fmt.Sprintf("full disk: mount tmpfs: %v: %s", err, out))
		return
	}
	r.diskDir = dir
}

func (r *run) unmountDisk() {
	if r.diskDir != "" {
		exec.Command("umount", "-l", r.diskDir).Run()
	}
}

// fillDisk fills the tmpfs with a file until no byte is left, lets the
// clients meet the full disk for a while, and frees it again.
func (r *run) fillDisk(stop <-chan struct{}) {
	path := filepath.Join(r.diskDir, "filler")
	f, err := os.Create(path)
	if err != nil {
		return
	}
	chunk := make([]byte, 1<<20)
	for len(chunk) > 0 {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				break
			}
			chunk = chunk[:len(chunk)/2]
		}
	}
	f.Close()
	r.count(r.faults, "disk_full")
	r.waitAnswers(stop, 3, time.Duration(100+r.rng.IntN(300))*time.Millisecond)
	os.Remove(path)
}

// CampaignDatabase is the database on the PostgreSQL server that the runs
// make their schemas in when the role may create it. A database of its own
// keeps the runs apart from everyone else's transactions on the server: a
// migration's CREATE INDEX CONCURRENTLY waits for every older transaction
// of its database, so one session left idle in a transaction elsewhere in
// a shared database would stall every daemon's start.
const CampaignDatabase = "reservechaos"

// CampaignDSN returns the DSN of CampaignDatabase on the server of dsn,
// creating the database if it is not there; when the role may not create
// it, dsn itself and a note why.
func CampaignDSN(ctx context.Context, dsn string) (string, string, error) {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", "", fmt.Errorf("%s %q: want a postgres:// URL", EnvDSN, redact.DSN(dsn))
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", "", fmt.Errorf("connect to %s: %w", EnvDSN, err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", CampaignDatabase).Scan(&exists); err != nil {
		return "", "", err
	}
	if !exists {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+CampaignDatabase); err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "42P04" { // Created meanwhile.
				return withDatabase(u, CampaignDatabase), "", nil
			}
			return dsn, fmt.Sprintf("the runs share the database of %s: CREATE DATABASE %s: %v", EnvDSN, CampaignDatabase, err), nil
		}
	}
	return withDatabase(u, CampaignDatabase), "", nil
}

// withDatabase is the URL u naming database db.
func withDatabase(u *url.URL, db string) string {
	v := *u
	v.Path = "/" + db
	return v.String()
}

// freshSchema makes the run's own schema on the PostgreSQL server and the
// DSN that selects it; the daemons' sessions carry the run's application
// name, by which the backend faults find them.
func (r *run) freshSchema(ctx context.Context) error {
	u, err := url.Parse(r.cfg.DSN)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return fmt.Errorf("%s %q: want a postgres:// URL", EnvDSN, redact.DSN(r.cfg.DSN))
	}
	suffix := randomHex(6)
	schema := "reservechaos_" + suffix
	r.appName = "reservechaos_" + suffix
	if err := r.pgExec(ctx, r.cfg.DSN, "CREATE SCHEMA "+schema); err != nil {
		return fmt.Errorf("create schema %s: %w", schema, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	q.Set("application_name", r.appName)
	u.RawQuery = q.Encode()
	r.dsn = u.String()
	return nil
}

func (r *run) dropSchema() {
	if r.appName != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := r.pgExec(ctx, r.cfg.DSN, "DROP SCHEMA "+r.appName+" CASCADE"); err != nil {
			fmt.Fprintf(os.Stderr, "reservechaos: drop schema %s: %v\n", r.appName, err)
		}
	}
}

// pgExec runs sql on the server of dsn.
func (r *run) pgExec(ctx context.Context, dsn, sql string, args ...any) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql, args...)
	return err
}

// terminateBackend kills one of the daemons' PostgreSQL backends with
// pg_terminate_backend.
func (r *run) terminateBackend() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := r.pgExec(ctx, r.adminDSN(), `SELECT pg_terminate_backend(pid) FROM (SELECT pid FROM pg_stat_activity
		WHERE application_name = $1 AND pid <> pg_backend_pid() ORDER BY random() LIMIT 1) AS victim`, r.appName)
	if err != nil {
		r.fail(fmt.Errorf("pg_terminate_backend: %w", err))
		return
	}
	r.count(r.faults, "pg_terminate_backend")
}
