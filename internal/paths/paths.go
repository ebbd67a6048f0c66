// Package paths is the one place that knows where reserved keeps its
// database and its Unix socket by default, so that the daemon and every
// client agree without configuration.
//
// It reads only the environment and the current user; it must not import
// any other package of reserve but safefile, whose ownership rule it
// applies to sockets.
package paths

import (
	"fmt"
	"os"
	"path/filepath"
)

// The environment variables that override the defaults, in the daemon and in
// every client alike.
const (
	EnvDB     = "RESERVED_DB"
	EnvSocket = "RESERVED_SOCKET"
)

// Socket returns the socket path a client should use: $RESERVED_SOCKET if
// set, else DefaultSocket.
func Socket() string {
	if s := os.Getenv(EnvSocket); s != "" {
		return s
	}
	return DefaultSocket()
}

// DefaultSocket returns $XDG_RUNTIME_DIR/reserved.sock, or
// /tmp/reserved-<uid>.sock when XDG_RUNTIME_DIR is unset.
func DefaultSocket() string {
	if dir := os.Getenv("XDG_RUNTIME_DIR"); dir != "" {
		return filepath.Join(dir, "reserved.sock")
	}
	return fmt.Sprintf("/tmp/reserved-%d.sock", os.Getuid())
}

// DB returns the database path: $RESERVED_DB if set, else DefaultDB.
func DB() string {
	if s := os.Getenv(EnvDB); s != "" {
		return s
	}
	return DefaultDB()
}

// DefaultDB returns $XDG_DATA_HOME/reserved/reserved.db, or
// ~/.local/share/reserved/reserved.db when XDG_DATA_HOME is unset. Without a
// home directory it falls back to a file in the working directory.
func DefaultDB() string {
	if dir := os.Getenv("XDG_DATA_HOME"); dir != "" {
		return filepath.Join(dir, "reserved", "reserved.db")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "reserved.db"
	}
	return filepath.Join(home, ".local", "share", "reserved", "reserved.db")
}
