//go:build unix

package server

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// stopReading shuts the reading side of c, a connection about to be
// closed unread, and reports whether the client had sent bytes on it
// before, without reading them or waiting: then its request is on its way
// and its HTTP client expects an answer, so one written now is read as the
// answer to that request. An answer written before the client sent
// anything could be taken for an answer to nothing (Go's client then
// fails the request with a meaningless error). On a Unix socket a write
// of the client either arrived before the shutdown or fails after it, so
// that client either gets the answer or learns that it sent nothing.
func stopReading(c net.Conn) (arrived bool) {
	nc := netConn(c)
	if cr, ok := nc.(interface{ CloseRead() error }); ok {
		cr.CloseRead()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	raw.Control(func(fd uintptr) {
		var b [1]byte
		n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		arrived = err == nil && n > 0
	})
	return arrived
}
