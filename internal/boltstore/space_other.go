//go:build !linux

package boltstore

import (
	"errors"
	"fmt"
	"runtime"
)

// statFreeSpace does not know the free space on this system.
func statFreeSpace(string) (free, size int64, err error) {
	return 0, 0, fmt.Errorf("free space on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
