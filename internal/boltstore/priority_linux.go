//go:build linux

package boltstore

import (
	"fmt"
	"syscall"
)

// setThreadNice gives the calling OS thread the nice value nice, and returns
// a function that tries to give it back the value it had. On Linux every
// thread has its own nice value, so this leaves the daemon's other threads
// alone. Lowering it below the current value needs CAP_SYS_NICE (root has
// it) or a matching RLIMIT_NICE; so does the way back from a positive value,
// which the restore then leaves undone.
func setThreadNice(nice int) (restore func(), err error) {
	tid := syscall.Gettid()
	// getpriority(2) returns 20 - nice, so that it is never negative.
	prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	if err != nil {
		return nil, fmt.Errorf("read the committer thread's nice value: %w", err)
	}
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil {
		return nil, fmt.Errorf("set the committer thread's nice value to %d: %w", nice, err)
	}
	return func() { syscall.Setpriority(syscall.PRIO_PROCESS, tid, 20-prio) }, nil
}
