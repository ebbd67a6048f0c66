package safefile_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reserve/reserve/internal/paths/pathstest"
	"github.com/reserve/reserve/internal/safefile"
)

// deadline bounds the opens of named pipes: the refusal must come at once,
// and the bound only ends a hung test clearly.
const deadline = 10 * time.Second

// TestTrusted is the rule for a caller that is not root (the other tests
// run as root, who owns everything it creates).

// opener is Open or OpenOrCreate.
type opener struct {
	name string
	open func(string) (*os.File, error)
}

var openers = []opener{
	{"Open", safefile.Open},
	{"OpenOrCreate", func(p string) (*os.File, error) { return safefile.OpenOrCreate(p, 0o600) }},
}

// withinDeadline runs open(path) and fails t if it does not return within
// deadline.
func withinDeadline(t *testing.T, open func(string) (*os.File, error), path string) (*os.File, error) {
	t.Helper()
	type result struct {
		f   *os.File
		err error
	}
	done := make(chan result, 1)
	go func() {
		f, err := open(path)
		done <- result{f, err}
	}()
	select {
	case r := <-done:
		if r.f != nil {
			t.Cleanup(func() { r.f.Close() })
		}
		return r.f, r.err
	case <-time.After(deadline):
		t.Fatalf("opening %s did not return within %s", path, deadline)
		return nil, nil
	}
}

// assertNotRegular fails t unless err is a *NotRegularError for path of
// type mode whose message says what the path is.
func assertNotRegular(t *testing.T, err error, path string, mode fs.FileMode, what string) {
	t.Helper()
	var nr *safefile.NotRegularError
	if !errors.As(err, &nr) || nr.Path != path || nr.Mode.Type() != mode || !errors.Is(err, safefile.ErrRefused) {
		t.Fatalf("error %v, want a NotRegularError for %s of type %v", err, path, mode)
	}
	if want := path + " is " + what + ", not a regular file"; err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
}

func TestOpenRegularFile(t *testing.T) {
	for _, o := range openers {
		t.Run(o.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f")
			if err := os.WriteFile(path, []byte("content"), 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := o.open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			// The descriptor is back in blocking mode. (f.Fd would set
			// blocking mode itself.)
			rc, err := f.SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			var flags int
			var ferr error
			if err := rc.Control(func(fd uintptr) { flags, ferr = unix.FcntlInt(fd, unix.F_GETFL, 0) }); err != nil || ferr != nil {
				t.Fatal(err, ferr)
			}
			if flags&unix.O_NONBLOCK != 0 {
				t.Error("the file is still in non-blocking mode")
			}
			if data, err := io.ReadAll(f); err != nil || string(data) != "content" {
				t.Errorf("read %q, %v", data, err)
			}
		})
	}
}

func TestOpenMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing")
	if _, err := safefile.Open(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open of a missing file = %v, want fs.ErrNotExist", err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open created %s", path)
	}
	f, err := safefile.OpenOrCreate(path, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("OpenOrCreate made %v, %v; want a regular file of mode 0600", fi, err)
	}
}

func TestSymlinkRefused(t *testing.T) {
	for _, o := range openers {
		t.Run(o.name, func(t *testing.T) {
			dir := t.TempDir()
			target := filepath.Join(dir, "target")
			path := filepath.Join(dir, "link")
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
			_, err := o.open(path)
			assertNotRegular(t, err, path, fs.ModeSymlink, "a symbolic link")
			if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the link's target was created: %v", err)
			}
			// A link to an existing file is refused just as well.
			if err := os.WriteFile(target, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err = o.open(path)
			assertNotRegular(t, err, path, fs.ModeSymlink, "a symbolic link")
		})
	}
}

func TestNamedPipeRefusedAtOnce(t *testing.T) {
	for _, o := range openers {
		t.Run(o.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "fifo")
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := withinDeadline(t, o.open, path)
			assertNotRegular(t, err, path, fs.ModeNamedPipe, "a named pipe (FIFO)")
		})
	}
}

