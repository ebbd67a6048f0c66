package boltstore

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// statFreeSpace returns the bytes an unprivileged process may still write
// to the file system of dir (root may write somewhat more) and the file
// system's size.
func statFreeSpace(dir string) (free, size int64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return int64(st.Bavail) * int64(st.Bsize), int64(st.Blocks) * int64(st.Bsize), nil
}
