//go:build unix

package boltfile

import (
	"io"
	"math"
	"os"
	"syscall"
)

// mapPages maps the pages that m counts of r, if r is a file that holds
// them all, read-only; it returns nil, and Verify reads each page with
// ReadAt, when r is not a file or the map cannot be made. The function it
// returns unmaps them.
func mapPages(r io.ReaderAt, m Meta) ([]byte, func()) {
	none := func() {}
	f, ok := r.(*os.File)
	n := m.Pgid * uint64(m.PageSize)
	if !ok || n == 0 || n > math.MaxInt {
		return nil, none
	}
	// A file shorter than its pages is read page by page, to name the
	// first one missing; a mapped page past the end would fault.
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() || uint64(st.Size()) < n {
		return nil, none
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, none
	}
	var data []byte
	var mapErr error
	if err := rc.Control(func(fd uintptr) {
		data, mapErr = syscall.Mmap(int(fd), 0, int(n), syscall.PROT_READ, syscall.MAP_SHARED)
	}); err != nil || mapErr != nil {
		return nil, none
	}
	return data, func() { syscall.Munmap(data) }
}
