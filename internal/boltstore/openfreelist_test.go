package boltstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/reserve/reserve/internal/boltfile"
	"github.com/reserve/reserve/internal/boltfile/boltfiletest"
	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
)

// freelistKillEnv names the database that a re-executed test binary opens
// for writing, killing itself with SIGKILL once the freelist pages Open
// writes are synced and before their meta page is written.
const freelistKillEnv = "BOLTSTORE_FREELIST_KILL_DB"

// freelistKillChild is the child of freelistKillEnv; it returns only when
// Open did not kill it.
func freelistKillChild(path string) error {
	boltstore.AfterFreelistPages(func(string) { syscall.Kill(os.Getpid(), syscall.SIGKILL) })
	s, err := boltstore.Open(path, boltstore.Options{})
	if err == nil {
		s.Close()
	}
	return fmt.Errorf("Open returned (%v) without writing a freelist", err)
}

// copyFile copies the file at from to to.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	if err := os.WriteFile(to, readFile(t, from), 0o600); err != nil {
		t.Fatal(err)
	}
}

// scanOfCopy returns the pages bbolt's own walk finds free in a copy of
// the file at path.
func scanOfCopy(t *testing.T, path string) []uint64 {
	t.Helper()
	copied := filepath.Join(t.TempDir(), "copy.db")
	copyFile(t, path, copied)
	return boltfiletest.BboltFree(t, copied, bolt.FreelistMapType)
}

// openedFreelist returns what the freelist that Open wrote to the file at
// path counts as free: its ids, and its own pages when they were free
// pages (not added after the last page). before is the newest meta page
// before Open; the freelist's meta page records the transaction after it,
// and Open's own commit, which records the one after that, went to the
// other slot, so the file still holds it.
func openedFreelist(t *testing.T, path string, before boltfile.Meta) []uint64 {
	t.Helper()
	_, _, metas, err := boltfiletest.Open(t, path)
	if err != nil {
		t.Fatal(err)
	}
	m := metas[1-before.Page]
	if !m.Valid() || m.Txid != before.Txid+1 || m.Root != before.Root || m.Freelist == boltfile.NoFreelist {
		t.Fatalf("meta page %d after Open = %+v; want transaction %d with the root %d and a freelist", m.Page, m, before.Txid+1, before.Root)
	}
	ids, pages := boltfiletest.Freelist(t, path, m)
	if pages[0] < before.Pgid {
		ids = slices.Sorted(slices.Values(append(ids, pages...)))
	} else if m.Pgid != before.Pgid+uint64(len(pages)) {
		t.Errorf("freelist pages %v after the last page %d, but the meta page counts %d pages", pages, before.Pgid-1, m.Pgid)
	}
	return ids
}

// mustOpenWritingFreelist opens the file at path for writing, wants Open to
// have written a freelist, and returns the store.
func mustOpenWritingFreelist(t *testing.T, path string, opts boltstore.Options) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if wrote, why := boltstore.OpenFreelist(s); !wrote {
		s.Close()
		t.Fatalf("Open wrote no freelist (%v)", why)
	}
	return s
}

// mustCheck wants Check of s clean.
func mustCheck(t *testing.T, s *boltstore.Store) {
	t.Helper()
	findings, err := s.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		t.Errorf("finding: %s", f)
	}
}

