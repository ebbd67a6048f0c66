package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/boltfile/boltfiletest"
	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server/servertest"
)

// pristine returns a closed database with the demo workshop and thirty
// reservations, each in its own commit, and the key of the last one.
func pristine(t *testing.T) (path string, last engine.OperationKey) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "reserved.db")
	store, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	eng := engine.New(store)
	if _, _, err := eng.PutWorkshop(ctx, "workshop-demo", engine.WorkshopSpec{Capacity: 1000, MaxQuantity: 2}, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		last = engine.OperationKey(uuid.NewString())
		if _, err := eng.Reserve(ctx, fmt.Sprintf("user-%d", i%3), last, demo); err != nil {
			t.Fatal(err)
		}
	}
	// Routed here, so that the daemon's dispatcher has nothing to write
	// when it starts: a test that damages the file while the daemon
	// serves then knows that any write is one made after the damage.
	if _, _, err := eng.RouteEvents(ctx, 100, engine.RouteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	return path, last
}

// refused runs reserved with args, which must refuse the database at path:
// exit status 2, and as its only output one line that starts with want and
// ends with wantEnd, with no trace of a panic; the file must be left byte
// for byte as it was. It returns the line.
func refused(t *testing.T, path, want, wantEnd string, args ...string) string {
	t.Helper()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := launch(t, env(filepath.Dir(path)), args...)
	if code := p.wait(t); code != 2 {
		t.Errorf("reserved %s: exit status %d, want 2", args[0], code)
	}
	out := p.logs.String()
	if !strings.HasPrefix(out, want) || !strings.HasSuffix(out, wantEnd+"\n") || strings.Count(out, "\n") != 1 ||
		strings.Contains(out, "panic") || strings.Contains(out, "goroutine") {
		t.Errorf("reserved %s: output\n%s\nwant one line %q … %q", args[0], out, want, wantEnd)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("reserved %s changed %s", args[0], path)
	}
	return out
}

// socketOnlyServeArgs are the arguments of a daemon that serves path on a
// socket only.
func socketOnlyServeArgs(t *testing.T, path string, extra ...string) []string {
	return append([]string{"serve", "--db", path, "--socket", filepath.Join(servertest.ShortTempDir(t), "r.sock"), "--listen", "", "--log-format", "json"}, extra...)
}

// TestDamagedDatabaseIsRefused: a damaged data page, a file cut short or a
// damaged meta page makes both serve and check exit 2 with one line that
// says so, instead of a panic, a fault, or (for a meta page) silently
// serving the transaction before the newest; the file stays as it was.
func TestDamagedDatabaseIsRefused(t *testing.T) {
	orig, _ := pristine(t)
	raw, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	damages := boltfiletest.DataPageDamages()
	newest := boltfiletest.Newest(t, orig)
	damages = append(damages,
		boltfiletest.Damage{Name: "newer meta page", Apply: func(tb testing.TB, path string) { boltfiletest.FlipMeta(tb, path, newest.Page) },
			Want: fmt.Sprintf("meta page %d fails its checksum, so the file would open at transaction %d of meta page %d and lose transaction %d, the newest, with everything it committed",
				newest.Page, newest.Txid-1, 1-newest.Page, newest.Txid)},
		boltfiletest.Damage{Name: "both meta pages", Apply: func(tb testing.TB, path string) {
			boltfiletest.FlipMeta(tb, path, 0)
			boltfiletest.FlipMeta(tb, path, 1)
		}, Want: "both meta pages are damaged"},
	)
	for _, d := range damages {
		t.Run(d.Name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "reserved.db")
			if err := os.WriteFile(path, raw, 0o600); err != nil {
				t.Fatal(err)
			}
			d.Apply(t, path)
			want := "reserved: database " + path + " is damaged: "
			end := "; restore it from a backup"
			if d.Name == "newer meta page" {
				want += d.Want
				refused(t, path, want, end, "check", "--db", path)
				end += fmt.Sprintf(", or start with --accept-rollback to serve transaction %d and lose the newer one", newest.Txid-1)
				refused(t, path, want, end, socketOnlyServeArgs(t, path)...)
				return
			}
			for _, args := range [][]string{{"check", "--db", path}, socketOnlyServeArgs(t, path, "--accept-rollback")} {
				if out := refused(t, path, want, end, args...); !strings.Contains(out, d.Want) {
					t.Errorf("reserved %s: %q does not say %q", args[0], out, d.Want)
				}
			}
		})
	}
}

