package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/paths"
	"github.com/reserve/reserve/internal/pgstore"
	"github.com/reserve/reserve/internal/redact"
	"github.com/reserve/reserve/internal/tracing"
)

// The environment variables of the store flags.
const (
	EnvStore = "RESERVED_STORE"
	EnvDSN   = "RESERVED_DSN"
)

// The kinds of store reserved can run on.
const (
	storeBolt     = "bolt"
	storePostgres = "postgres"
)

// daemonStore is what the daemon needs of a store beyond engine.Store.
type daemonStore interface {
	engine.Store
	// Check reports every broken invariant.
	Check(ctx context.Context) ([]engine.Finding, error)
	// Created reports whether opening it created a new database.
	Created() bool
	// String names the database for logs and messages.
	String() string
}

var (
	_ daemonStore = (*boltstore.Store)(nil)
	_ daemonStore = (*pgstore.Store)(nil)
)

// storeFlags select the store: the embedded bbolt file (the default) or a
// PostgreSQL database shared by several daemons.
type storeFlags struct {
	kind string
	db   string
	dsn  string
	// envDSN is $RESERVED_DSN, the default of --dsn. It is kept out of the
	// flag's default, which help and usage messages print, password and
	// all.
	envDSN  string
	mmapMiB int // bolt: the initial map in MiB; 0 maps only the file.
}

func (f *storeFlags) register(fs *pflag.FlagSet) {
	f.registerAs(fs, "bolt: the database file; created, with its directories, only where no file is (env "+paths.EnvDB+")")
}

// registerReadOnly registers the flags for a tool that only reads the
// database, which never creates or changes it.
func (f *storeFlags) registerReadOnly(fs *pflag.FlagSet) {
	f.registerAs(fs, "bolt: the database file to read; it must exist, and it is never created or changed (env "+paths.EnvDB+")")
}

func (f *storeFlags) registerAs(fs *pflag.FlagSet, dbUsage string) {
	fs.StringVar(&f.kind, "store", os.Getenv(EnvStore), "where reservations are stored: bolt (one embedded file, --db) or postgres (a database several daemons share, --dsn); default postgres when a DSN is given, else bolt (env "+EnvStore+")")
	fs.StringVar(&f.db, "db", paths.DB(), dbUsage)
	fs.IntVar(&f.mmapMiB, "initial-mmap-mib", boltstore.DefaultInitialMmapSize()>>20, "bolt: MiB of address space to map the database file into when it is opened, so that it can grow without a remap, which waits for every read in progress; it is not memory: only the pages in use are resident; 0 maps only the file")
	f.envDSN = os.Getenv(EnvDSN)
	fs.StringVar(&f.dsn, "dsn", "", "postgres: the database, as a postgres:// URL or key=value pairs; search_path selects the schema (env "+EnvDSN+", which keeps a password off the command line that every local user can read)")
}

// dsnOrEnv is --dsn, or without it $RESERVED_DSN.
func (f *storeFlags) dsnOrEnv() string {
	if f.dsn != "" {
		return f.dsn
	}
	return f.envDSN
}

// effectiveKind is --store, or when it is not given, postgres if a DSN is
// and bolt otherwise.
func (f *storeFlags) effectiveKind() string {
	switch {
	case f.kind != "":
		return f.kind
	case f.dsnOrEnv() != "":
		return storePostgres
	}
	return storeBolt
}

// storeOptions tune how a store is opened.
type storeOptions struct {
	readOnly      bool                     // Change nothing (for check): no new file, no migration.
	noGroupCommit bool                     // bolt: one commit per update.
	onCommit      func(calls, batches int) // Told the size of every commit.
	committerNice int                      // bolt: the group committer thread's nice value, 0 to leave it.
	tracer        *tracing.Tracer          // A span for each commit; nil for none.
	// acceptRollback, bolt: open a file one of whose meta pages is damaged
	// at the older transaction the other records.
	acceptRollback bool
}

// servedStore is a store opened for serving, with what the daemon may do
// with it beyond daemonStore, which depends on the kind of store: each is
// set by the opener that knows the kind, so nothing later asks which kind
// of store it has.
type servedStore struct {
	daemonStore
	// exclusive is true when no other daemon can use the database (a
	// locked bbolt file).
	exclusive bool
	// damaged is closed when the store meets a damaged page, and damage
	// then returns what it met; nil for a store that cannot tell.
	damaged <-chan struct{}
	damage  func() error
	// rollback, when the store serves an older transaction of a damaged
	// file (--accept-rollback), says what was lost.
	rollback *boltstore.Rollback
	// committerNice reports the group committer's priority; nil for a
	// store without one.
	committerNice func() (int, error)
	// backup streams an online backup; nil for a store without one.
	backup func(context.Context, func(int64), io.Writer) (int64, error)
	// groupCommit reports whether concurrent updates share commits, for
	// the start line.
	groupCommit bool
}

