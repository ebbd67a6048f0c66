package engine

import "fmt"

// FindingWaitlist is the kind of finding about waiting lists.
const FindingWaitlist = "waitlist_mismatch"

// entryInfo is what Check keeps of a waiting list entry while it reads the
// rest: how many "waiting" answers made it.
type entryInfo struct {
	WaitEntry
	made int
}

// offerStates is the state of the hold offered to an entry in each state
// that has one (offerEnd is its inverse).
var offerStates = map[WaitState]HoldState{WaitOffered: HoldHeld, WaitReserved: HoldConfirmed, WaitLeft: HoldReleased, WaitExpired: HoldExpired}

// readEntries reads every waiting list entry, reporting one in no known
// state, one waiting with an offer, and one whose offer is not a hold
// that names it back with its owner, quantity, deadline and a state
// that matches the entry's. It counts each workshop's waiting entries.
func readEntries(tx Tx, workshops map[string]Workshop, holds map[string]*holdInfo, add func(kind, format string, args ...any)) (map[string]*entryInfo, map[string]int, error) {
	entries, waiting := map[string]*entryInfo{}, map[string]int{}
	offered := map[string]string{} // hold id → entry id
	err := tx.ForEachWaitEntry(func(e WaitEntry) error {
		entries[e.ID] = &entryInfo{WaitEntry: e}
		want, offer := offerStates[e.State]
		switch {
		case e.State == WaitWaiting:
			waiting[e.Workshop]++
			if _, ok := workshops[e.Workshop]; !ok {
				add(FindingWaitlist, "entry %s waits for workshop %q, which does not exist", e.ID, e.Workshop)
			}
			if e.HoldID != "" {
				add(FindingWaitlist, "entry %s is waiting and offered hold %s at once", e.ID, e.HoldID)
			}
			return nil
		case !offer:
			add(FindingWaitlist, "entry %s has unknown state %q", e.ID, e.State)
			return nil
		case e.HoldID == "" && e.State == WaitLeft: // It left while waiting.
			return nil
		}
		h, ok := holds[e.HoldID]
		switch {
		case !ok:
			add(FindingWaitlist, "entry %s is %s with offer %s, which does not exist", e.ID, e.State, e.HoldID)
		case h.WaitEntry != e.ID || h.Actor != e.Actor || h.Workshop != e.Workshop || h.Quantity != e.Quantity || !h.ExpiresAt.Equal(e.OfferExpiresAt):
			add(FindingWaitlist, "entry %s (%s, %s × %d) is offered hold %s, which is %s's for %s × %d and names entry %q",
				e.ID, e.Actor, e.Workshop, e.Quantity, h.ID, h.Actor, h.Workshop, h.Quantity, h.WaitEntry)
		case h.State != want:
			add(FindingWaitlist, "entry %s is %s, but its offer %s is %s", e.ID, e.State, h.ID, h.State)
		default:
			offered[h.ID] = e.ID
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read waiting list entries: %w", err)
	}
	for id, h := range holds {
		if h.WaitEntry != "" && offered[id] != h.WaitEntry {
			add(FindingWaitlist, "hold %s is the offer of entry %s, which does not name it", id, h.WaitEntry)
		}
	}
	return entries, waiting, nil
}

// checkEntryRef matches an answer that names a waiting list entry with
// the entry and counts it there.
func checkEntryRef(a answerRef, entries map[string]*entryInfo, add func(kind, format string, args ...any)) {
	if a.answer.EntryID == "" {
		if a.kind == OperationReserve && a.answer.Status == StatusWaiting {
			add(FindingWaitlist, "%s %s of %s answers %q without an entry", a.what, a.key, a.actor, a.answer.Status)
		}
		return
	}
	e, ok := entries[a.answer.EntryID]
	switch {
	case !ok:
		add(FindingWaitlist, "%s %s of %s answers %q naming entry %s, which does not exist", a.what, a.key, a.actor, a.answer.Status, a.answer.EntryID)
	case e.Actor != a.actor || e.Workshop != a.answer.Workshop || e.Quantity != a.answer.Quantity:
		add(FindingWaitlist, "%s %s of %s names entry %s of %s (%s × %d), not one of its own for %s × %d",
			a.what, a.key, a.actor, e.ID, e.Actor, e.Workshop, e.Quantity, a.answer.Workshop, a.answer.Quantity)
	case a.kind == OperationReserve:
		if e.OperationKey != a.key {
			add(FindingWaitlist, "%s %s of %s says it made entry %s, which key %s made", a.what, a.key, a.actor, e.ID, e.OperationKey)
			return
		}
		e.made++
	case a.kind == OperationLeaveWaitlist && a.answer.Status == StatusLeft && e.State != WaitLeft:
		add(FindingWaitlist, "%s %s of %s says entry %s left, but it is %s", a.what, a.key, a.actor, e.ID, e.State)
	}
}

// checkWaitlists reports an entry not made by exactly one "waiting"
// answer, a workshop whose count of waiting entries is not theirs, stores
// whose indexes of entries do not list exactly them in order, and a
// workshop whose waiting entries include one that the places free (at
// the time of the check, counting open holds past their deadline as held)
// fit: a freed place that was not offered.
func checkWaitlists(tx Tx, workshops map[string]Workshop, entries map[string]*entryInfo, waiting map[string]int, add func(kind, format string, args ...any)) error {
	actors := map[string]int{}
	for id, e := range entries {
		if e.made != 1 {
			add(FindingWaitlist, "entry %s (%s, key %s) is named by %d waiting answers, not exactly one", id, e.Actor, e.OperationKey, e.made)
		}
		actors[e.Actor]++
	}
	for id, w := range workshops {
		if w.Waiting != waiting[id] {
			add(FindingWaitlist, "workshop %q counts %d people waiting, but %d entries wait", id, w.Waiting, waiting[id])
		}
		last, n := "", 0
		err := tx.ForEachWaitingEntry(id, func(e WaitEntry) error {
			n++
			stored, ok := entries[e.ID]
			switch {
			case !ok || stored.State != WaitWaiting || stored.Workshop != id:
				add(FindingWaitlist, "the waiting list of workshop %q lists entry %s, which is not waiting there", id, e.ID)
			case e.ID <= last:
				add(FindingWaitlist, "the waiting list of workshop %q lists entry %s after %s", id, e.ID, last)
			case e.Quantity <= w.free():
				add(FindingWaitlist, "workshop %q has %d places free, which entry %s waiting for %d was not offered", id, w.free(), e.ID, e.Quantity)
			}
			last = e.ID
			return nil
		})
		if err != nil {
			return fmt.Errorf("read the waiting list of workshop %s: %w", id, err)
		}
		if n != waiting[id] {
			add(FindingWaitlist, "the waiting list of workshop %q lists %d entries, but %d wait", id, n, waiting[id])
		}
	}
	perWorkshop := map[string]int{}
	for _, e := range entries {
		perWorkshop[e.Workshop]++
	}
	for ws, want := range perWorkshop {
		if n, err := countEntries(func(fn func(WaitEntry) error) error { return tx.ForEachWaitEntryIn(ws, "", fn) }, func(a, b string) bool { return a < b }); err != nil {
			return err
		} else if n != want {
			add(FindingWaitlist, "the entries of workshop %q are listed as %d, but there are %d (or not in order)", ws, n, want)
		}
	}
	for actor, want := range actors {
		if n, err := countEntries(func(fn func(WaitEntry) error) error { return tx.ForEachWaitEntryOf(actor, "", fn) }, func(a, b string) bool { return a > b }); err != nil {
			return err
		} else if n != want {
			add(FindingWaitlist, "the entries of %s are listed as %d, but there are %d (or not in order)", actor, n, want)
		}
	}
	return nil
}

// countEntries counts the entries scan visits while each follows the one
// before it in order (before), and -1 once one does not.
func countEntries(scan func(fn func(WaitEntry) error) error, before func(a, b string) bool) (int, error) {
	n, last := 0, ""
	err := scan(func(e WaitEntry) error {
		if last != "" && !before(last, e.ID) {
			n = -1
			return errEnough
		}
		n++
		last = e.ID
		return nil
	})
	if err != nil && err != errEnough {
		return 0, fmt.Errorf("read waiting list entries: %w", err)
	}
	return n, nil
}
