//go:build !linux

package boltstore

import (
	"errors"
	"fmt"
	"runtime"
)

// statFreeSpace does not know the free space on this system.
func statFreeSpace(string) (int64, error) {
	return 0, fmt.Errorf("free space on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
