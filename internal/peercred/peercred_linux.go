// Package peercred reads the credentials the kernel recorded for the other
// end of a Unix socket connection.
package peercred

import (
	"errors"
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Cred is what the kernel recorded of the peer when it connected.
type Cred struct {
	UID, GID uint32
	// Groups are the peer's supplementary groups (SO_PEERGROUPS).
	Groups []uint32
}

// UID returns the uid of the process on the other end of a Unix socket
// connection, as the kernel recorded it at connect time (SO_PEERCRED).
func UID(c net.Conn) (uint32, error) {
	cred, err := get(c, false)
	return cred.UID, err
}

// Get returns the uid, gid and supplementary groups of the process on the
// other end of a Unix socket connection, all as the kernel recorded them
// at connect time (SO_PEERCRED, SO_PEERGROUPS), so that neither a later
// change of the peer nor a reused pid can alter them.
func Get(c net.Conn) (Cred, error) { return get(c, true) }

func get(c net.Conn, groups bool) (Cred, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return Cred{}, errors.New("not a Unix socket connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return Cred{}, err
	}
	var cred Cred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		var uc *unix.Ucred
		if uc, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); credErr != nil {
			return
		}
		cred.UID, cred.GID = uc.Uid, uc.Gid
		if groups {
			cred.Groups, credErr = peerGroups(int(fd))
		}
	}); err != nil {
		return Cred{}, err
	}
	return cred, credErr
}

// peerGroups reads SO_PEERGROUPS, growing the buffer to the size the
// kernel asks for.
func peerGroups(fd int) ([]uint32, error) {
	buf := make([]uint32, 64)
	for {
		size := uint32(len(buf) * 4)
		_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_PEERGROUPS,
			uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&size)), 0)
		switch {
		case errno == 0:
			return buf[:size/4], nil
		case errno == syscall.ERANGE && int(size/4) > len(buf):
			buf = make([]uint32, size/4)
		default:
			return nil, errno
		}
	}
}
