//go:build unix

package safefile

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// oNoFollow makes an open fail instead of following a symbolic link at the
// last element of the path.
const oNoFollow = syscall.O_NOFOLLOW

// open opens path with flag (O_RDONLY or O_RDWR), refusing a symbolic link
// (O_NOFOLLOW) and, without blocking (O_NONBLOCK: a named pipe without a
// writer would block the open itself), a file that is not regular, and a
// path that FileRule refuses. The returned file is in blocking mode again.
func open(path string, flag int) (*os.File, error) {
	w, err := walk(path, FileRule, false)
	if err != nil {
		return nil, err
	}
	var fd int
	for {
		var err error
		fd, err = syscall.Open(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if err == nil {
			break
		}
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if !errors.Is(err, syscall.ENOENT) {
			// O_NOFOLLOW fails on a symbolic link with ELOOP (EMLINK or
			// EFTYPE on some BSDs), which also has other causes, and
			// O_RDWR fails on a directory: say what the path is.
			if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&(fs.ModeSymlink|fs.ModeDir) != 0 {
				return nil, &NotRegularError{Path: path, Mode: fi.Mode().Type()}
			}
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	if err := check(path, fd, w); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// check refuses the open descriptor fd of path unless it is a regular file
// that FileRule accepts in the directory w found, and then puts it back
// into blocking mode. It looks at the descriptor, not the path, so a file
// swapped in after the open cannot fool it.
func check(path string, fd int, w walked) error {
	var st syscall.Stat_t
	if err := fstat(fd, &st); err != nil {
		return &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	// The width of st.Mode differs between systems.
	if mode := uint32(st.Mode); mode&syscall.S_IFMT != syscall.S_IFREG {
		return &NotRegularError{Path: path, Mode: fileType(mode)}
	}
	file := Element{Owner: st.Uid, Mode: fs.FileMode(st.Mode & 0o777)}
	if err := w.judge.final(w.dir, file); err != nil {
		return err
	}
	if err := syscall.SetNonblock(fd, false); err != nil {
		return &fs.PathError{Op: "fcntl", Path: path, Err: err}
	}
	return nil
}

// fstat is syscall.Fstat, repeated when a signal interrupts it.
func fstat(fd int, st *syscall.Stat_t) error {
	for {
		err := syscall.Fstat(fd, st)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// fileType maps the S_IFMT bits of a stat mode to a fs.FileMode type.
func fileType(mode uint32) fs.FileMode {
	switch mode & syscall.S_IFMT {
	case syscall.S_IFIFO:
		return fs.ModeNamedPipe
	case syscall.S_IFDIR:
		return fs.ModeDir
	case syscall.S_IFSOCK:
		return fs.ModeSocket
	case syscall.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		return fs.ModeDevice
	case syscall.S_IFLNK:
		return fs.ModeSymlink
	}
	return fs.ModeIrregular
}
