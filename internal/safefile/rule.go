package safefile

import (
	"fmt"
	"io/fs"
)

// Element is one element of a resolved path as the ownership rule sees it:
// a directory, a symbolic link, or the file or socket at its end.
type Element struct {
	// Path is the element's resolved path.
	Path string
	// Owner is the uid that owns it.
	Owner uint32
	// Mode is its type, permission bits and fs.ModeSticky.
	Mode fs.FileMode
}

// Step is one element of a path and the directory it was found in. The
// root directory is found in itself.
type Step struct {
	Dir, Entry Element
}

// Rule is one of the two ownership rules.
type Rule int

const (
	// FileRule is the rule of the files a program keeps for itself (state,
	// lock and temporary files): every directory on the path, every
	// symbolic link followed on it and the file itself belong to the caller
	// or root, and no directory is writable by its group or others unless
	// it is sticky. Then nobody but the caller and root can replace any
	// element of the path: a directory's owner can replace everything
	// below it, and in a sticky directory (like /tmp) only an entry's owner
	// can rename or remove it.
	FileRule Rule = iota
	// SocketRule is the rule of a daemon's Unix socket, which may belong to
	// the daemon's own user rather than the caller (a shared daemon's
	// /run/reserved, mode 0755, owned by the daemon's user). It differs
	// from FileRule in one point: a directory or the socket may belong to
	// one other user, provided the directory holding it is writable by
	// nobody but its owner. That user is then the daemon whose socket it
	// is; a second other user on the path is refused. In a sticky directory
	// anyone can write to, the next element must still belong to the
	// caller or root, and a symbolic link must always.
	SocketRule
)

// Why says which part of the rule an element broke.
type Why int

const (
	// WhyOwner: the element belongs to a user other than the caller and
	// root.
	WhyOwner Why = iota
	// WhyWritable: the element is a directory its group or others can
	// write to and is not sticky.
	WhyWritable
	// WhySymlink: the element is a symbolic link of another user.
	WhySymlink
	// WhySecondOwner: under SocketRule, the element belongs to another
	// user while a different one already controls the path above it.
	WhySecondOwner
)

// noUID marks that no other user controls the path yet.
const noUID = ^uint32(0)

// judge applies a rule to the steps of one path in order.
type judge struct {
	path   string
	caller uint32
	rule   Rule
	// other is the one user other than the caller and root that SocketRule
	// lets control the path so far, or noUID.
	other uint32
}

func newJudge(path string, caller uint32, rule Rule) *judge {
	return &judge{path: path, caller: caller, rule: rule, other: noUID}
}

// writable says whether a directory's group or others can write to it.
func writable(m fs.FileMode) bool { return m.Perm()&0o022 != 0 }

// step judges entry, found in dir, and returns an *OwnerError if the rule
// refuses it.
func (j *judge) step(s Step) error {
	dir, e := s.Dir, s.Entry
	if writable(dir.Mode) && dir.Mode&fs.ModeSticky == 0 {
		return j.refuse(dir, WhyWritable)
	}
	if e.Owner == j.caller || e.Owner == 0 {
		return nil
	}
	switch {
	case e.Mode&fs.ModeSymlink != 0:
		return j.refuse(e, WhySymlink)
	case j.rule != SocketRule, writable(dir.Mode):
		return j.refuse(e, WhyOwner)
	case j.other != noUID && j.other != e.Owner:
		return j.refuse(e, WhySecondOwner)
	}
	j.other = e.Owner
	return nil
}

// final judges the element at the end of the path, found in dir, under
// the path's own name, so that a refusal names it as the file itself.
func (j *judge) final(dir, e Element) error {
	e.Path = j.path
	return j.step(Step{Dir: dir, Entry: e})
}

func (j *judge) refuse(e Element, why Why) error {
	err := &OwnerError{Path: j.path, Elem: e.Path, Owner: e.Owner, Why: why}
	if why == WhySecondOwner {
		err.Other = j.other
	}
	return err
}

// CheckChain applies rule for caller to the steps of a path, from the root
// directory (found in itself) to the element at its end, and returns the
// *OwnerError of the first step it refuses, naming path as the refused
// file. It is the whole rule; the functions of this package that open and
// check files walk the path and apply it step by step.
func CheckChain(path string, steps []Step, caller uint32, rule Rule) error {
	j := newJudge(path, caller, rule)
	for _, s := range steps {
		if err := j.step(s); err != nil {
			return err
		}
	}
	return nil
}

// OwnerError refuses a file or socket whose path the ownership rule does not
// trust: an element of it belongs to another user, or a directory on it is
// writable by others and not sticky, so another user may have planted or
// may replace what the caller would use.
type OwnerError struct {
	// Path is the refused file.
	Path string
	// Elem is the path element the rule refused: Path itself, a directory
	// or a symbolic link on the way to it.
	Elem string
	// Owner is the uid that owns Elem.
	Owner uint32
	// Why says what is wrong with Elem.
	Why Why
	// Other is, for WhySecondOwner, the uid that controls the path above
	// Elem.
	Other uint32
}

// Self says whether the refused element is the file itself.
func (e *OwnerError) Self() bool { return e.Elem == "" || e.Elem == e.Path }

// Below says, when the refused element is not the file itself, what is
// wrong with the file's path, as a predicate of the file ("lies below …").
func (e *OwnerError) Below() string {
	switch e.Why {
	case WhyWritable:
		return fmt.Sprintf("lies below %s, which anyone can write to (owner uid %d) and is not sticky", e.Elem, e.Owner)
	case WhySymlink:
		return fmt.Sprintf("lies behind the symbolic link %s, which belongs to uid %d, not to you or root", e.Elem, e.Owner)
	case WhySecondOwner:
		return fmt.Sprintf("lies below %s, which belongs to uid %d, while uid %d controls the path above it", e.Elem, e.Owner, e.Other)
	}
	return fmt.Sprintf("lies below %s, which belongs to uid %d, not to you or root", e.Elem, e.Owner)
}

// Error names the file, the refused element and its owner.
func (e *OwnerError) Error() string {
	if e.Self() {
		return fmt.Sprintf("%s belongs to uid %d, not to you or root (ask uid %d or root to remove it, or use another path)",
			e.Path, e.Owner, e.Owner)
	}
	return fmt.Sprintf("%s %s (use another path)", e.Path, e.Below())
}

// Unwrap returns ErrRefused.
func (e *OwnerError) Unwrap() error { return ErrRefused }

// walked is the end of a walk: the directory holding the path's last
// element and that element, if it exists. Every element before it passed
// judge, which judges the last element too when the caller asks.
type walked struct {
	judge  *judge
	dir    Element
	last   Element
	exists bool
}
