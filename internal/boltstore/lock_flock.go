//go:build !windows && !plan9 && !solaris && !aix && !android

package boltstore

import (
	"errors"
	"os"
	"syscall"
	"time"

	berrors "go.etcd.io/bbolt/errors"
)

// lockRetry is how often lockExclusive tries again, as bbolt does.
const lockRetry = 50 * time.Millisecond

// lockExclusive takes the exclusive flock on f that bbolt takes on the
// systems where it uses flock (these), waiting up to timeout for another
// holder to let go, and returns berrors.ErrTimeout when it does not. bbolt
// taking the lock again on the same open file then succeeds at once.
func lockExclusive(f *os.File, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		if time.Now().After(deadline) {
			return berrors.ErrTimeout
		}
		time.Sleep(lockRetry)
	}
}
