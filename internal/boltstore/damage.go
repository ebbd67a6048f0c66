package boltstore

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/reserve/reserve/internal/boltfile"
)

// Open walks every page before bbolt reads one, but a page can still be
// damaged later, under a running daemon: the disk fails, or the file is
// overwritten or cut short. bbolt then panics on the page, or faults on its
// memory map. Every transaction therefore runs guarded: a fault becomes a
// panic, and a panic that bbolt raised, or a fault, marks the store
// damaged. From then on every transaction fails with the same *DamageError
// at once, so nothing more is read from the file or written to it, and
// Damaged tells the owner to stop. A panic of the transaction's own code
// is not damage: it goes on as it would have.

// Damaged is closed when a transaction has met a damaged page; Damage then
// says what is damaged.
func (s *Store) Damaged() <-chan struct{} { return s.damaged }

// Damage returns the *DamageError that a transaction met, or nil.
func (s *Store) Damage() error {
	select {
	case <-s.damaged:
		return s.damage
	default:
		return nil
	}
}

// Rollback returns the damaged meta page that Open accepted with
// Options.AcceptRollback, or nil if both were intact.
func (s *Store) Rollback() *Rollback { return s.rollback }

// guarded runs fn, which runs a bbolt transaction, with memory faults
// turned into panics, and returns the store's damage if bbolt panicked or
// faulted.
func (s *Store) guarded(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			if !isDamage(p) {
				panic(p)
			}
			err = s.markDamaged(p)
		}
	}()
	return fn()
}

// markDamaged records the first damage met, p being the panic it caused,
// and returns the store's damage.
func (s *Store) markDamaged(p any) error {
	s.damageOnce.Do(func() {
		detail := fmt.Sprintf("bbolt failed reading it: %v", p)
		if f, ok := p.(interface{ Addr() uintptr }); ok {
			detail = fmt.Sprintf("reading it faulted at address %#x, as it does when the file is cut short", f.Addr())
		}
		s.damage = &DamageError{Path: s.path, Detail: detail}
		close(s.damaged)
	})
	return s.damage
}

// isDamage reports whether p, a panic being recovered, is a memory fault
// (which debug.SetPanicOnFault turns into a runtime.Error with an Addr
// method) or was raised in bbolt's code. It must be called by the deferred
// function that recovered p, while the panicking frames are still on the
// stack.
func isDamage(p any) bool {
	if _, ok := p.(interface{ Addr() uintptr }); ok {
		return true
	}
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(1, pcs)])
	panicking := false
	for {
		f, more := frames.Next()
		switch {
		case f.Function == "runtime.gopanic":
			panicking = true
		case panicking && !strings.HasPrefix(f.Function, "runtime."):
			// The function that panicked, or whose fault the runtime
			// turned into a panic.
			return strings.HasPrefix(f.Function, "go.etcd.io/bbolt.") || strings.HasPrefix(f.Function, "go.etcd.io/bbolt/")
		}
		if !more {
			return false
		}
	}
}

// verifyPages walks the pages of one read transaction's snapshot with
// boltfile.Verify, reading the file itself: a writer never reuses the pages
// of a snapshot while a read transaction holds it. A read-only store skips
// it, since Open walked the same pages under a lock that keeps writers out.
func (s *Store) verifyPages(ctx context.Context) error {
	if s.readOnly {
		return nil
	}
	leave, err := s.enter(ctx)
	if err != nil {
		return err
	}
	defer leave()
	return s.guarded(func() error {
		return s.db.View(func(btx *bolt.Tx) error {
			f, err := os.Open(s.path)
			if err != nil {
				return fmt.Errorf("check %s: %w", s.path, err)
			}
			defer f.Close()
			st, err := f.Stat()
			if err != nil {
				return fmt.Errorf("check %s: %w", s.path, err)
			}
			pageSize := s.db.Info().PageSize
			m := boltfile.Meta{
				PageSize: pageSize,
				Root:     uint64(btx.Cursor().Bucket().Root()),
				// bbolt does not tell which page holds the snapshot's
				// freelist, so the walk covers the tree alone; Open
				// checked the freelist the file had then.
				Freelist: boltfile.NoFreelist,
				Pgid:     uint64(btx.Size()) / uint64(pageSize),
				Txid:     uint64(btx.ID()),
			}
			if err := boltfile.Verify(f, st.Size(), m); err != nil {
				return &DamageError{Path: s.path, Detail: err.Error()}
			}
			return nil
		})
	})
}
