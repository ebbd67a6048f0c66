package boltstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
)

// waitEntryID is the id of the i-th entry of a test: ids start with the
// time they joined, so their order is the order of i.
func waitEntryID(i int) string { return fmt.Sprintf("%032x", 0x100+i) }

// waitScans reads the scans of the waiting list entries of s: the queue
// of workshop, every entry of workshop above after, the entries of actor
// below before, newest first, and every entry; each as its ids.
type waitScans struct {
	s   *boltstore.Store
	ctx context.Context
}

func (w waitScans) ids(t *testing.T, scan func(tx engine.Tx, fn func(engine.WaitEntry) error) error) []string {
	t.Helper()
	var ids []string
	err := w.s.View(w.ctx, func(tx engine.Tx) error {
		ids = nil
		return scan(tx, func(e engine.WaitEntry) error {
			if e.Position != 0 {
				return fmt.Errorf("entry %s read back with position %d", e.ID, e.Position)
			}
			ids = append(ids, e.ID)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func (w waitScans) waiting(t *testing.T, workshop string) []string {
	t.Helper()
	return w.ids(t, func(tx engine.Tx, fn func(engine.WaitEntry) error) error { return tx.ForEachWaitingEntry(workshop, fn) })
}

func (w waitScans) in(t *testing.T, workshop, after string) []string {
	t.Helper()
	return w.ids(t, func(tx engine.Tx, fn func(engine.WaitEntry) error) error {
		return tx.ForEachWaitEntryIn(workshop, after, fn)
	})
}

func (w waitScans) of(t *testing.T, actor, before string) []string {
	t.Helper()
	return w.ids(t, func(tx engine.Tx, fn func(engine.WaitEntry) error) error {
		return tx.ForEachWaitEntryOf(actor, before, fn)
	})
}

// wantIDs fails t unless got are the entries numbered want.
func wantIDs(t *testing.T, what string, got []string, want ...int) {
	t.Helper()
	ids := []string{}
	for _, i := range want {
		ids = append(ids, waitEntryID(i))
	}
	if got == nil {
		got = []string{}
	}
	if !slices.Equal(got, ids) {
		t.Errorf("%s = %q, want entries %v (%q)", what, got, want, ids)
	}
}

// TestWaitEntryIndexes: entries of two workshops and two actors, written
// out of order, are read back as they were put (without a position); the
// queue of a workshop lists its waiting entries in id order, and loses an
// entry as soon as it is put in another state (and gets it back when it
// waits again); the scans of a workshop's entries from an id on and of an
// actor's entries below an id, newest first, list every state. A scan
// that its function stops early stops there. Check is clean, read-only
// too; it names an entry missing from an index, a queue key left behind
// (which the scans pass over) and an entry listed under another actor.
func TestWaitEntryIndexes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reserved.db")
	s := mustOpenPath(t, path)
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	entry := func(i int, actor, workshop string, state engine.WaitState) engine.WaitEntry {
		e := engine.WaitEntry{ID: waitEntryID(i), Actor: actor, OperationKey: engine.OperationKey(fmt.Sprintf("f47ac10b-58cc-4372-a567-%012d", i)),
			Workshop: workshop, Quantity: 1 + i%3, State: state, Position: 7, CreatedAt: now.Add(time.Duration(i) * time.Second)}
		if state != engine.WaitWaiting {
			e.SettledAt = e.CreatedAt.Add(time.Minute)
		}
		if state == engine.WaitOffered || state == engine.WaitReserved || state == engine.WaitExpired {
			e.HoldID, e.OfferExpiresAt = fmt.Sprintf("%032x", 0x900+i), e.CreatedAt.Add(time.Hour)
		}
		return e
	}
	put := func(es ...engine.WaitEntry) {
		t.Helper()
		err := s.Update(ctx, func(tx engine.Tx) error {
			for _, e := range es {
				if err := tx.PutWaitEntry(e); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	all := []engine.WaitEntry{
		entry(5, "bob", "kiln", engine.WaitWaiting),
		entry(1, "alice", "kiln", engine.WaitWaiting),
		entry(3, "alice", "kiln", engine.WaitOffered),
		entry(2, "bob", "loom", engine.WaitWaiting),
		entry(4, "alice", "loom", engine.WaitLeft),
		entry(6, "alice", "kiln", engine.WaitWaiting),
		entry(7, "bob", "kiln", engine.WaitExpired),
	}
	put(all...)
	err := s.View(ctx, func(tx engine.Tx) error {
		for _, want := range all {
			want.Position = 0
			got, ok, err := tx.WaitEntry(want.ID)
			if err != nil || !ok || got != want {
				return fmt.Errorf("entry %s read back as %+v, %t, %v; want %+v", want.ID, got, ok, err, want)
			}
		}
		if _, ok, err := tx.WaitEntry(waitEntryID(99)); ok || err != nil {
			return fmt.Errorf("an entry never put: %t, %v", ok, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	w := waitScans{s, ctx}
	wantIDs(t, "queue of kiln", w.waiting(t, "kiln"), 1, 5, 6)
	wantIDs(t, "queue of loom", w.waiting(t, "loom"), 2)
	wantIDs(t, "queue of kil (a prefix)", w.waiting(t, "kil"))
	wantIDs(t, "entries of kiln", w.in(t, "kiln", ""), 1, 3, 5, 6, 7)
	wantIDs(t, "entries of kiln after 3", w.in(t, "kiln", waitEntryID(3)), 5, 6, 7)
	wantIDs(t, "entries of kiln after 4", w.in(t, "kiln", waitEntryID(4)), 5, 6, 7)
	wantIDs(t, "entries of loom", w.in(t, "loom", ""), 2, 4)
	wantIDs(t, "entries of alice", w.of(t, "alice", ""), 6, 4, 3, 1)
	wantIDs(t, "entries of alice before 4", w.of(t, "alice", waitEntryID(4)), 3, 1)
	wantIDs(t, "entries of bob", w.of(t, "bob", ""), 7, 5, 2)
	wantIDs(t, "entries of bo (a prefix)", w.of(t, "bo", ""))
	wantIDs(t, "every entry", w.ids(t, func(tx engine.Tx, fn func(engine.WaitEntry) error) error { return tx.ForEachWaitEntry(fn) }), 1, 2, 3, 4, 5, 6, 7)
	stop := fmt.Errorf("stop")
	var seen []string
	err = s.View(ctx, func(tx engine.Tx) error {
		return tx.ForEachWaitingEntry("kiln", func(e engine.WaitEntry) error { seen = append(seen, e.ID); return stop })
	})
	if err != stop || len(seen) != 1 {
		t.Errorf("a queue scan stopped at its first entry = %q, %v", seen, err)
	}

	// Entry 1 is offered places, entry 5 leaves; entry 3's offer is
	// declined and it waits again (no engine does that, but the store
	// follows the state it is given).
	e1, e5, e3 := all[1], all[0], all[2]
	e1.State, e1.HoldID, e1.OfferExpiresAt = engine.WaitOffered, fmt.Sprintf("%032x", 0x901), now.Add(time.Hour)
	e5.State, e5.SettledAt = engine.WaitLeft, now.Add(time.Hour)
	e3.State, e3.HoldID, e3.OfferExpiresAt = engine.WaitWaiting, "", time.Time{}
	put(e1, e5, e3)
	wantIDs(t, "queue of kiln after the changes", w.waiting(t, "kiln"), 3, 6)
	wantIDs(t, "entries of kiln after the changes", w.in(t, "kiln", ""), 1, 3, 5, 6, 7)
	wantIDs(t, "entries of bob after the changes", w.of(t, "bob", ""), 7, 5, 2)
	for _, bad := range []engine.WaitEntry{{}, {ID: "a\x00b", Workshop: "kiln", Actor: "bob"}, {ID: waitEntryID(8), Workshop: "ki\x00ln", Actor: "bob"}} {
		if err := s.Update(ctx, func(tx engine.Tx) error { return tx.PutWaitEntry(bad) }); err == nil {
			t.Errorf("entry %+v was stored", bad)
		}
	}

	// The engine's check finds that no answer made these entries.
	check := func(s *boltstore.Store, when string, want ...string) {
		t.Helper()
		wantFindings(t, s, when, engine.FindingWaitlist, want...)
	}
	check(s, "with entries")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	check(ro, "read-only with entries")
	wantIDs(t, "read-only queue of kiln", waitScans{ro, ctx}.waiting(t, "kiln"), 3, 6)
	ro.Close()

	rawUpdate(t, path, func(tx *bolt.Tx) error {
		if err := tx.Bucket([]byte("wait_entries_by_workshop")).Delete([]byte("loom\x00" + waitEntryID(4))); err != nil {
			return err
		}
		// Entry 5 left the queue, but its key is back in it.
		if err := tx.Bucket([]byte("wait_entries_waiting")).Put([]byte("kiln\x00"+waitEntryID(5)), nil); err != nil {
			return err
		}
		return tx.Bucket([]byte("wait_entries_by_actor")).Put([]byte("carol\x00"+waitEntryID(6)), nil)
	})
	s = mustOpenPath(t, path)
	w.s = s
	wantIDs(t, "queue of kiln with a key left behind", w.waiting(t, "kiln"), 3, 6)
	wantIDs(t, "entries of carol, listed under her by mistake", w.of(t, "carol", ""))
	check(s, "with damaged indexes",
		"actor_index_mismatch: wait_entries_by_actor lists wait_entries "+waitEntryID(6)+" under carol, but it is alice's",
		"waitlist_index_mismatch: entry "+waitEntryID(4)+" (left, workshop loom) is missing from wait_entries_by_workshop",
		"waitlist_index_mismatch: wait_entries_waiting key \"kiln\\x00"+waitEntryID(5)+"\" names no entry listed there")
}

// TestWaitlistRetention: the receipts of joining and leaving a waiting
// list turned into tombstones keep the entry they name and the position
// it joined at: a late retry of either key is refused as expired (and
// the join's key without "waitlist" is a conflict), and the engine's
// check still finds the one "waiting" answer that made each entry, also
// after the file is opened again.
func TestWaitlistRetention(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reserved.db")
	s := mustOpenPath(t, path)
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	eng := engine.New(s, engine.WithClock(func() time.Time { return now }))
	if _, _, err := eng.PutWorkshop(ctx, "kiln", engine.WorkshopSpec{Capacity: 1, MaxQuantity: 1}, nil); err != nil {
		t.Fatal(err)
	}
	join := engine.Request{Workshop: "kiln", Quantity: 1, Waitlist: true}
	const aliceKey, bobKey, carolKey, leaveKey = "6f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0", "7a8b9c0d-1e2f-4a3b-8c4d-5e6f7a8b9c0d",
		"8b9c0d1e-2f3a-4b4c-9d5e-6f7a8b9c0d1e", "9c0d1e2f-3a4b-4c5d-8e6f-7a8b9c0d1e2f"
	if out, err := eng.Reserve(ctx, "alice", aliceKey, engine.Request{Workshop: "kiln", Quantity: 1}); err != nil || out.Answer.Status != engine.StatusReserved {
		t.Fatalf("alice reserves: %s, %v", out.Answer.JSON(), err)
	}
	bob, err := eng.Reserve(ctx, "bob", bobKey, join)
	if err != nil || bob.Answer.Status != engine.StatusWaiting || bob.Answer.Position != 1 {
		t.Fatalf("bob joins: %s, %v", bob.Answer.JSON(), err)
	}
	carol, err := eng.Reserve(ctx, "carol", carolKey, join)
	if err != nil || carol.Answer.Status != engine.StatusWaiting || carol.Answer.Position != 2 {
		t.Fatalf("carol joins: %s, %v", carol.Answer.JSON(), err)
	}
	if out, err := eng.LeaveWaitlist(ctx, engine.Principal{Actor: "bob"}, leaveKey, bob.Answer.EntryID); err != nil || out.Answer.Status != engine.StatusLeft {
		t.Fatalf("bob leaves: %s, %v", out.Answer.JSON(), err)
	}
	now = now.Add(48 * time.Hour)
	if n, err := eng.ExpireReceipts(ctx, 24*time.Hour, 100); err != nil || n != 4 {
		t.Fatalf("ExpireReceipts = %d, %v; want the 4 receipts", n, err)
	}
	late := func(s *boltstore.Store, when string) {
		t.Helper()
		eng := engine.New(s, engine.WithClock(func() time.Time { return now }))
		if _, err := eng.Reserve(ctx, "bob", bobKey, join); engine.ErrorCode(err) != engine.CodeOperationExpired {
			t.Errorf("%s: bob's join again: %v, want %s", when, err, engine.CodeOperationExpired)
		}
		if _, err := eng.Reserve(ctx, "carol", carolKey, engine.Request{Workshop: "kiln", Quantity: 1}); engine.ErrorCode(err) != engine.CodeOperationConflict {
			t.Errorf("%s: carol's join key without waitlist: %v, want %s", when, err, engine.CodeOperationConflict)
		}
		if _, err := eng.LeaveWaitlist(ctx, engine.Principal{Actor: "bob"}, leaveKey, bob.Answer.EntryID); engine.ErrorCode(err) != engine.CodeOperationExpired {
			t.Errorf("%s: bob's leaving again: %v, want %s", when, err, engine.CodeOperationExpired)
		}
		err := s.View(ctx, func(tx engine.Tx) error {
			for who, want := range map[string]engine.Answer{"bob": bob.Answer, "carol": carol.Answer} {
				key := map[string]engine.OperationKey{"bob": bobKey, "carol": carolKey}[who]
				ts, ok, err := tx.Tombstone(who, key)
				if err != nil || !ok || ts.Answer.EntryID != want.EntryID || ts.Answer.Position != want.Position || ts.Answer.Status != engine.StatusWaiting {
					return fmt.Errorf("tombstone of %s's join = %+v, %t, %v; want entry %s at %d", who, ts, ok, err, want.EntryID, want.Position)
				}
			}
			return nil
		})
		if err != nil {
			t.Errorf("%s: %v", when, err)
		}
		checksClean(t, s, now, when)
	}
	late(s, "after the expiry")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpenPath(t, path)
	defer s.Close()
	late(s, "reopened")
}
