//go:build !unix

package daemon

import "errors"

// raiseOpenFileLimit reports that this system has no RLIMIT_NOFILE; the
// connection caps are then used as given.
func raiseOpenFileLimit() (uint64, error) { return 0, errors.ErrUnsupported }
