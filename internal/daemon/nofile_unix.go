//go:build unix

package daemon

import (
	"fmt"
	"syscall"
)

// raiseOpenFileLimit raises the soft limit on open files (RLIMIT_NOFILE) to
// the hard limit and returns the soft limit in effect. The Go runtime raises
// it too, to one below the hard limit; the connection caps are fitted into
// the value returned here, whatever the runtime did.
func raiseOpenFileLimit() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("read the open file limit (RLIMIT_NOFILE): %w", err)
	}
	if lim.Cur < lim.Max {
		raised := lim
		raised.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err != nil {
			return uint64(lim.Cur), fmt.Errorf("raise the open file limit (RLIMIT_NOFILE) from %d to %d: %w", lim.Cur, lim.Max, err)
		}
		lim = raised
	}
	return uint64(lim.Cur), nil
}
