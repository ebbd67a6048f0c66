//go:build linux

package boltstore

import (
	"fmt"
	"syscall"
)

// setThreadNice gives the calling OS thread the nice value nice, and returns
// a function that gives it back the value it had. On Linux every thread has
// its own nice value, so this leaves the daemon's other threads alone.
// Lowering it below the current value needs root or CAP_SYS_NICE (or a
// matching RLIMIT_NICE); raising it back never does.
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