// open validates the flags and opens the store they name.
func (f *storeFlags) open(ctx context.Context, o storeOptions) (daemonStore, error) {
	st, err := f.openServed(ctx, o)
	return st.daemonStore, err
}

// openServed validates the flags and opens the store they name, with the
// traits of its kind.
func (f *storeFlags) openServed(ctx context.Context, o storeOptions) (servedStore, error) {
	kind := f.effectiveKind()
	switch kind {
	case storeBolt:
		if f.dsnOrEnv() != "" {
			return servedStore{}, &exitError{code: ExitUsage, err: errors.New("--dsn names a PostgreSQL database, but --store is bolt")}
		}
		if f.db == "" {
			return servedStore{}, &exitError{code: ExitUsage, err: errors.New("--db must not be empty")}
		}
		switch {
		case f.mmapMiB < 0:
			return servedStore{}, &exitError{code: ExitUsage, err: fmt.Errorf("--initial-mmap-mib must be 0 or more, not %d", f.mmapMiB)}
		case f.mmapMiB > math.MaxInt>>20:
			return servedStore{}, &exitError{code: ExitUsage, err: fmt.Errorf("--initial-mmap-mib %d is more than this system can address", f.mmapMiB)}
		}
		mmap := f.mmapMiB << 20
		if mmap == 0 {
			mmap = -1 // boltstore's "only the file".
		}
		if o.readOnly {
			if _, err := os.Stat(f.db); errors.Is(err, fs.ErrNotExist) {
				return servedStore{}, &exitError{code: ExitUsage, err: fmt.Errorf("database %s does not exist", f.db)}
			}
		} else if err := os.MkdirAll(filepath.Dir(f.db), 0o700); err != nil {
			return servedStore{}, fmt.Errorf("create database directory: %w", err)
		}
		st, err := boltstore.Open(f.db, boltstore.Options{ReadOnly: o.readOnly, LockTimeout: time.Second, NoGroupCommit: o.noGroupCommit, OnCommit: o.onCommit, CommitterNice: o.committerNice, Tracer: o.tracer, InitialMmapSize: mmap, AcceptRollback: o.acceptRollback})
		var damaged *boltstore.DamageError
		var refused *boltstore.RefusedError
		if errors.As(err, &damaged) || errors.As(err, &refused) {
			// Starting again does not help: the file needs its operator.
			return servedStore{}, &exitError{code: ExitUsage, err: err}
		}
		if err != nil {
			return servedStore{}, err
		}
		return servedStore{daemonStore: st, exclusive: true, damaged: st.Damaged(), damage: st.Damage,
			rollback: st.Rollback(), committerNice: st.CommitterNice, backup: st.Backup, groupCommit: st.GroupCommit()}, nil
	case storePostgres:
		if f.dsnOrEnv() == "" {
			return servedStore{}, &exitError{code: ExitUsage, err: fmt.Errorf("--store postgres needs --dsn (or %s), e.g. postgres://reserve@db.example/reserve", EnvDSN)}
		}
		if o.noGroupCommit {
			return servedStore{}, &exitError{code: ExitUsage, err: errors.New("--no-group-commit applies to the bolt store only")}
		}
		dsn := f.dsnOrEnv()
		st, err := pgstore.Open(ctx, dsn, pgstore.Options{NoMigrate: o.readOnly, OnCommit: o.onCommit, Tracer: o.tracer})
		if err != nil {
			// The driver's errors may quote the DSN, password and all.
			return servedStore{}, redact.Error(err, dsn)
		}
		// Concurrent decisions share transactions while the database is
		// busy (pgstore's group commit), always.
		return servedStore{daemonStore: st, groupCommit: true}, nil
	}
	return servedStore{}, &exitError{code: ExitUsage, err: fmt.Errorf("--store %q: use bolt or postgres", kind)}
}

// openForTool opens the store for an offline tool (check, migrate), for
// which a store that cannot be opened is exit status 2.
func (f *storeFlags) openForTool(ctx context.Context, o storeOptions) (daemonStore, error) {
	st, err := f.open(ctx, o)
	var ee *exitError
	if err != nil && !errors.As(err, &ee) {
		err = &exitError{code: ExitUsage, err: err}
	}
	return st, err
}
