package paths_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/reserve/reserve/internal/paths"
)

func TestSocket(t *testing.T) {
	t.Setenv("RESERVED_SOCKET", "")
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/1000")
	if got := paths.Socket(); got != "/run/user/1000/reserved.sock" {
		t.Errorf("Socket() with XDG_RUNTIME_DIR = %q", got)
	}
	t.Setenv("XDG_RUNTIME_DIR", "")
	if got, want := paths.Socket(), fmt.Sprintf("/tmp/reserved-%d.sock", os.Getuid()); got != want {
		t.Errorf("Socket() without XDG_RUNTIME_DIR = %q, want %q", got, want)
	}
	t.Setenv("RESERVED_SOCKET", "/x/y.sock")
	if got := paths.Socket(); got != "/x/y.sock" {
		t.Errorf("Socket() with RESERVED_SOCKET = %q", got)
	}
}

func TestDB(t *testing.T) {
	t.Setenv("RESERVED_DB", "")
	t.Setenv("XDG_DATA_HOME", "/data")
	if got := paths.DB(); got != "/data/reserved/reserved.db" {
		t.Errorf("DB() with XDG_DATA_HOME = %q", got)
	}
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("HOME", "/home/alice")
	if got := paths.DB(); got != "/home/alice/.local/share/reserved/reserved.db" {
		t.Errorf("DB() without XDG_DATA_HOME = %q", got)
	}
	t.Setenv("RESERVED_DB", "/x/r.db")
	if got := paths.DB(); got != "/x/r.db" {
		t.Errorf("DB() with RESERVED_DB = %q", got)
	}
}