func TestDirectoryRefused(t *testing.T) {
	for _, o := range openers {
		t.Run(o.name, func(t *testing.T) {
			path := t.TempDir()
			_, err := o.open(path)
			assertNotRegular(t, err, path, fs.ModeDir, "a directory")
		})
	}
}

func TestCreate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "new")
	f, err := safefile.Create(path, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := safefile.Create(path, 0o600); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Create over an existing file = %v, want fs.ErrExist", err)
	}
	target := filepath.Join(dir, "target")
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := safefile.Create(link, 0o600); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Create over a dangling symbolic link = %v, want fs.ErrExist", err)
	}
	if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Create followed the symbolic link: %v", err)
	}
}

// TestForeignFileRefused gives files to another user: they are refused
// wherever they lie, and the caller's own file is used unless its directory
// is writable by others and not sticky.
func TestForeignFileRefused(t *testing.T) {
	for _, o := range openers {
		t.Run(o.name, func(t *testing.T) {
			for _, mode := range []os.FileMode{0o777 | os.ModeSticky, 0o755, 0o700} {
				path := filepath.Join(pathstest.Dir(t, mode), "f")
				pathstest.ForeignFile(t, path, []byte("planted"))
				_, err := o.open(path)
				var owner *safefile.OwnerError
				if !errors.As(err, &owner) || owner.Owner != pathstest.ForeignUID || owner.Path != path || !owner.Self() || !errors.Is(err, safefile.ErrRefused) {
					t.Fatalf("another user's file in a directory of mode %v: %v, want an OwnerError naming uid %d", mode, err, pathstest.ForeignUID)
				}
				if want := path + " belongs to uid 65534, not to you or root (ask uid 65534 or root to remove it, or use another path)"; err.Error() != want {
					t.Errorf("message %q, want %q", err, want)
				}
				// The caller's own file there is used.
				if err := os.Chown(path, os.Getuid(), os.Getgid()); err != nil {
					t.Fatal(err)
				}
				f, err := o.open(path)
				if err != nil {
					t.Errorf("the caller's own file in a directory of mode %v: %v", mode, err)
				} else {
					f.Close()
				}
			}
			// In a directory anyone can write to that is not sticky, anyone
			// can replace even the caller's own file.
			dir := pathstest.Dir(t, 0o777)
			path := filepath.Join(dir, "f")
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := o.open(path)
			if want := path + " lies below " + dir + ", which anyone can write to (owner uid 0) and is not sticky (use another path)"; !errors.Is(err, safefile.ErrRefused) || err == nil || err.Error() != want {
				t.Errorf("a file in a world-writable directory: %v, want %q", err, want)
			}
		})
	}
}

// TestNewFileInWritableDirectoryRefused: a file that does not exist yet is
// refused, before anything is created, in a directory others can write to
// and that is not sticky, where anyone could replace it once it is made; in
// a sticky one (like /tmp) it may be made.
func TestNewFileInWritableDirectoryRefused(t *testing.T) {
	for _, tt := range []struct {
		mode fs.FileMode
		ok   bool
	}{{0o777, false}, {0o775, false}, {0o777 | fs.ModeSticky, true}, {0o755, true}} {
		dir := pathstest.Dir(t, tt.mode)
		path := filepath.Join(dir, "new")
		err := safefile.Check(path)
		if tt.ok != (err == nil) {
			t.Errorf("Check of a new file in a directory of mode %v = %v", tt.mode, err)
		}
		f, err := safefile.OpenOrCreate(path, 0o600)
		if tt.ok != (err == nil) {
			t.Errorf("OpenOrCreate of a new file in a directory of mode %v = %v", tt.mode, err)
		}
		if err == nil {
			f.Close()
			os.Remove(path)
		} else if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a refused new file in a directory of mode %v was made", tt.mode)
		}
	}
}
