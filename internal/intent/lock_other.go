//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package intent

import (
	"errors"
	"fmt"
	"os"
	"runtime"
)

// errWouldBlock means the lock is held elsewhere.
var errWouldBlock = errors.New("lock is held elsewhere")

// lockFile fails: this system has no flock, and sending without the lock
// could let two processes send from one state file.
func lockFile(*os.File) error {
	return fmt.Errorf("locking state files is not supported on %s", runtime.GOOS)
}
