// Package peercred reads the credentials the kernel recorded for the other
// end of a Unix socket connection.
package peercred

import (
	"errors"
	"net"

	"golang.org/x/sys/unix"
)

// UID returns the uid of the process on the other end of a Unix socket
// connection, as the kernel recorded it at connect time (SO_PEERCRED).
func UID(c net.Conn) (uint32, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0, errors.New("not a Unix socket connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if credErr != nil {
		return 0, credErr
	}
	return cred.Uid, nil
}
