package boltstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/reserve/reserve/internal/boltfile"
)

// DamageError reports a database file that is damaged. Open returns it
// before bbolt has read a damaged page or written anything to the file; a
// Store returns it for every transaction from the first one that met damage
// on.
type DamageError struct {
	Path   string
	Detail string // What is damaged, e.g. "leaf page 7 of bucket \"receipts\" …".
	// Rollback is set when the only damage is one meta page, so that the
	// file would open at the older transaction the other one records.
	Rollback *Rollback
}

func (e *DamageError) Error() string {
	return fmt.Sprintf("database %s is damaged: %s; restore it from a backup", e.Path, e.Detail)
}

// Rollback describes opening a file, one of whose two meta pages is
// damaged, at the transaction the intact one records. bbolt writes its meta
// pages in turn, so the damaged one usually held the newest transaction, and
// opening the file loses that transaction and everything it committed.
type Rollback struct {
	Page    int    // The damaged meta page, 0 or 1.
	Problem string // What is wrong with it, e.g. "fails its checksum".
	Txid    uint64 // The transaction the file opens at.
	Lost    string // What is lost, e.g. "transaction 42, the newest".
}

func (r *Rollback) String() string {
	return fmt.Sprintf("meta page %d %s, so the file would open at transaction %d of meta page %d and lose %s, with everything it committed",
		r.Page, r.Problem, r.Txid, 1-r.Page, r.Lost)
}

// RefusedError is Open's refusal of an existing file that is not a reserved
// database: an empty file, a file that is not a bbolt database, or a bbolt
// database without reserved's meta bucket. The file is left as it was.
type RefusedError struct {
	Path   string
	Reason string // Why, e.g. "is an empty file".
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("database %s %s, not a reserved database (left untouched): restore it from a backup, or name a path that does not exist to start a new database", e.Path, e.Reason)
}

// prepared is what prepare learnt of a file that bbolt may open.
type prepared struct {
	created  bool      // prepare created the file.
	rollback *Rollback // The file opens at its older meta page, as Options.AcceptRollback allows.
	release  func()    // Releases prepare's lock on the file; call it once bbolt holds its own.
	// freelist is the freelist a writing Open writes before bbolt opens
	// the file, when it keeps none (openfreelist.go); nil otherwise.
	freelist *openFreelist
	// noFreelist says why a writing Open of a file that keeps no freelist
	// leaves it to bbolt's walk; nil when it does not.
	noFreelist error
}

// prepare makes sure that bbolt opens path as it is or refuses it: bbolt
// itself turns an empty file into a new database, opens a file whose newer
// meta page is damaged at the older one, and panics or faults on damaged
// data pages, also in the walk over every page that it makes at open to
// rebuild its freelist when the file keeps none. prepare creates a file
// only where none exists; it refuses an empty file and one that is not a
// bbolt database, checks both meta pages and refuses a damaged one unless
// opts.AcceptRollback allows opening at the other, checks that the file
// holds every page the meta page counts, and walks every page of the tree
// and the freelist (boltfile.Verify). For a writing Open of a file that
// keeps no freelist it plans one from the pages that walk found free, once
// the file proved to be a reserved database that Open will not refuse.
//
// It reads the file while holding bbolt's shared lock on it, taken by a
// read-only bbolt open that reads nothing but the meta pages, so a running
// writer makes it fail with "in use" instead of being read mid-commit. A
// read-only Open keeps that lock until bbolt has taken its own (release); a
// writing Open must let it go first, since bbolt's exclusive lock would wait
// for it.
func prepare(path string, opts Options) (prepared, error) {
	pre := prepared{release: func() {}}
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) && !opts.ReadOnly {
		if pre.created, err = create(path); err != nil {
			return pre, err
		}
		st, err = os.Stat(path)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return pre, fmt.Errorf("database %s does not exist", path)
	case err != nil:
		return pre, fmt.Errorf("open database %s: %w", path, err)
	case !st.Mode().IsRegular():
		return pre, &RefusedError{Path: path, Reason: "is not a regular file"}
	case st.Size() == 0:
		return pre, &RefusedError{Path: path, Reason: "is an empty file"}
	}

	lock, lockErr := bolt.Open(path, 0, &bolt.Options{ReadOnly: true, Timeout: opts.LockTimeout})
	if errors.Is(lockErr, berrors.ErrTimeout) {
		return pre, errInUse(path)
	}
	if lockErr == nil {
		if opts.ReadOnly {
			pre.release = func() { lock.Close() }
		} else {
			defer lock.Close()
		}
	}
	// Without the lock (bbolt refused the meta pages) the file is read all
	// the same, to say what is wrong with it; bbolt took the lock for that
	// refusal, so no writer was using the file then.
	if err := pre.verify(path, opts.AcceptRollback, !opts.ReadOnly && !pre.created); err != nil {
		pre.release()
		return pre, err
	}
	if lockErr != nil {
		// The file passed, yet bbolt refused it.
		return pre, fmt.Errorf("open database %s: %w", path, lockErr)
	}
	if pre.freelist != nil {
		// Open refuses such a file, which must then stay as it is. A
		// read transaction needs no freelist.
		if err := lock.View(func(tx *bolt.Tx) error { _, err := checkSchema(tx, path); return err }); err != nil {
			pre.freelist, pre.noFreelist = nil, err
		}
	}
	return pre, nil
}

