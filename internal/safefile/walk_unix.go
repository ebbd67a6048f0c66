//go:build unix

package safefile

import (
	"io/fs"
	"os"
	"strings"
	"syscall"
)

// maxLinks bounds the symbolic links one walk follows, as the kernel's
// ELOOP does.
const maxLinks = 40

// walk resolves path from the root one element at a time, as the kernel
// does, and applies rule to every directory on the way and every symbolic
// link it follows (for the caller's uid), but not to the last element. A
// symbolic link as the last element is followed only with followLast. A
// missing directory gives an error matching fs.ErrNotExist; a path that
// ends in a directory a *NotRegularError.
func walk(path string, rule Rule, followLast bool) (walked, error) {
	j := newJudge(path, uint32(os.Getuid()), rule)
	full := path
	if !strings.HasPrefix(path, "/") {
		cwd, err := os.Getwd()
		if err != nil {
			return walked{}, err
		}
		full = cwd + "/" + path
	}
	root, err := lstat("/")
	if err != nil {
		return walked{}, err
	}
	if err := j.step(Step{Dir: root, Entry: root}); err != nil {
		return walked{}, err
	}
	stack := []Element{root}
	comps := split(full)
	links := 0
	for len(comps) > 0 {
		c := comps[0]
		comps = comps[1:]
		top := stack[len(stack)-1]
		if c == ".." {
			if len(stack) > 1 {
				stack = stack[:len(stack)-1]
			}
			continue
		}
		p := strings.TrimSuffix(top.Path, "/") + "/" + c
		last := len(comps) == 0
		e, err := lstat(p)
		if err != nil {
			if last && os.IsNotExist(err) {
				// The file will be made by the caller, in top: top must be
				// a directory no one else can replace it in.
				if rule != SocketRule {
					if err := j.step(Step{Dir: top, Entry: Element{Path: p, Owner: j.caller}}); err != nil {
						return walked{}, err
					}
				}
				return walked{judge: j, dir: top, last: Element{Path: p}}, nil
			}
			return walked{}, err
		}
		s := Step{Dir: top, Entry: e}
		if e.Mode&fs.ModeSymlink != 0 && (!last || followLast) {
			if err := j.step(s); err != nil {
				return walked{}, err
			}
			if links++; links > maxLinks {
				return walked{}, &fs.PathError{Op: "open", Path: path, Err: syscall.ELOOP}
			}
			target, err := os.Readlink(p)
			if err != nil {
				return walked{}, err
			}
			if strings.HasPrefix(target, "/") {
				stack = stack[:1]
			}
			comps = append(split(target), comps...)
			continue
		}
		if last {
			return walked{judge: j, dir: top, last: e, exists: true}, nil
		}
		if !e.Mode.IsDir() {
			return walked{}, &fs.PathError{Op: "open", Path: p, Err: syscall.ENOTDIR}
		}
		if err := j.step(s); err != nil {
			return walked{}, err
		}
		stack = append(stack, e)
	}
	// The path ends in the root, "." or "..": a directory.
	return walked{}, &NotRegularError{Path: path, Mode: fs.ModeDir}
}

// split returns the elements of a slash-separated path, without the empty
// and "." ones.
func split(p string) []string {
	var out []string
	for c := range strings.SplitSeq(p, "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}

// lstat returns the Element of path, not following a symbolic link.
func lstat(path string) (Element, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return Element{}, err
	}
	e := Element{Path: path, Mode: fi.Mode()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		e.Owner = st.Uid
	}
	return e, nil
}

// CheckSocket applies SocketRule to the Unix socket at path, following
// symbolic links to it. A missing socket or directory passes: connecting
// then fails on its own.
func CheckSocket(path string) error {
	w, err := walk(path, SocketRule, true)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil || !w.exists {
		return err
	}
	return w.judge.final(w.dir, w.last)
}

// CheckSocketPeer applies SocketRule to the Unix socket at path as if it
// belonged to uid, the process that accepted a connection to it.
func CheckSocketPeer(path string, uid uint32) error {
	w, err := walk(path, SocketRule, true)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return w.judge.final(w.dir, Element{Owner: uid, Mode: fs.ModeSocket})
}
