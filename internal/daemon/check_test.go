package daemon_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/daemon"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server/servertest"
)

// run runs reserved in-process and returns its exit code and output.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = daemon.Run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestCheck(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "reserved.db")
	store, err := boltstore.Open(db, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	eng := engine.New(store)
	if _, _, err := eng.PutWorkshop(ctx, "go-basics", engine.WorkshopSpec{Capacity: 3, MaxQuantity: 2}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Reserve(ctx, "alice", "f47ac10b-58cc-4372-a567-0e02b2c3d479", engine.Request{Workshop: "go-basics", Quantity: 2}); err != nil {
		t.Fatal(err)
	}
	store.Close()

	code, stdout, stderr := run(t, "check", "--db", db)
	if code != 0 || stdout != "database "+db+" is consistent: no findings\n" || stderr != "" {
		t.Errorf("clean check = %d %q %q", code, stdout, stderr)
	}

	// Break the counter behind the engine's back.
	store, err = boltstore.Open(db, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = store.Update(ctx, func(tx engine.Tx) error {
		w, _, err := tx.Workshop("go-basics")
		if err != nil {
			return err
		}
		w.Reserved = 1
		return tx.PutWorkshop(w)
	})
	if err != nil {
		t.Fatal(err)
	}
	// While a writer holds the database, check cannot open it.
	code, _, stderr = run(t, "check", "--db", db)
	if code != 2 || stderr != "reserved: database "+db+" is in use by another reserved\n" {
		t.Errorf("check of a held database = %d %q", code, stderr)
	}
	store.Close()

	code, stdout, stderr = run(t, "check", "--db", db)
	if code != 1 || !strings.HasPrefix(stdout, engine.FindingCounter+": ") || stderr != "reserved: 1 findings in database "+db+"\n" {
		t.Errorf("check with a broken counter = %d %q %q", code, stdout, stderr)
	}

	missing := filepath.Join(t.TempDir(), "missing.db")
	code, _, stderr = run(t, "check", "--db", missing)
	if code != 2 || stderr != "reserved: database "+missing+" does not exist\n" {
		t.Errorf("check of a missing database = %d %q", code, stderr)
	}
	t.Setenv("RESERVED_DB", db)
	if code, _, _ := run(t, "check"); code != 1 {
		t.Errorf("check with RESERVED_DB = %d, want 1", code)
	}
}

func TestVersionAndUsage(t *testing.T) {
	code, stdout, _ := run(t, "version")
	if code != 0 || !strings.HasPrefix(stdout, "reserved ") {
		t.Errorf("version = %d %q", code, stdout)
	}
	socket := filepath.Join(servertest.ShortTempDir(t), "r.sock")
	db := filepath.Join(t.TempDir(), "new", "reserved.db")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--no-such-flag"}, "reserved: unknown flag: --no-such-flag\n"},
		{[]string{"serve", "--no-such-flag"}, "reserved: unknown flag: --no-such-flag\n"},
		{[]string{"frobnicate"}, "reserved: unknown command \"frobnicate\" for \"reserved\"\n"},
		{[]string{"serve", "--socket", socket, "--log-format", "xml"}, "reserved: --log-format \"xml\": use text or json\n"},
		{[]string{"serve", "--socket", socket, "--log-level", "verbose"}, "reserved: --log-level \"verbose\": use debug, info, warn, error\n"},
		{[]string{"serve", "--socket", socket, "--socket-mode", "rw"}, "reserved: --socket-mode \"rw\" is not an octal permission such as 0600\n"},
		{[]string{"serve", "--socket", socket, "--db", db, "--initial-mmap-mib", "-1"}, "reserved: --initial-mmap-mib must be 0 or more, not -1\n"},
	} {
		code, _, stderr := run(t, tt.args...)
		if code != 2 || stderr != tt.want {
			t.Errorf("reserved %v = %d %q, want 2 %q", tt.args, code, stderr, tt.want)
		}
	}
	mustNotExist(t, filepath.Dir(db))
	code, stdout, _ = run(t, "serve", "--help")
	if code != 0 || !strings.Contains(stdout, "--enable-fault-injection") || !strings.Contains(stdout, "Examples:") {
		t.Errorf("serve --help = %d %q", code, stdout)
	}
}

// TestCheckNeverCreates: check's help says that --db is only read, and a
// database that does not exist is refused, not created.
func TestCheckNeverCreates(t *testing.T) {
	code, stdout, _ := run(t, "check", "--help")
	if code != 0 || !strings.Contains(stdout, "the database file to read; it must exist, and it is never created or changed") {
		t.Errorf("check --help = %d, describes --db as:\n%s", code, stdout)
	}
	db := filepath.Join(t.TempDir(), "none", "reserved.db")
	code, _, stderr := run(t, "check", "--db", db)
	if code != daemon.ExitUsage || stderr != "reserved: database "+db+" does not exist\n" {
		t.Errorf("check of a missing database = %d %q", code, stderr)
	}
	mustNotExist(t, filepath.Dir(db))
}
