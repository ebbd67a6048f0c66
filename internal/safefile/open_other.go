//go:build !unix

package safefile

import (
	"io/fs"
	"os"
)

// oNoFollow is zero: this system has no O_NOFOLLOW, and open checks for a
// symbolic link before opening instead.
const oNoFollow = 0

// open opens path with flag, refusing a symbolic link and a file that is not
// regular. This system knows no file owners the way Unix does, so Trusted is
// not applied.
func open(path string, flag int) (*os.File, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, &NotRegularError{Path: path, Mode: fs.ModeSymlink}
	}
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &NotRegularError{Path: path, Mode: fi.Mode().Type()}
	}
	return f, nil
}
