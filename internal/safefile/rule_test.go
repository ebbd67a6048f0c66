package safefile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/reserve/reserve/internal/paths/pathstest"
	"github.com/reserve/reserve/internal/safefile"
)

// el is an element of a test chain: its name, owner and mode.
type el struct {
	name  string
	owner uint32
	mode  fs.FileMode
}

// chain makes the steps of a plain path from the root (which is found in
// itself), each element found in the one before.
func chain(els ...el) (string, []safefile.Step) {
	var steps []safefile.Step
	prev := safefile.Element{Path: "/", Owner: 0, Mode: fs.ModeDir | 0o755}
	steps = append(steps, safefile.Step{Dir: prev, Entry: prev})
	path := ""
	for _, e := range els {
		path += "/" + e.name
		cur := safefile.Element{Path: path, Owner: e.owner, Mode: e.mode}
		steps = append(steps, safefile.Step{Dir: prev, Entry: cur})
		prev = cur
	}
	return path, steps
}

const (
	caller  = 1000
	other   = 65534
	daemon  = 990
	dir755  = fs.ModeDir | 0o755
	dir700  = fs.ModeDir | 0o700
	dir775  = fs.ModeDir | 0o775
	dir777  = fs.ModeDir | 0o777
	tmp     = fs.ModeDir | 0o777 | fs.ModeSticky
	regular = 0o600
	sock    = fs.ModeSocket | 0o600
	link    = fs.ModeSymlink | 0o777
)

// TestCheckChain is the whole rule over chains of (owner, mode): nil names
// no refused element, else the element refused and why.
func TestCheckChain(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rule  safefile.Rule
		els   []el
		elem  string // "" for accepted
		owner uint32
		why   safefile.Why
	}{
		{"home", safefile.FileRule, []el{{"home", 0, dir755}, {"alice", caller, dir700}, {"intent.json", caller, regular}}, "", 0, 0},
		{"root's 0700 directory", safefile.FileRule, []el{{"root", 0, dir700}, {"intent.json", 0, regular}}, "", 0, 0},
		{"caller's directory in /tmp", safefile.FileRule, []el{{"tmp", 0, tmp}, {"x", caller, dir700}, {"intent.json", caller, regular}}, "", 0, 0},
		{"caller's file in /tmp", safefile.FileRule, []el{{"tmp", 0, tmp}, {"intent.json", caller, regular}}, "", 0, 0},
		{"/run/user/<uid>", safefile.FileRule, []el{{"run", 0, dir755}, {"user", 0, dir755}, {"1000", caller, dir700}, {"f", caller, regular}}, "", 0, 0},
		{"other's 0755 directory in /tmp", safefile.FileRule, []el{{"tmp", 0, tmp}, {"rsv", other, dir755}, {"intent.json", other, regular}}, "/tmp/rsv", other, safefile.WhyOwner},
		{"other's directory, caller's file", safefile.FileRule, []el{{"tmp", 0, tmp}, {"rsv", other, dir755}, {"intent.json", caller, regular}}, "/tmp/rsv", other, safefile.WhyOwner},
		{"other's ancestor", safefile.FileRule, []el{{"srv", other, dir755}, {"x", caller, dir700}, {"f", caller, regular}}, "/srv", other, safefile.WhyOwner},
		{"other's file in root's directory", safefile.FileRule, []el{{"var", 0, dir755}, {"f", other, regular}}, "/var/f", other, safefile.WhyOwner},
		{"other's file in /tmp", safefile.FileRule, []el{{"tmp", 0, tmp}, {"f", other, regular}}, "/tmp/f", other, safefile.WhyOwner},
		{"group-writable directory", safefile.FileRule, []el{{"g", 0, dir775}, {"f", caller, regular}}, "/g", 0, safefile.WhyWritable},
		{"world-writable, not sticky", safefile.FileRule, []el{{"w", 0, dir777}, {"x", caller, dir700}, {"f", caller, regular}}, "/w", 0, safefile.WhyWritable},
		{"other's link in /tmp", safefile.FileRule, []el{{"tmp", 0, tmp}, {"lnk", other, link}}, "/tmp/lnk", other, safefile.WhySymlink},
		{"root's link", safefile.FileRule, []el{{"lnk", 0, link}}, "", 0, 0},

		{"socket in /tmp", safefile.SocketRule, []el{{"tmp", 0, tmp}, {"reserved-1000.sock", caller, sock}}, "", 0, 0},
		{"daemon's 0755 directory", safefile.SocketRule, []el{{"run", 0, dir755}, {"reserved", daemon, dir755}, {"reserved.sock", daemon, sock}}, "", 0, 0},
		{"root's directory, daemon's socket", safefile.SocketRule, []el{{"run", 0, dir755}, {"reserved", 0, dir755}, {"reserved.sock", daemon, sock}}, "", 0, 0},
		{"other's socket in /tmp", safefile.SocketRule, []el{{"tmp", 0, tmp}, {"r.sock", other, sock}}, "/tmp/r.sock", other, safefile.WhyOwner},
		{"other's directory in /tmp", safefile.SocketRule, []el{{"tmp", 0, tmp}, {"d", other, dir755}, {"r.sock", other, sock}}, "/tmp/d", other, safefile.WhyOwner},
		{"daemon's group-writable directory", safefile.SocketRule, []el{{"run", 0, dir755}, {"reserved", daemon, dir775}, {"r.sock", daemon, sock}}, "/run/reserved", daemon, safefile.WhyWritable},
		{"two other users", safefile.SocketRule, []el{{"run", 0, dir755}, {"reserved", daemon, dir755}, {"r.sock", other, sock}}, "/run/reserved/r.sock", other, safefile.WhySecondOwner},
		{"daemon's link", safefile.SocketRule, []el{{"run", 0, dir755}, {"lnk", daemon, link}}, "/run/lnk", daemon, safefile.WhySymlink},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, steps := chain(tc.els...)
			err := safefile.CheckChain(path, steps, caller, tc.rule)
			if tc.elem == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var oe *safefile.OwnerError
			if !errors.As(err, &oe) || oe.Path != path || oe.Elem != tc.elem || oe.Owner != tc.owner || oe.Why != tc.why || !errors.Is(err, safefile.ErrRefused) {
				t.Fatalf("error %#v, want %s of uid %d refused (why %d)", err, tc.elem, tc.owner, tc.why)
			}
		})
	}
}

