//go:build !linux

package peercred

import (
	"errors"
	"net"
)

// UID is only implemented on Linux; elsewhere it fails, and the server
// refuses socket callers as unauthenticated.
func UID(net.Conn) (uint32, error) {
	return 0, errors.New("peer credentials are not supported on this system")
}