// TestOpenAfterKillWritesBboltsFreelist kills a writer process with SIGKILL
// at random moments. After each kill the file keeps no freelist, and Open
// writes one that counts free exactly the pages that bbolt's own walk finds
// free in a copy of the file; Check is clean, reservations commit, and the
// file reopens after a clean close from the freelist Close kept.
func TestOpenAfterKillWritesBboltsFreelist(t *testing.T) {
	ctx := context.Background()
	path := crashWorkshops(t)
	cycles := max(*crashCycles/2, 1)
	for cycle := range cycles {
		runAndKill(t, path, rand.IntN(300))
		before := boltfiletest.Newest(t, path)
		if before.Freelist != boltfile.NoFreelist {
			t.Fatalf("cycle %d: the killed writer's last commit kept a freelist", cycle)
		}
		want := scanOfCopy(t, path)
		s := mustOpenWritingFreelist(t, path, boltstore.Options{})
		if got := openedFreelist(t, path, before); !slices.Equal(got, want) {
			t.Errorf("cycle %d: Open's freelist counts %d pages free %v\nbbolt's walk of a copy %d %v", cycle, len(got), got, len(want), want)
		}
		mustCheck(t, s)
		eng := engine.New(s)
		for range 20 {
			if _, err := eng.Reserve(ctx, "after", engine.OperationKey(uuid.NewString()), engine.Request{Workshop: "big", Quantity: 1}); err != nil {
				t.Fatalf("cycle %d: reserve after the open: %v", cycle, err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s, err := boltstore.Open(path, boltstore.Options{})
		if err != nil {
			t.Fatalf("cycle %d: reopen after a clean close: %v", cycle, err)
		}
		if wrote, why := boltstore.OpenFreelist(s); wrote || why != nil {
			t.Errorf("cycle %d: reopening a file that keeps a freelist wrote one (%v, %v)", cycle, wrote, why)
		}
		mustCheck(t, s)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if t.Failed() {
			t.FailNow()
		}
	}
}

// TestOpenFreelistHoldsTheLock: while Open writes the freelist, it holds
// the file's exclusive lock, which bbolt then keeps: neither bbolt nor
// another Store can open the file meanwhile.
func TestOpenFreelistHoldsTheLock(t *testing.T) {
	path, _ := filledAsKilled(t, 40)
	called := false
	t.Cleanup(boltstore.AfterFreelistPages(func(string) {
		called = true
		if db, err := bolt.Open(path, 0, &bolt.Options{ReadOnly: true, Timeout: 200 * time.Millisecond}); !errors.Is(err, berrors.ErrTimeout) {
			if err == nil {
				db.Close()
			}
			t.Errorf("bbolt's read-only open while the freelist is written = %v, want a timeout", err)
		}
		if s, err := boltstore.Open(path, boltstore.Options{LockTimeout: 200 * time.Millisecond}); err == nil || !strings.Contains(err.Error(), "is in use by another reserved") {
			if err == nil {
				s.Close()
			}
			t.Errorf("another Open while the freelist is written = %v", err)
		}
	}))
	s := mustOpenWritingFreelist(t, path, boltstore.Options{})
	defer s.Close()
	if !called {
		t.Fatal("Open wrote the freelist without passing the point the test looks at")
	}
	if _, err := boltstore.Open(path, boltstore.Options{LockTimeout: 200 * time.Millisecond}); err == nil || !strings.Contains(err.Error(), "is in use by another reserved") {
		t.Errorf("another Open after the freelist was written = %v", err)
	}
}

// TestReadOnlyOpenAfterKillChangesNothing: a read-only Open of a file that
// keeps no freelist writes none; the file stays byte for byte as it was.
func TestReadOnlyOpenAfterKillChangesNothing(t *testing.T) {
	path, last := filledAsKilled(t, 40)
	before := readFile(t, path)
	s, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if wrote, why := boltstore.OpenFreelist(s); wrote || why != nil {
		t.Errorf("read-only Open: wrote %v, %v", wrote, why)
	}
	if rec, err := engine.New(s).Operation(context.Background(), "alice", last); err != nil || rec.ReservationID == "" {
		t.Errorf("receipt of the last reservation = %+v %v", rec, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readFile(t, path), before) {
		t.Error("a read-only Open changed the file")
	}
}

// TestOpenLeavesRefusedFilesAlone: a file that keeps no freelist but that
// Open refuses (a bbolt file of another program, a file of a newer schema)
// gets no freelist either: it stays byte for byte as it was.
func TestOpenLeavesRefusedFilesAlone(t *testing.T) {
	foreign := filepath.Join(t.TempDir(), "foreign.db")
	db, err := bolt.Open(foreign, 0o600, &bolt.Options{NoFreelistSync: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("theirs"))
			if err != nil {
				return err
			}
			return b.Put(fmt.Appendf(nil, "k%d", i), bytes.Repeat([]byte("v"), 3000))
		}); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	if m := boltfiletest.Newest(t, foreign); m.Freelist != boltfile.NoFreelist {
		t.Fatalf("the foreign file keeps a freelist (page %d)", m.Freelist)
	}
	mustRefuse[*boltstore.RefusedError](t, foreign, boltstore.Options{}, "is a bbolt database without reserved's meta bucket")

	newer, _ := filledAsKilled(t, 10)
	db, err = bolt.Open(newer, 0o600, &bolt.Options{NoFreelistSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("schema"), []byte{0, 0, 0, 0, 0, 0, 0x10, 0})
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before := readFile(t, newer)
	if _, err := boltstore.Open(newer, boltstore.Options{}); err == nil || !strings.Contains(err.Error(), "newer than this reserved understands") {
		t.Errorf("Open of a newer schema = %v", err)
	}
	if !bytes.Equal(readFile(t, newer), before) {
		t.Error("Open changed a file of a newer schema")
	}
}

// TestOpenAfterCrashWritingTheFreelist: a crash while Open writes the
// freelist leaves a file that opens. Killed once the freelist pages are
// synced, or with those pages torn, before the meta page was written: the
// meta pages are as before and the next Open writes the freelist again.
// With the meta page torn: the intact older one records the same tree, so
// bbolt opens the file as it was before the Open, and so does Open, like
// any file with a torn meta page, when AcceptRollback allows it; without
// it Open refuses the file and changes nothing.
func TestOpenAfterCrashWritingTheFreelist(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		crash func(t *testing.T, path string, p *boltfile.FreelistPlan)
		torn  bool // The meta page is torn.
	}{
		{"killed after the freelist pages", func(t *testing.T, path string, _ *boltfile.FreelistPlan) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), freelistKillEnv+"="+path)
			cmd.Stderr = os.Stderr
			err := cmd.Run()
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("the child ended with %v, not by SIGKILL", err)
			}
		}, false},
		{"freelist pages torn", func(t *testing.T, path string, p *boltfile.FreelistPlan) {
			pages := bytes.Clone(p.Pages)
			rng := rand.New(rand.NewPCG(1, 2))
			for i := len(pages) / 2; i < len(pages); i++ {
				pages[i] = byte(rng.Uint32())
			}
			writeAt(t, path, pages[:len(pages)*3/4], p.PagesAt)
		}, false},
		{"meta page torn", func(t *testing.T, path string, p *boltfile.FreelistPlan) {
			writeAt(t, path, p.Pages, p.PagesAt)
			// All but the checksum: the page records the new
			// transaction, and fails its checksum.
			writeAt(t, path, p.MetaPage[:16+56], p.MetaAt)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, last := filledAsKilled(t, 60)
			before := boltfiletest.Newest(t, path)
			want := scanOfCopy(t, path)
			f, size, _, err := boltfiletest.Open(t, path)
			if err != nil {
				t.Fatal(err)
			}
			free, err := boltfile.FreePages(f, size, before)
			if err != nil {
				t.Fatal(err)
			}
			p, err := boltfile.PlanFreelist(before, free)
			if err != nil {
				t.Fatal(err)
			}
			tc.crash(t, path, p)

			if tc.torn {
				if n := boltfiletest.Newest(t, path); !boltfile.SameMeta(n, before) {
					t.Fatalf("the newest intact meta page is %+v, not the one before the crash", n)
				}
				if got := scanOfCopy(t, path); !slices.Equal(got, want) {
					t.Errorf("bbolt opens the file with the torn meta page with %v free, want %v", got, want)
				}
				err := mustRefuse[*boltstore.DamageError](t, path, boltstore.Options{}, fmt.Sprintf("lose transaction %d, the newest", before.Txid+1))
				if err == nil || err.Rollback == nil || err.Rollback.Txid != before.Txid {
					t.Fatalf("refusal = %v", err)
				}
			} else if _, _, metas, _ := boltfiletest.Open(t, path); !boltfile.SameMeta(metas[before.Page], before) || metas[1-before.Page].Txid != before.Txid-1 {
				t.Fatalf("a meta page changed before the freelist was complete: %+v", metas)
			}

			s := mustOpenWritingFreelist(t, path, boltstore.Options{AcceptRollback: tc.torn})
			if got := openedFreelist(t, path, before); !slices.Equal(got, want) {
				t.Errorf("Open's freelist counts %v free, bbolt's walk %v", got, want)
			}
			mustCheck(t, s)
			if rec, err := engine.New(s).Operation(ctx, "alice", last); err != nil || rec.ReservationID == "" {
				t.Errorf("receipt of the last reservation = %+v %v", rec, err)
			}
			if err := update(s); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = mustOpenPath(t, path)
			mustCheck(t, s)
		})
	}
}

// writeAt writes b to the file at path at offset off.
func writeAt(t *testing.T, path string, b []byte, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}
