package intent_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/reserve/reserve/internal/intent"
	"github.com/reserve/reserve/internal/paths/pathstest"
	"github.com/reserve/reserve/internal/safefile"
)

// publicDir returns a new directory anyone can create files in, like /tmp.
func publicDir(t *testing.T) string {
	t.Helper()
	return pathstest.Dir(t, 0o777|os.ModeSticky)
}

// savedRecord returns the bytes of a state file holding a fresh intent.
func savedRecord(t *testing.T) []byte {
	t.Helper()
	path := statePath(t)
	j := mustOpen(t, path)
	if err := j.Save(mustNewReserve(t)); err != nil {
		t.Fatal(err)
	}
	j.Close()
	return mustRead(t, path)
}

// assertOwnerRefused fails t unless err refuses the file path of
// pathstest.ForeignUID under the ownership rule.
func assertOwnerRefused(t *testing.T, err error, path, prefix string) {
	t.Helper()
	var owner *safefile.OwnerError
	if !errors.As(err, &owner) || owner.Path != path || owner.Owner != pathstest.ForeignUID {
		t.Fatalf("error %v, want an OwnerError for %s naming uid %d", err, path, pathstest.ForeignUID)
	}
	if errors.Is(err, intent.ErrCorrupt) {
		t.Errorf("a planted file is reported as corrupt: %v", err)
	}
	if want := prefix + path + " belongs to uid 65534, not to you or root"; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("message %q does not start with %q", err, want)
	}
}

// TestStateFileOfAnotherUserIsRefused: a state file that belongs to neither
// the caller nor root, in a directory anyone can write to, may have been
// planted to have the caller send its key and payload. Open refuses it
// before creating anything; it is not used, not rewritten and not removed.
func TestStateFileOfAnotherUserIsRefused(t *testing.T) {
	path := filepath.Join(publicDir(t), "intent.json")
	planted := savedRecord(t)
	pathstest.ForeignFile(t, path, planted)

	_, err := intent.Open(path)
	assertOwnerRefused(t, err, path, "open intent journal: refusing the state file: ")
	if _, err := os.Lstat(path + ".lock"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a lock file was created next to the planted state file: %v", err)
	}
	if got := mustRead(t, path); !bytes.Equal(got, planted) {
		t.Error("the planted state file was changed")
	}
	if fi, err := os.Stat(path); err != nil || fi.Sys().(*syscall.Stat_t).Uid != pathstest.ForeignUID {
		t.Errorf("the planted state file was replaced: %v", err)
	}
}

// TestLockFileOfAnotherUserIsRefused: another user's lock file next to the
// state file in a directory anyone can write to is not locked; nothing is
// created.
func TestLockFileOfAnotherUserIsRefused(t *testing.T) {
	path := filepath.Join(publicDir(t), "intent.json")
	pathstest.ForeignFile(t, path+".lock", nil)
	_, err := intent.Open(path)
	assertOwnerRefused(t, err, path+".lock", "open intent journal: refusing the lock file: ")
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a state file was created: %v", err)
	}
}

// TestSymlinkedLockFileIsRefused: a symbolic link as the lock file is
// neither followed nor locked; the file it points to is not created.
func TestSymlinkedLockFileIsRefused(t *testing.T) {
	path := statePath(t)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.Symlink(victim, path+".lock"); err != nil {
		t.Fatal(err)
	}
	_, err := intent.Open(path)
	if !errors.Is(err, safefile.ErrRefused) || err.Error() != "open intent journal: refusing the lock file: "+path+".lock is a symbolic link, not a regular file" {
		t.Fatalf("Open with a symbolic link as the lock file = %v", err)
	}
	if _, err := os.Lstat(victim); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the link's target was created: %v", err)
	}
}

// TestSymlinkedStateFileIsRefused: a symbolic link as the state file is not
// followed; Open refuses it before creating anything, and it is left as it
// is, and so is the file it points to.
func TestSymlinkedStateFileIsRefused(t *testing.T) {
	path := statePath(t)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "elsewhere.json")
	record := savedRecord(t)
	if err := os.WriteFile(target, record, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	assertRefusedAtOpen(t, path, "is a symbolic link, not a regular file")
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the symbolic link was touched: %v", err)
	}
	if got := mustRead(t, target); !bytes.Equal(got, record) {
		t.Error("the link's target was changed")
	}
}

// TestNamedPipeStateFileIsRefusedAtOnce: a named pipe as the state file
// would block a plain open until someone writes to it; Open refuses it at
// once instead. (safefile's tests bound the wait; a regression hangs here.)
func TestNamedPipeStateFileIsRefusedAtOnce(t *testing.T) {
	path := statePath(t)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	assertRefusedAtOpen(t, path, "is a named pipe (FIFO), not a regular file")
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("the named pipe was touched: %v", err)
	}
}

// assertRefusedAtOpen fails t unless Open refuses the state file at path,
// which is not a regular file, with a message saying why, before creating
// its lock file.
func assertRefusedAtOpen(t *testing.T, path, why string) {
	t.Helper()
	j, err := intent.Open(path)
	if err == nil {
		j.Close()
		t.Fatalf("Open(%s) succeeded, want a refusal", path)
	}
	if want := "open intent journal: refusing the state file: " + path + " " + why; !errors.Is(err, safefile.ErrRefused) || err.Error() != want {
		t.Errorf("Open = %v, want %q", err, want)
	}
	if _, err := os.Lstat(path + ".lock"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a lock file was created next to the refused state file: %v", err)
	}
}
