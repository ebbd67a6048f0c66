package boltstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"

	"github.com/reserve/reserve/internal/boltfile/boltfiletest"
	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
)

// filled returns a closed database with a workshop and n reservations,
// each in its own commit, and the operation key of the last one.
func filled(t *testing.T, n int) (path string, last engine.OperationKey) {
	t.Helper()
	return fill(t, n, (*boltstore.Store).Close)
}

// filledAsKilled is filled, but the file is left as by a process killed
// right after the last reservation's commit: its newest transaction is
// that reservation's, and it keeps no list of free pages.
func filledAsKilled(t *testing.T, n int) (path string, last engine.OperationKey) {
	t.Helper()
	return fill(t, n, boltstore.CloseAsKilled)
}

func fill(t *testing.T, n int, closeStore func(*boltstore.Store) error) (path string, last engine.OperationKey) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "reserved.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	eng := engine.New(s)
	if _, _, err := eng.PutWorkshop(ctx, "go-basics", engine.WorkshopSpec{Capacity: 1000, MaxQuantity: 2}, nil); err != nil {
		t.Fatal(err)
	}
	for range n {
		last = engine.OperationKey(uuid.NewString())
		if _, err := eng.Reserve(ctx, "alice", last, engine.Request{Workshop: "go-basics", Quantity: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := closeStore(s); err != nil {
		t.Fatal(err)
	}
	return path, last
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mustRefuse opens path for writing and read-only, wants both refused with
// an error of type E whose message contains want, and the file unchanged.
func mustRefuse[E error](t *testing.T, path string, opts boltstore.Options, want string) E {
	t.Helper()
	before := readFile(t, path)
	var got E
	for _, ro := range []bool{false, true} {
		opts.ReadOnly = ro
		s, err := boltstore.Open(path, opts)
		if err == nil {
			s.Close()
			t.Fatalf("Open(ReadOnly %v) of %s succeeded", ro, path)
		}
		if !errors.As(err, &got) || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(ReadOnly %v) = %v (%T), want a %T with %q", ro, err, err, got, want)
		}
	}
	if !bytes.Equal(readFile(t, path), before) {
		t.Errorf("Open changed %s", path)
	}
	return got
}

func TestOpenCreatesOnlyWhereNoFileIs(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	if _, err := boltstore.Open(missing, boltstore.Options{ReadOnly: true}); err == nil || err.Error() != "database "+missing+" does not exist" {
		t.Errorf("read-only Open of a missing file = %v", err)
	}

	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	refused := mustRefuse[*boltstore.RefusedError](t, empty, boltstore.Options{}, "is an empty file")
	if want := "database " + empty + " is an empty file, not a reserved database (left untouched): restore it from a backup, or name a path that does not exist to start a new database"; refused == nil || refused.Error() != want {
		t.Errorf("refusal of an empty file = %v, want %q", refused, want)
	}

	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, bytes.Repeat([]byte("not a database\n"), 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRefuse[*boltstore.RefusedError](t, text, boltstore.Options{}, "is not a bbolt database file")

	short := filepath.Join(dir, "short.db")
	if err := os.WriteFile(short, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRefuse[*boltstore.RefusedError](t, short, boltstore.Options{}, "is not a bbolt database file")

	// A bbolt file without any bucket: what bbolt makes of an empty file.
	bare := filepath.Join(dir, "bare.db")
	db, err := bolt.Open(bare, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	mustRefuse[*boltstore.RefusedError](t, bare, boltstore.Options{}, "is a bbolt database without reserved's meta bucket")

	var notFile *boltstore.RefusedError
	if _, err := boltstore.Open(dir, boltstore.Options{}); !errors.As(err, &notFile) || !strings.Contains(err.Error(), "is not a regular file") {
		t.Errorf("Open of a directory = %v", err)
	}

	s, err := boltstore.Open(missing, boltstore.Options{})
	if err != nil || !s.Created() {
		t.Fatalf("Open of a missing file = %v, created %v", err, s != nil && s.Created())
	}
	s.Close()
	if left, _ := filepath.Glob(filepath.Join(dir, ".missing.db.new-*")); len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
	if st, err := os.Stat(missing); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("new database: %v %v, want mode 0600", st.Mode(), err)
	}
}

// TestOpenRacingCreators: of several Opens of one missing path at once,
// exactly one creates the database; bbolt's lock is per open file, so
// these contend as processes would.
func TestOpenRacingCreators(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reserved.db")
	var wg sync.WaitGroup
	var mu sync.Mutex
	created, opened := 0, 0
	start := make(chan struct{})
	for range 8 {
		wg.Go(func() {
			<-start
			s, err := boltstore.Open(path, boltstore.Options{LockTimeout: 5 * time.Second})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			opened++
			if s.Created() {
				created++
			}
			mu.Unlock()
			s.Close()
		})
	}
	close(start)
	wg.Wait()
	if created != 1 || opened != 8 {
		t.Errorf("%d of %d Opens created the database, want exactly 1", created, opened)
	}
}

func TestOpenRefusesDamagedPages(t *testing.T) {
	damages := append(boltfiletest.DataPageDamages(), boltfiletest.Damage{Name: "cut within meta page 1", Apply: func(tb testing.TB, path string) {
		if err := os.Truncate(path, int64(boltfiletest.Newest(tb, path).PageSize)+20); err != nil {
			tb.Fatal(err)
		}
	}, Want: "the file is cut short"})
	for _, d := range damages {
		t.Run(d.Name, func(t *testing.T) {
			path, _ := filled(t, 30)
			d.Apply(t, path)
			err := mustRefuse[*boltstore.DamageError](t, path, boltstore.Options{AcceptRollback: true}, d.Want)
			if msg := err.Error(); !strings.HasPrefix(msg, "database "+path+" is damaged: ") || !strings.HasSuffix(msg, "; restore it from a backup") {
				t.Errorf("message = %q", msg)
			}
		})
	}
}

// TestMetaPageRollback: with the newer meta page damaged, bbolt would open
// the file at the transaction before, forgetting the last reservation and
// its receipt. Open refuses that and says what would be lost; with
// AcceptRollback it opens at the older transaction and the first commit
// rewrites the damaged page.
func TestMetaPageRollback(t *testing.T) {
	ctx := context.Background()
	path, last := filledAsKilled(t, 3)
	newest := boltfiletest.Newest(t, path)
	boltfiletest.FlipMeta(t, path, newest.Page)
	err := mustRefuse[*boltstore.DamageError](t, path, boltstore.Options{}, "")
	want := fmt.Sprintf("database %s is damaged: meta page %d fails its checksum, so the file would open at transaction %d of meta page %d and lose transaction %d, the newest, with everything it committed; restore it from a backup",
		path, newest.Page, newest.Txid-1, 1-newest.Page, newest.Txid)
	if err == nil || err.Error() != want || err.Rollback == nil || err.Rollback.Txid != newest.Txid-1 || err.Rollback.Page != newest.Page {
		t.Fatalf("refusal = %v (%+v)\nwant %s", err, err, want)
	}

	s, err2 := boltstore.Open(path, boltstore.Options{AcceptRollback: true})
	if err2 != nil {
		t.Fatal(err2)
	}
	if r := s.Rollback(); r == nil || r.Txid != newest.Txid-1 || r.Lost != fmt.Sprintf("transaction %d, the newest", newest.Txid) {
		t.Errorf("Rollback() = %+v", r)
	}
	err2 = s.View(ctx, func(tx engine.Tx) error {
		if _, ok, err := tx.Receipt("alice", last); ok || err != nil {
			t.Errorf("the receipt of the lost transaction is still there (%v)", err)
		}
		return nil
	})
	if err2 != nil {
		t.Fatal(err2)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Open committed, and so rewrote the damaged page.
	s, err2 = boltstore.Open(path, boltstore.Options{})
	if err2 != nil {
		t.Fatalf("Open after the accepted rollback: %v", err2)
	}
	if s.Rollback() != nil {
		t.Errorf("Rollback() after the page was rewritten = %+v", s.Rollback())
	}
	s.Close()

	// Both meta pages damaged: nothing to fall back to.
	boltfiletest.FlipMeta(t, path, 0)
	boltfiletest.FlipMeta(t, path, 1)
	if err := mustRefuse[*boltstore.DamageError](t, path, boltstore.Options{AcceptRollback: true}, "both meta pages are damaged (page 0 fails its checksum; page 1 fails its checksum)"); err != nil && err.Rollback != nil {
		t.Errorf("both damaged, yet a rollback is offered: %+v", err.Rollback)
	}
}

// TestDamageWhileOpen damages the file under an open store: the first
// transaction that reads the damaged page fails with a *DamageError
// instead of a panic, Damaged is closed, and every later transaction fails
// the same way at once.
func TestDamageWhileOpen(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name   string
		opts   boltstore.Options
		damage func(t *testing.T, path string)
		first  func(s *boltstore.Store) error
		want   string
	}{
		{"zeroed page, read", boltstore.Options{}, zeroRootLeaf, view, "bbolt failed reading it: "},
		{"zeroed page, group commit", boltstore.Options{}, zeroRootLeaf, update, "bbolt failed reading it: "},
		{"zeroed page, commit alone", boltstore.Options{NoGroupCommit: true}, zeroRootLeaf, update, "bbolt failed reading it: "},
		{"cut short, read", boltstore.Options{}, cutToMetaPages, view, "reading it faulted at address 0x"},
		{"cut short, group commit", boltstore.Options{}, cutToMetaPages, update, "reading it faulted at address 0x"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path, _ := filled(t, 30)
			s, err := boltstore.Open(path, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := view(s); err != nil {
				t.Fatal(err)
			}
			tt.damage(t, path)
			err = tt.first(s)
			var de *boltstore.DamageError
			if !errors.As(err, &de) || !strings.HasPrefix(de.Error(), "database "+path+" is damaged: "+tt.want) {
				t.Fatalf("first transaction on the damaged file = %v", err)
			}
			select {
			case <-s.Damaged():
			default:
				t.Fatal("Damaged is not closed")
			}
			for _, next := range []func(*boltstore.Store) error{view, update} {
				if err := next(s); !errors.Is(err, s.Damage()) {
					t.Errorf("later transaction = %v, want the damage %v", err, s.Damage())
				}
			}
			if _, err := s.Check(ctx); !errors.Is(err, s.Damage()) {
				t.Errorf("Check = %v, want the damage", err)
			}
		})
	}
}

// zeroRootLeaf zeroes the leaf of the root bucket that lists the receipts
// bucket, which every reservation and every view of receipts reads.
func zeroRootLeaf(t *testing.T, path string) {
	boltfiletest.ZeroPage(t, path, boltfiletest.LeafOf(t, path, "receipts"))
}

func cutToMetaPages(t *testing.T, path string) {
	if err := os.Truncate(path, int64(2*boltfiletest.Newest(t, path).PageSize)); err != nil {
		t.Fatal(err)
	}
}

func view(s *boltstore.Store) error {
	return s.View(context.Background(), func(tx engine.Tx) error {
		return tx.ForEachReceipt(func(engine.Receipt) error { return nil })
	})
}

func update(s *boltstore.Store) error {
	_, err := engine.New(s).Reserve(context.Background(), "bob", engine.OperationKey(uuid.NewString()), engine.Request{Workshop: "go-basics", Quantity: 1})
	return err
}

// TestCheckFindsDamageInAnOpenStore: Check on a writable store walks the
// pages of its snapshot.
func TestCheckFindsDamageInAnOpenStore(t *testing.T) {
	path, _ := filled(t, 30)
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if findings, err := s.Check(context.Background()); err != nil || len(findings) != 0 {
		t.Fatalf("Check of the intact file = %v %v", findings, err)
	}
	boltfiletest.SetCount(t, path, boltfiletest.RootLeaf(t, path), 0x7fff)
	_, err = s.Check(context.Background())
	var de *boltstore.DamageError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "claims 32767 elements") {
		t.Fatalf("Check of the damaged file = %v", err)
	}
}

// TestOwnPanicIsNotDamage: a panic in the transaction's own code is the
// caller's failure, not the file's: the store goes on.
func TestOwnPanicIsNotDamage(t *testing.T) {
	s := mustOpen(t, boltstore.Options{})
	err := s.Update(context.Background(), func(engine.Tx) error { panic("bug") })
	if err == nil || err.Error() != "panic in transaction: bug" {
		t.Errorf("Update that panics = %v", err)
	}
	func() {
		defer func() {
			if p := recover(); p != "bug" {
				t.Errorf("View that panics: recovered %v, want the panic itself", p)
			}
		}()
		s.View(context.Background(), func(engine.Tx) error { panic("bug") })
	}()
	if s.Damage() != nil || view(s) != nil {
		t.Errorf("the store is damaged after its caller's panic: %v", s.Damage())
	}
}