// TestNotADatabaseIsRefused: only a path where no file is becomes a new
// database; an empty file, a file of another kind or a bbolt file of
// another program is refused by serve and check and left as it is.
func TestNotADatabaseIsRefused(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string][]byte{
		"empty":  nil,
		"text":   bytes.Repeat([]byte("these are my notes\n"), 500),
		"binary": {0, 1, 2, 3},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name+".db")
			if err := os.WriteFile(path, content, 0o600); err != nil {
				t.Fatal(err)
			}
			reason := "is not a bbolt database file"
			if len(content) == 0 {
				reason = "is an empty file"
			}
			want := "reserved: database " + path + " " + reason + ", not a reserved database (left untouched): "
			refused(t, path, want, "restore it from a backup, or name a path that does not exist to start a new database", "check", "--db", path)
			refused(t, path, want, "restore it from a backup, or name a path that does not exist to start a new database", socketOnlyServeArgs(t, path)...)
		})
	}
}

// TestAcceptRollback: with --accept-rollback a daemon serves a database
// whose newer meta page is damaged from the older transaction, logs an
// error naming the transaction it lost, and its first commit rewrites the
// damaged page, so the next start needs no flag.
func TestAcceptRollback(t *testing.T) {
	path, _ := pristine(t)
	newest := boltfiletest.Newest(t, path)
	boltfiletest.FlipMeta(t, path, newest.Page)
	p := launch(t, env(filepath.Dir(path)), socketOnlyServeArgs(t, path, "--accept-rollback")...)
	p.waitServing(t)
	r := p.logs.Find("serving a damaged database at its older meta page, as --accept-rollback allows: what the newer transaction committed is lost (reservations, receipts and changes); its clients' retries are decided anew", "level", "ERROR")
	if r == nil || r["txid"] != float64(newest.Txid-1) || r["lost"] != fmt.Sprintf("transaction %d, the newest", newest.Txid) || r["meta_page"] != float64(newest.Page) {
		t.Errorf("rollback log line = %v", r)
	}
	if code := p.stop(t); code != 0 {
		t.Fatalf("exit status %d", code)
	}
	p = launch(t, env(filepath.Dir(path)), socketOnlyServeArgs(t, path)...)
	p.waitServing(t)
	if code := p.stop(t); code != 0 {
		t.Fatalf("exit status of the next start without the flag: %d", code)
	}
	if code, stdout, stderr := run(t, "check", "--db", path); code != 0 {
		t.Errorf("check after the accepted rollback = %d %q %q", code, stdout, stderr)
	}
}

// TestDamageWhileServing damages the database under a running daemon: the
// request that meets the damage gets an error (nothing was decided), and
// the daemon, instead of serving from a damaged file, logs why, ends with
// one line saying the database is damaged and exits 2, having written
// nothing more to the file.
func TestDamageWhileServing(t *testing.T) {
	for _, tt := range []struct {
		name   string
		damage func(t *testing.T, path string)
		want   string
	}{
		{"zeroed leaf page", func(t *testing.T, path string) {
			boltfiletest.ZeroPage(t, path, boltfiletest.LeafOf(t, path, "receipts"))
		}, "bbolt failed reading it: "},
		{"file cut short", func(t *testing.T, path string) {
			if err := os.Truncate(path, int64(2*boltfiletest.Newest(t, path).PageSize)); err != nil {
				t.Fatal(err)
			}
		}, "reading it faulted at address 0x"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path, _ := pristine(t)
			args := socketOnlyServeArgs(t, path)
			p := launch(t, env(filepath.Dir(path)), args...)
			p.socket = args[4]
			p.waitServing(t)
			ctx := context.Background()
			c := p.socketClient()
			if ws, err := c.Workshops(ctx, false); err != nil || len(ws) != 1 || ws[0].Reserved != 30 {
				t.Fatalf("workshops before the damage = %+v %v", ws, err)
			}
			tt.damage(t, path)
			damaged, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			status, body, _, err := c.Reserve(ctx, engine.OperationKey(uuid.NewString()), demo)
			if err == nil || status == http.StatusCreated {
				t.Errorf("reservation on the damaged database = %d %s %v, want an error", status, body, err)
			}
			if code := p.wait(t); code != 2 {
				t.Errorf("exit status %d, want 2", code)
			}
			out := strings.TrimSuffix(p.logs.String(), "\n")
			lastLine := out[strings.LastIndex(out, "\n")+1:]
			want := "reserved: database " + path + " is damaged: " + tt.want
			if !strings.HasPrefix(lastLine, want) || !strings.HasSuffix(lastLine, "; restore it from a backup") || strings.Contains(out, "goroutine") {
				t.Errorf("last line %q, want %q … (output:\n%s)", lastLine, want, out)
			}
			logged := false
			for _, line := range strings.Split(out, "\n")[:strings.Count(out, "\n")] {
				var r map[string]any
				if err := json.Unmarshal([]byte(line), &r); err != nil {
					t.Errorf("log line %q is not JSON", line)
				}
				logged = logged || r["msg"] == "the database is damaged: shutting down instead of serving from it; restore it from a backup" && r["level"] == "ERROR"
			}
			if !logged {
				t.Error("no error log line about the damage")
			}
			if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, damaged) {
				t.Errorf("the daemon wrote to the damaged file (%v)", err)
			}
		})
	}
}
