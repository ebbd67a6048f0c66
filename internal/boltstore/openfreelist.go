package boltstore

import (
	"errors"
	"fmt"
	"os"
	"time"

	berrors "go.etcd.io/bbolt/errors"

	"github.com/reserve/reserve/internal/boltfile"
)

// An Open for writing of a file whose newest meta page names no freelist
// (its last writer was killed, or ended before Close wrote the list) would
// have bbolt walk every page of the tree to find the free ones, after
// prepare's own walk (boltfile.Verify) has just visited every page. Instead
// prepare takes the free pages from its walk (boltfile.FreePages) and plans
// a freelist and a meta page of the next transaction that names it
// (boltfile.PlanFreelist); openFile writes them before bbolt reads the
// file, and bbolt loads that freelist as it does after a clean stop. The
// rules:
//
//   - Only a writing Open of an existing file that passed the walk and is a
//     reserved database of a schema this package opens writes anything; a
//     read-only Open and a file bbolt or initSchema would refuse are left
//     as they are. So is a file whose meta pages or page size are not as
//     the plan expects: bbolt then walks, as it always did.
//   - openFile takes the exclusive lock on the file that bbolt then holds
//     (the same open file, so it never lets go in between), and writes only
//     when the file it opened is the one walked (device and inode) and both
//     meta pages are byte for byte as walked: nothing committed since.
//   - It writes the freelist pages to free pages (or after the last page)
//     and syncs them, then writes the meta page to the slot of the older
//     one and syncs it. A crash before the meta page is durable leaves the
//     meta pages as they were and bbolt walks as before; once it is
//     durable, the file opens at the new transaction, whose tree is the
//     one walked.
//   - A failure before the meta page is written leaves the file to bbolt
//     as it is; a failure writing or syncing the meta page fails the Open.

// openFreelist is the freelist a writing Open writes, and what came of it.
type openFreelist struct {
	plan   *boltfile.FreelistPlan
	metas  [2]boltfile.Meta // Both meta pages as walked.
	walked boltfile.Meta    // The newer one, whose tree was walked.
	file   os.FileInfo      // The file walked.
	// wrote reports whether the meta page was written, and skipped why
	// not, when the file was left to bbolt's walk.
	wrote   bool
	skipped error
}

// afterFreelistPages, when a test sets it, runs between the sync of the
// freelist pages and the write of the meta page.
var afterFreelistPages func(path string)

// openFile is bbolt's Options.OpenFile for a writing Open with a planned
// freelist: it opens the file, takes bbolt's exclusive lock, writes the
// freelist and its meta page when the file is still as walked, and hands
// the file, locked, to bbolt. A lock held elsewhere for timeout is
// berrors.ErrTimeout, as bbolt's own wait would be.
func (o *openFreelist) openFile(timeout time.Duration) func(string, int, os.FileMode) (*os.File, error) {
	return func(name string, flag int, perm os.FileMode) (*os.File, error) {
		f, err := os.OpenFile(name, flag, perm)
		if err != nil {
			return nil, err
		}
		if err := o.write(f, timeout); err != nil {
			f.Close()
			return nil, err
		}
		return f, nil
	}
}

// write writes the planned freelist to f, or records in o.skipped why it
// did not.
func (o *openFreelist) write(f *os.File, timeout time.Duration) error {
	if err := lockExclusive(f, timeout); err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return err
		}
		o.skipped = err
		return nil
	}
	if o.skipped = o.unchanged(f); o.skipped != nil {
		return nil
	}
	p := o.plan
	if _, err := f.WriteAt(p.Pages, p.PagesAt); err != nil {
		o.skipped = fmt.Errorf("write the freelist pages: %w", err)
		return nil
	}
	if err := f.Sync(); err != nil {
		o.skipped = fmt.Errorf("sync the freelist pages: %w", err)
		return nil
	}
	if afterFreelistPages != nil {
		afterFreelistPages(f.Name())
	}
	if _, err := f.WriteAt(p.MetaPage, p.MetaAt); err != nil {
		return fmt.Errorf("write the meta page of its list of free pages: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync the meta page of its list of free pages: %w", err)
	}
	o.wrote = true
	return nil
}

// unchanged returns an error unless f is the file walked and both its meta
// pages are as they were.
func (o *openFreelist) unchanged(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !os.SameFile(st, o.file) {
		return errors.New("the path names another file than the one walked")
	}
	metas, err := boltfile.ReadMetas(f, st.Size())
	if err != nil {
		return err
	}
	if !boltfile.SameMeta(metas[0], o.metas[0]) || !boltfile.SameMeta(metas[1], o.metas[1]) {
		return errors.New("a transaction was committed since the walk")
	}
	return boltfile.CheckSize(st.Size(), o.walked)
}
