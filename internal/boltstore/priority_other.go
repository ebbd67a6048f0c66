//go:build !linux

package boltstore

import (
	"errors"
	"fmt"
)

// setThreadNice is only implemented on Linux, where threads have their own
// nice values; elsewhere it fails with errors.ErrUnsupported.
func setThreadNice(nice int) (restore func(), err error) {
	return nil, fmt.Errorf("set the committer thread's nice value to %d: %w (threads have their own nice values on Linux only)", nice, errors.ErrUnsupported)
}
