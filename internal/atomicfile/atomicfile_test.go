package atomicfile_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/atomicfile"
)

// dirNames lists the names in dir, sorted.
func dirNames(tb testing.TB, dir string) []string {
	tb.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// touch writes a small file at dir/name, last modified age ago.
func touch(tb testing.TB, dir, name string, age time.Duration) {
	tb.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		tb.Fatal(err)
	}
	at := time.Now().Add(-age)
	if err := os.Chtimes(path, at, at); err != nil {
		tb.Fatal(err)
	}
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	if err := atomicfile.WriteFile(path, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.WriteFile(path, []byte("two")); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(path); err != nil || string(data) != "two" {
		t.Errorf("content %q, %v", data, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	if got := dirNames(t, dir); !slices.Equal(got, []string{"f.json"}) {
		t.Errorf("directory holds %q", got)
	}
}

func TestWriteFailureLeavesTheOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "backup.db")
	if err := atomicfile.WriteFile(path, []byte("old")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := atomicfile.Write(path, func(w io.Writer) error {
		io.WriteString(w, "half of the new")
		return boom
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Write = %v, want the writer's error with the path", err)
	}
	if data, err := os.ReadFile(path); err != nil || string(data) != "old" {
		t.Errorf("after a failed write: %q, %v", data, err)
	}
	if got := dirNames(t, dir); !slices.Equal(got, []string{"backup.db"}) {
		t.Errorf("a failed write left %q", got)
	}
}

// TestWriteReplacesASymlinkNotItsTarget: the rename replaces a symbolic
// link at the path itself; the file it points to is never written.
func TestWriteReplacesASymlinkNotItsTarget(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("target"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "link")
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.WriteFile(path, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(target); string(data) != "target" {
		t.Errorf("the link's target was written: %q", data)
	}
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("path is %v, %v; want a regular file", fi, err)
	}
}

func TestRemove(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := atomicfile.Remove(path); err != nil {
		t.Errorf("Remove of a missing file = %v", err)
	}
	if err := atomicfile.WriteFile(path, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("still there: %v", err)
	}
}

func TestRemoveTemps(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"intent.json.tmp-123", "intent.json.tmp-", "intent.json.tmp-0123456789abcdef", "other.json.tmp-1", "notes.txt"} {
		touch(t, dir, name, 0)
	}
	if err := atomicfile.RemoveTemps(filepath.Join(dir, "intent.json")); err != nil {
		t.Fatal(err)
	}
	want := []string{"notes.txt", "other.json.tmp-1"}
	if got := dirNames(t, dir); !slices.Equal(got, want) {
		t.Errorf("after RemoveTemps the directory holds %q, want %q", got, want)
	}
}

// TestRemoveStaleTemps removes only old temporary files of accepted targets
// in the pattern Write uses, never another file.
func TestRemoveStaleTemps(t *testing.T) {
	dir := t.TempDir()
	const old, young = time.Hour, 0
	stale := []string{"a.json.tmp-0123456789abcdef", "b.json.tmp-4242"}
	kept := []string{
		"c.json.tmp-fedcba9876543210", // Young: maybe another writer's.
		"c.json",                      // Not a temporary file.
		"notes.txt.tmp-1",             // A target the filter refuses.
		"d.json.tmp-",                 // Not the pattern of Write.
		"e.json.tmp-xyz",
		"f.json.tmp-0123456789abcdef01234", // Too long a suffix.
	}
	for _, name := range stale {
		touch(t, dir, name, old)
	}
	touch(t, dir, kept[0], young)
	for _, name := range kept[1:] {
		touch(t, dir, name, old)
	}
	// Not a regular file: a directory and a symbolic link.
	if err := os.Mkdir(filepath.Join(dir, "g.json.tmp-1"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("c.json", filepath.Join(dir, "h.json.tmp-1")); err != nil {
		t.Fatal(err)
	}
	kept = append(kept, "g.json.tmp-1", "h.json.tmp-1")

	n, err := atomicfile.RemoveStaleTemps(dir, 10*time.Minute, func(name string) bool { return strings.HasSuffix(name, ".json") })
	if err != nil || n != len(stale) {
		t.Fatalf("RemoveStaleTemps = %d, %v; want %d", n, err, len(stale))
	}
	slices.Sort(kept)
	if got := dirNames(t, dir); !slices.Equal(got, kept) {
		t.Errorf("after RemoveStaleTemps the directory holds %q, want %q", got, kept)
	}
}
