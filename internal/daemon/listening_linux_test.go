//go:build linux

package daemon

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// TestListenerOfRefusesWhatDoesNotListen: an inherited descriptor that is
// not a socket, or a socket that does not listen, is refused.
func TestListenerOfRefusesWhatDoesNotListen(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := listenerOf(f); err == nil || err.Error() != "it is not a socket" {
		t.Errorf("listenerOf a file = %v", err)
	}
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: filepath.Join(t.TempDir(), "g"), Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	g, err := conn.File()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := listenerOf(g); err == nil {
		t.Error("listenerOf a datagram socket succeeded")
	}
}
