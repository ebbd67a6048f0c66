//go:build windows || plan9 || solaris || aix || android

package boltstore

import (
	"errors"
	"os"
	"time"
)

// errNoFlock means that the file cannot be locked here as bbolt locks it.
var errNoFlock = errors.New("bbolt's file lock is not available on this system")

// lockExclusive does not lock where bbolt locks otherwise than with flock:
// the freelist is then not written at open, and bbolt walks the file.
func lockExclusive(*os.File, time.Duration) error { return errNoFlock }
