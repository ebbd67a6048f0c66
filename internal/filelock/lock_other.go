//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package filelock

import (
	"errors"
	"fmt"
	"os"
	"runtime"
)

// errWouldBlock means the lock is held elsewhere.
var errWouldBlock = errors.New("lock is held elsewhere")

// lockFile fails: this system has no flock, and going on without the lock
// could let two processes work on what the lock guards at once.
func lockFile(*os.File) error {
	return fmt.Errorf("locking files is not supported on %s", runtime.GOOS)
}
