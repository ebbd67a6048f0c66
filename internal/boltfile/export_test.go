package boltfile

import (
	"io"
	"os"
)

// WalkConcurrently walks the pages of m as Verify does, on up to workers
// goroutines and through a map when r is a file, but reports the damage the
// concurrent walk met instead of walking again on one goroutine.
func WalkConcurrently(r io.ReaderAt, m Meta, workers int) error {
	data, unmap := mapPages(r, m)
	defer unmap()
	_, err := walk(r, data, m, workers)
	return err
}

// WalkCutShort maps the pages of m in f, calls cut, which shortens the
// file, and then walks the mapped pages on up to workers goroutines. It
// reports false when the file cannot be mapped here.
func WalkCutShort(f *os.File, m Meta, workers int, cut func()) (bool, error) {
	data, unmap := mapPages(f, m)
	defer unmap()
	if data == nil {
		return false, nil
	}
	cut()
	_, err := walk(f, data, m, workers)
	return true, err
}
