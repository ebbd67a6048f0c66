package boltstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
)

// growDeadline bounds how long growing the file may take; it only ends a
// stalled test clearly.
const growDeadline = 30 * time.Second

// grow writes mib MiB into a scratch bucket, one MiB a commit, far past
// the map a new file starts with. It returns a channel that gets the
// result.
func grow(s *boltstore.Store, mib int) <-chan error {
	done := make(chan error, 1)
	go func() {
		value := bytes.Repeat([]byte{0xa5}, 1<<20)
		for i := range mib {
			err := s.DB().Update(func(tx *bolt.Tx) error {
				b, err := tx.CreateBucketIfNotExists([]byte("scratch"))
				if err != nil {
					return err
				}
				return b.Put(fmt.Appendf(nil, "%04d", i), value)
			})
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	return done
}

// TestLongReadDoesNotHoldUpGrowth keeps a read transaction open while the
// file grows by 16 MiB: with the default initial map the writes never have
// to remap the file, which would wait for the read to end.
func TestLongReadDoesNotHoldUpGrowth(t *testing.T) {
	s := mustOpen(t, boltstore.Options{})
	read, err := s.DB().Begin(false)
	if err != nil {
		t.Fatal(err)
	}
	defer read.Rollback()
	select {
	case err := <-grow(s, 16):
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(growDeadline):
		read.Rollback() // Lets the stalled writer finish before the store closes.
		t.Fatalf("16 MiB of writes did not finish within %v while a read transaction was open", growDeadline)
	}
}

// TestBackupHoldsNoTransactionWhileItStreams takes a backup of a store that
// maps only its file into a writer that does not take the bytes yet, and
// grows the file meanwhile: the writes, which must remap the file, finish
// although the backup has not been read, and the backup read afterwards is
// the database as it was when the backup began.
func TestBackupHoldsNoTransactionWhileItStreams(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t, boltstore.Options{InitialMmapSize: -1})
	eng := engine.New(s)
	if _, _, err := eng.PutWorkshop(ctx, "before", engine.WorkshopSpec{Capacity: 5}, nil); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	sized := make(chan int64, 1)
	backup := make(chan error, 1)
	go func() {
		_, err := s.Backup(ctx, func(n int64) { sized <- n }, pw)
		pw.CloseWithError(err)
		backup <- err
	}()
	size := <-sized // The snapshot is taken; the pipe takes no byte yet.
	if _, _, err := eng.PutWorkshop(ctx, "after", engine.WorkshopSpec{Capacity: 5}, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-grow(s, 16):
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(growDeadline):
		pr.CloseWithError(errors.New("stalled")) // Ends the backup, and with it any transaction it holds.
		t.Fatalf("16 MiB of writes did not finish within %v while a backup waited for its reader", growDeadline)
	}
	data, err := io.ReadAll(pr)
	if err != nil || int64(len(data)) != size {
		t.Fatalf("read %d of %d bytes of the backup: %v", len(data), size, err)
	}
	if err := <-backup; err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "backup.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	restored, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer restored.Close()
	if findings, err := restored.Check(ctx); err != nil || len(findings) != 0 {
		t.Errorf("check of the backup = %v %v", findings, err)
	}
	if _, err := engine.New(restored).Workshop(ctx, "before"); err != nil {
		t.Errorf("the backup lacks a workshop made before it began: %v", err)
	}
	if _, err := engine.New(restored).Workshop(ctx, "after"); engine.ErrorCode(err) != engine.CodeUnknownWorkshop {
		t.Errorf("a workshop made after the snapshot: %v, want unknown_workshop", err)
	}
}

// TestBackupLeavesNoFile takes backups that complete, that fail while they
// are sent, that are given up before they start and while they take their
// snapshot, and that find too little free space: none leaves a file beside the database or an open file in
// the process. While a backup is sent its snapshot is an open file without
// a name.
func TestBackupLeavesNoFile(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t, boltstore.Options{})
	dir := filepath.Dir(s.Path())
	if _, _, err := engine.New(s).PutWorkshop(ctx, "go-basics", engine.WorkshopSpec{Capacity: 5}, nil); err != nil {
		t.Fatal(err)
	}
	noTrace := func(what string) {
		t.Helper()
		if names := dirNames(t, dir); !slices.Equal(names, []string{"reserved.db"}) {
			t.Errorf("after %s the database's directory holds %v", what, names)
		}
		if open := openSnapshots(t, s.Path()); len(open) > 0 {
			t.Errorf("after %s the process still has %v open", what, open)
		}
	}

	var seen []string // Open snapshot files when the first byte was sent.
	n, err := s.Backup(ctx, nil, writerFunc(func(p []byte) (int, error) {
		if seen == nil {
			seen = openSnapshots(t, s.Path())
			if names := dirNames(t, dir); !slices.Equal(names, []string{"reserved.db"}) {
				t.Errorf("while a backup is sent the database's directory holds %v", names)
			}
		}
		return len(p), nil
	}))
	if err != nil || n == 0 {
		t.Fatalf("backup = %d bytes, %v", n, err)
	}
	if runtime.GOOS == "linux" && (len(seen) != 1 || !strings.HasSuffix(seen[0], " (deleted)")) {
		t.Errorf("while a backup is sent the process has %v open, want one removed snapshot file", seen)
	}
	noTrace("a backup")

	broken := errors.New("connection reset")
	if _, err := s.Backup(ctx, nil, writerFunc(func(p []byte) (int, error) {
		return min(len(p), 100), broken
	})); !errors.Is(err, broken) {
		t.Errorf("backup into a writer that breaks = %v, want its error", err)
	}
	noTrace("a backup that broke off")

	gone, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Backup(gone, func(int64) { t.Error("a backup given up before it started announced a size") }, io.Discard); !errors.Is(err, context.Canceled) {
		t.Errorf("backup with a cancelled context = %v", err)
	}
	noTrace("a backup given up")

	// The free space is measured in the snapshot's transaction, just
	// before the copy.
	during, cancel := context.WithCancel(ctx)
	boltstore.SetFreeSpace(t, func(string) (int64, int64, error) { cancel(); return 1 << 40, 1 << 41, nil })
	if _, err := s.Backup(during, func(int64) { t.Error("a backup given up during its snapshot announced a size") }, io.Discard); !errors.Is(err, context.Canceled) {
		t.Errorf("backup given up during its snapshot = %v", err)
	}
	noTrace("a backup given up during its snapshot")

	boltstore.SetFreeSpace(t, func(string) (int64, int64, error) { return boltstore.MaxBackupReserve, 1 << 40, nil })
	var out bytes.Buffer
	_, err = s.Backup(ctx, func(int64) { t.Error("a refused backup announced a size") }, &out)
	if engine.ErrorCode(err) != engine.CodeInsufficientStorage || !strings.Contains(engine.ErrorMessage(err), "MiB are free") || out.Len() != 0 {
		t.Errorf("backup without free space = %v (%q), %d bytes, want a refusal that says how much is free", err, engine.ErrorMessage(err), out.Len())
	}
	noTrace("a refused backup")
}