// TestForeignDirectoryRefused: a directory that another user made in a
// sticky directory (like /tmp) decides what lies in it, so nothing in it
// is used or created there, even a file of the caller.
func TestForeignDirectoryRefused(t *testing.T) {
	pathstest.NeedRoot(t)
	dir := filepath.Join(pathstest.Dir(t, 0o777|os.ModeSticky), "rsv")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, pathstest.ForeignUID, pathstest.ForeignUID); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("planted"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := path + " lies below " + dir + ", which belongs to uid 65534, not to you or root (use another path)"
	for _, o := range openers {
		if _, err := o.open(path); !errors.Is(err, safefile.ErrRefused) || err.Error() != want {
			t.Errorf("%s: %v, want %q", o.name, err, want)
		}
	}
	if err := safefile.Check(path); err == nil || err.Error() != want {
		t.Errorf("Check: %v, want %q", err, want)
	}
	created := filepath.Join(dir, "new")
	if _, err := safefile.Create(created, 0o600); !errors.Is(err, safefile.ErrRefused) {
		t.Errorf("Create: %v, want a refusal", err)
	}
	if _, err := os.Lstat(created); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Create made a file in another user's directory: %v", err)
	}
}

// TestForeignSymlinkOnPathRefused: a symbolic link of another user in a
// sticky directory, pointing at a directory of root, is not followed: no
// file is created or opened in its target, whatever the kernel's
// protected_symlinks setting.
func TestForeignSymlinkOnPathRefused(t *testing.T) {
	pathstest.NeedRoot(t)
	target := t.TempDir()
	lnk := filepath.Join(pathstest.Dir(t, 0o777|os.ModeSticky), "lnk")
	if err := os.Symlink(target, lnk); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(lnk, pathstest.ForeignUID, pathstest.ForeignUID); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(lnk, "intent.json.lock")
	want := path + " lies behind the symbolic link " + lnk + ", which belongs to uid 65534, not to you or root (use another path)"
	for _, o := range openers {
		if _, err := o.open(path); !errors.Is(err, safefile.ErrRefused) || err.Error() != want {
			t.Errorf("%s: %v, want %q", o.name, err, want)
		}
	}
	if err := safefile.Check(filepath.Join(lnk, "intent.json")); !errors.Is(err, safefile.ErrRefused) {
		t.Errorf("Check: %v, want a refusal", err)
	}
	if entries, err := os.ReadDir(target); err != nil || len(entries) != 0 {
		t.Errorf("the link's target holds %v (%v), want nothing", entries, err)
	}
	// The caller's own link is followed.
	if err := os.Lchown(lnk, os.Getuid(), os.Getgid()); err != nil {
		t.Fatal(err)
	}
	f, err := safefile.OpenOrCreate(path, 0o600)
	if err != nil {
		t.Fatalf("through the caller's own link: %v", err)
	}
	f.Close()
}
