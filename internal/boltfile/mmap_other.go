//go:build !unix

package boltfile

import "io"

// mapPages maps nothing where there is no Unix mmap: Verify reads each page
// with ReadAt.
func mapPages(io.ReaderAt, Meta) ([]byte, func()) { return nil, func() {} }