// verify reads the meta pages of path and walks the tree bbolt would open;
// with plan, it plans the freelist of a file that keeps none.
func (pre *prepared) verify(path string, acceptRollback, plan bool) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open database %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("open database %s: %w", path, err)
	}
	metas, err := boltfile.ReadMetas(f, st.Size())
	if errors.Is(err, boltfile.ErrNotBolt) {
		return &RefusedError{Path: path, Reason: "is not a bbolt database file"}
	}
	if err != nil {
		return fmt.Errorf("open database %s: %w", path, err)
	}
	m, ok := boltfile.Newest(metas)
	if !ok {
		return &DamageError{Path: path, Detail: fmt.Sprintf("both meta pages are damaged (page 0 %v; page 1 %v)", metas[0].Err, metas[1].Err)}
	}
	if err := boltfile.CheckSize(st.Size(), m); err != nil {
		// Said first: a file cut short may have lost a meta page too.
		return &DamageError{Path: path, Detail: err.Error()}
	}
	if damaged := metas[1-m.Page]; !damaged.Valid() {
		r := &Rollback{Page: damaged.Page, Problem: damaged.Err.Error(), Txid: m.Txid, Lost: "any newer transaction it recorded"}
		if damaged.Magic && damaged.Txid == m.Txid+1 {
			r.Lost = fmt.Sprintf("transaction %d, the newest", damaged.Txid)
		}
		if !acceptRollback {
			return &DamageError{Path: path, Detail: r.String(), Rollback: r}
		}
		pre.rollback = r
	}
	if !plan || m.Freelist != boltfile.NoFreelist {
		if err := boltfile.Verify(f, st.Size(), m); err != nil {
			return &DamageError{Path: path, Detail: err.Error()}
		}
		return nil
	}
	free, err := boltfile.FreePages(f, st.Size(), m)
	if err != nil {
		return &DamageError{Path: path, Detail: err.Error()}
	}
	p, err := boltfile.PlanFreelist(m, free)
	if err != nil {
		pre.noFreelist = err
		return nil
	}
	pre.freelist = &openFreelist{plan: p, metas: metas, walked: m, file: st}
	return nil
}

// create makes a new, empty reserved database at path, which must not
// exist, and reports whether it did; it reports false, and no error, when
// another process created path first. The database is made in full under a
// temporary name in the same directory and linked to path, which fails if
// path exists: path never names a file that is not yet a database, whatever
// the moment a crash or a second daemon arrives. (A crash between the link
// and the removal of the temporary name leaves that name behind, a second
// name of the new database that nothing reads.)
func create(path string) (bool, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".new-*")
	if err != nil {
		return false, fmt.Errorf("create database %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Close(); err != nil {
		return false, fmt.Errorf("create database %s: %w", path, err)
	}
	// bbolt initialises the empty file; this is the one place where it may.
	db, err := bolt.Open(tmp, 0o600, &bolt.Options{FreelistType: bolt.FreelistMapType, NoFreelistSync: true})
	if err != nil {
		return false, fmt.Errorf("create database %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error { return createSchema(tx, path) })
	if cerr := db.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("create database %s: %w", path, cerr)
	}
	if err != nil {
		return false, err
	}
	if err := os.Link(tmp, path); errors.Is(err, fs.ErrExist) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("create database %s: %w", path, err)
	}
	if err := syncDir(dir); err != nil {
		return false, fmt.Errorf("create database %s: %w", path, err)
	}
	return true, nil
}

// syncDir makes a new name in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// errInUse is Open's answer when another process holds the file.
func errInUse(path string) error {
	return fmt.Errorf("database %s is in use by another reserved", path)
}
