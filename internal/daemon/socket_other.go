//go:build !unix

package daemon

import (
	"fmt"
	"net"
	"os"
)

// bindSocket listens on a new Unix socket file at path and sets its
// permissions to mode. Systems without a umask have no way to create it
// with them.
func bindSocket(path string, mode os.FileMode) (*net.UnixListener, error) {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, mode); err != nil {
		ln.Close()
		return nil, fmt.Errorf("set permissions of socket %s: %w", path, err)
	}
	return ln, nil
}
