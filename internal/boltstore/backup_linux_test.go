package boltstore_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/testskip"
)

// TestBackupThatFillsTheDiskIs507: when the file system fills up while the
// snapshot is written (after the free-space check passed), the backup is
// refused as insufficient_storage, a condition of the machine, not as an
// internal fault, and leaves nothing behind. It mounts a small tmpfs, which
// needs root.
func TestBackupThatFillsTheDiskIs507(t *testing.T) {
	if os.Getuid() != 0 {
		if os.Getenv("RESERVE_CI") != "" {
			t.Fatal("mounting a small file system needs root, and CI (RESERVE_CI) must run this test")
		}
		testskip.Missing(t, "root", "mounting a small file system needs root: run the tests as root to check a disk that fills up during a backup (CI, with RESERVE_CI set, must)")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=4m"); err != nil {
		t.Fatalf("mount a 4 MiB tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	s, err := boltstore.Open(filepath.Join(dir, "reserved.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := <-grow(s, 2); err != nil {
		t.Fatal(err)
	}
	// The check before the snapshot sees room enough; the disk fills up
	// while the snapshot is written.
	boltstore.SetFreeSpace(t, func(string) (int64, int64, error) { return 1 << 40, 1 << 40, nil })
	_, err = s.Backup(context.Background(), func(int64) {}, io.Discard)
	if engine.ErrorCode(err) != engine.CodeInsufficientStorage {
		t.Fatalf("backup on a full disk = %v, want %s", err, engine.CodeInsufficientStorage)
	}
	if names := dirNames(t, dir); len(names) != 1 || names[0] != "reserved.db" {
		t.Errorf("after the refused backup the database's directory holds %v", names)
	}
}
