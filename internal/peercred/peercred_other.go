//go:build !linux

package peercred

import (
	"errors"
	"net"
)

// Cred is what the kernel recorded of the peer when it connected.
type Cred struct {
	UID, GID uint32
	Groups   []uint32
}

var errUnsupported = errors.New("peer credentials are not supported on this system")

// UID is only implemented on Linux; elsewhere it fails, and the server
// refuses socket callers as unauthenticated.
func UID(net.Conn) (uint32, error) { return 0, errUnsupported }

// Get is only implemented on Linux; elsewhere it fails.
func Get(net.Conn) (Cred, error) { return Cred{}, errUnsupported }
