//go:build !linux

package boltstore

import "fmt"

// setThreadNice is only implemented on Linux, where threads have their own
// nice values.
func setThreadNice(nice int) (restore func(), err error) {
	return nil, fmt.Errorf("set the committer thread's nice value to %d: only supported on Linux", nice)
}
