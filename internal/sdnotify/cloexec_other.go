//go:build !unix

package sdnotify

func setCloseOnExec(int) {}
