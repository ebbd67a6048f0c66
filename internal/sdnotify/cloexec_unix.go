//go:build unix

package sdnotify

import "syscall"

// setCloseOnExec keeps an inherited descriptor from leaking into the
// processes the daemon starts.
func setCloseOnExec(fd int) { syscall.CloseOnExec(fd) }
