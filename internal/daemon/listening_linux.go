//go:build linux

package daemon

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// checkListening fails unless f is a socket on which listen(2) was called
// (SO_ACCEPTCONN), so that a datagram socket or one passed before it
// listens is refused at start instead of failing its first accept.
func checkListening(f *os.File) error {
	raw, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var on int
	var sockErr error
	if err := raw.Control(func(fd uintptr) {
		on, sockErr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_ACCEPTCONN)
	}); err != nil {
		return err
	}
	if errors.Is(sockErr, unix.ENOTSOCK) {
		return errors.New("it is not a socket")
	}
	if sockErr != nil {
		return fmt.Errorf("read its socket options: %w", sockErr)
	}
	if on == 0 {
		return errors.New("it is a socket that does not listen (a datagram socket, or one without listen(2))")
	}
	return nil
}