// TestBackupNeedsItsSnapshotAndTheReserveFree refuses a backup whose
// snapshot would leave less than the reserve free, with the code of a
// machine's condition (insufficient_storage), and takes it when that much
// is left. The reserve is 64 MiB, but at most an eighth of the file
// system: a small database on a 40 MiB file system can be backed up.
func TestBackupNeedsItsSnapshotAndTheReserveFree(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t, boltstore.Options{})
	var size int64
	if _, err := s.Backup(ctx, func(n int64) { size = n }, io.Discard); err != nil {
		t.Fatal(err)
	}
	const small = 40 << 20
	if got := boltstore.BackupReserve(small); got != small/8 {
		t.Errorf("reserve on a %d MiB file system = %d, want an eighth of it", small>>20, got)
	}
	if got := boltstore.BackupReserve(1 << 40); got != 64<<20 {
		t.Errorf("reserve on a 1 TiB file system = %d, want 64 MiB", got)
	}
	for _, tc := range []struct {
		free, fs int64
		ok       bool
	}{
		{size + 64<<20 - 1, 1 << 40, false},
		{size + 64<<20, 1 << 40, true},
		{size + small/8 - 1, small, false},
		{size + small/8, small, true},
		{small, small, true},
	} {
		boltstore.SetFreeSpace(t, func(dir string) (int64, int64, error) {
			if dir != filepath.Dir(s.Path()) {
				t.Errorf("free space asked of %s, not of the database's directory", dir)
			}
			return tc.free, tc.fs, nil
		})
		_, err := s.Backup(ctx, nil, io.Discard)
		if (err == nil) != tc.ok || (err != nil && engine.ErrorCode(err) != engine.CodeInsufficientStorage) {
			t.Errorf("backup of %d bytes with %d of %d bytes free = %v, want ok=%v or else %s", size, tc.free, tc.fs, err, tc.ok, engine.CodeInsufficientStorage)
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// dirNames lists dir.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// openSnapshots returns what this process's open files that are backup
// snapshots of the database at path link to, on Linux; elsewhere nothing.
func openSnapshots(t *testing.T, path string) []string {
	t.Helper()
	if runtime.GOOS != "linux" {
		return nil
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var open []string
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, path+".backup-") {
			open = append(open, target)
		}
	}
	return open
}
