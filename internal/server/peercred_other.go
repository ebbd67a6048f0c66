//go:build !linux

package server

import (
	"errors"
	"net"
)

// peerUID is only implemented on Linux; elsewhere socket callers are
// refused as unauthenticated.
func peerUID(net.Conn) (uint32, error) {
	return 0, errors.New("peer credentials are not supported on this system")
}
