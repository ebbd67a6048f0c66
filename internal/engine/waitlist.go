package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// The bounds and the default of a workshop's offer_ttl_seconds: how long
// a person whose turn on the waiting list came has to take the places
// offered.
const (
	MinOfferTTLSeconds     = 60
	MaxOfferTTLSeconds     = 30 * 86400
	DefaultOfferTTLSeconds = 86400
)

// WaitState is where an entry on a waiting list stands.
type WaitState string

// The states of a waiting list's entry: waiting for its turn; offered
// places (a hold, whose deadline is the offer's); reserved (the offer was
// confirmed); left (its owner left the list or declined the offer); and
// expired (the offer's deadline passed).
const (
	WaitWaiting  WaitState = "waiting"
	WaitOffered  WaitState = "offered"
	WaitReserved WaitState = "reserved"
	WaitLeft     WaitState = "left"
	WaitExpired  WaitState = "expired"
)

// WaitStatuses are the values of ListFilter.Status for waiting list
// entries: a state, or all.
var WaitStatuses = []string{string(WaitWaiting), string(WaitOffered), string(WaitReserved), string(WaitLeft), string(WaitExpired), ListAll}

// WaitEntry is one place in the queue of a workshop's waiting list: the
// single effect of one intent to wait ("waitlist": true on a reservation
// request that found too few places, or found people waiting already).
// Entries are served in the order of their ids, which start with the time
// they joined. Serving an entry offers it the places it asked for as a
// hold (HoldID, whose deadline is OfferExpiresAt); SettledAt is when it
// left the queue for good (reserved, left or expired). Position is what a
// view shows: the entry's place among the waiting entries of its
// workshop, from 1; stores do not keep it.
type WaitEntry struct {
	ID             string       `json:"entry_id"`
	Actor          string       `json:"actor"`
	OperationKey   OperationKey `json:"operation"`
	Workshop       string       `json:"workshop"`
	Quantity       int          `json:"quantity"`
	State          WaitState    `json:"state"`
	Position       int          `json:"position,omitempty"`
	HoldID         string       `json:"hold_id,omitempty"`
	OfferExpiresAt time.Time    `json:"expires_at,omitzero"`
	CreatedAt      time.Time    `json:"created_at"`
	SettledAt      time.Time    `json:"settled_at,omitzero"`
}

// StateAt returns the entry's state at now: an offer whose deadline has
// come is expired, whatever has been stored.
func (e WaitEntry) StateAt(now time.Time) WaitState {
	if e.State == WaitOffered && !now.Before(e.OfferExpiresAt) {
		return WaitExpired
	}
	return e.State
}

// IsWaitEntryID reports whether id has the form of an entry id (the form
// of a reservation id).
func IsWaitEntryID(id string) bool { return IsReservationID(id) }

// offerTTL returns the time to live of w's offers.
func (w Workshop) offerTTL() time.Duration {
	s := w.OfferTTLSeconds
	if s == 0 {
		s = DefaultOfferTTLSeconds
	}
	return time.Duration(s) * time.Second
}

// checkOfferTTL refuses an offer_ttl_seconds out of its bounds; 0 is the
// default.
func checkOfferTTL(s int) error {
	if s != 0 && (s < MinOfferTTLSeconds || s > MaxOfferTTLSeconds) {
		return Errorf(CodeRequestContract, "member \"offer_ttl_seconds\" must be an integer from %d to %d", MinOfferTTLSeconds, MaxOfferTTLSeconds)
	}
	return nil
}

// serve gives the places of workshop w that are free at the decision's
// time to its waiting entries, in the order they joined, as offers, and
// reports whether it changed w, which its caller then writes. It does
// nothing while nobody waits. Otherwise it first cleans up w's open holds
// whose deadline has passed (their places are free, and an offer among
// them passes on), then walks the waiting entries: each whose quantity
// fits the places still free is offered them, and one that does not fit
// keeps its place for a later turn while the next ones are served. So it
// is called wherever places are freed (a cancellation, a release, an
// expiry, a capacity raised, an entry joining) inside the transaction
// that frees them: a freed place becomes one offer, in the same commit,
// and never a second one, since the offer holds it.
func (d *draft) serve(tx Tx, w *Workshop) (changed bool, err error) {
	if w.Waiting == 0 {
		return false, nil
	}
	var due []Hold
	err = tx.ForEachOpenHold(w.ID, d.now, func(h Hold) error {
		due = append(due, h)
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("read the expired holds of workshop %s: %w", w.ID, err)
	}
	for _, h := range due {
		w.Holding -= h.Quantity
		if err := putExpired(tx, h, d.now, d.mint()); err != nil {
			return false, err
		}
	}
	d.expiredHolds += len(due)
	changed = len(due) > 0
	free := w.free()
	if free <= 0 {
		return changed, nil
	}
	var served []WaitEntry
	err = tx.ForEachWaitingEntry(w.ID, func(e WaitEntry) error {
		if e.Quantity <= free {
			served = append(served, e)
			free -= e.Quantity
		}
		if free == 0 {
			return errEnough
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return false, fmt.Errorf("read the waiting list of workshop %s: %w", w.ID, err)
	}
	for _, e := range served {
		if err := d.offer(tx, w, e); err != nil {
			return false, err
		}
	}
	return changed || len(served) > 0, nil
}

// serveFirst is the first step of a request for places of w while people
// wait for them: the waiting list is served (the places of holds whose
// deadline passed go to it), whatever the request then comes to, even a
// refusal by the registration window or the limit per person. w is
// returned as it then stands, and written when it changed.
func (d *draft) serveFirst(tx Tx, w Workshop) (Workshop, error) {
	changed, err := d.serve(tx, &w)
	if err != nil || !changed {
		return w, err
	}
	if err := tx.PutWorkshop(w); err != nil {
		return Workshop{}, fmt.Errorf("update workshop %s: %w", w.ID, err)
	}
	return w, nil
}

// queue is how a request for need places of w, once its waiting list is
// served (serveFirst), learns whether it gets them now: while people still
// wait for w's places, they go first (queued is true); otherwise makeRoom
// finds the places, and queued reports that they are too few. w is
// returned as it then stands, and written when it changed.
func (d *draft) queue(tx Tx, w Workshop, need int) (_ Workshop, queued bool, err error) {
	if w.Waiting > 0 {
		return w, true, nil
	}
	if w, err = d.makeRoom(tx, w, need); err != nil {
		return Workshop{}, false, err
	}
	return w, w.free() < need, nil
}

// offer offers waiting entry e the places it asked for in w: a hold of
// them for its owner, under the key it joined with, whose deadline is the
// workshop's offer time to live from the decision's time, and the event
// that tells its owner.
func (d *draft) offer(tx Tx, w *Workshop, e WaitEntry) error {
	id := d.mint()
	if _, taken, err := tx.Hold(id); err != nil || taken {
		return fmt.Errorf("hold id %s: already taken or unreadable: %v", id, err)
	}
	h := Hold{
		ID: id, Actor: e.Actor, OperationKey: e.OperationKey, Workshop: w.ID, Quantity: e.Quantity, State: HoldHeld,
		CreatedAt: d.now, ExpiresAt: d.now.Truncate(time.Second).Add(w.offerTTL()), WaitEntry: e.ID,
	}
	w.Holding += e.Quantity
	w.Waiting--
	e.State, e.HoldID, e.OfferExpiresAt = WaitOffered, h.ID, h.ExpiresAt
	if err := tx.PutHold(h); err != nil {
		return fmt.Errorf("insert the offer of entry %s: %w", e.ID, err)
	}
	if err := tx.PutWaitEntry(e); err != nil {
		return fmt.Errorf("update entry %s: %w", e.ID, err)
	}
	return addHoldEvent(tx, d.mint(), EventWaitlistOffered, h, "", "", d.now)
}

// settleOffer records on the entry of offer h how the offer ended (state)
// at now: a hold settles its entry wherever it is settled.
func settleOffer(tx Tx, h Hold, state WaitState, now time.Time) error {
	if h.WaitEntry == "" {
		return nil
	}
	e, ok, err := tx.WaitEntry(h.WaitEntry)
	if err != nil {
		return fmt.Errorf("look up entry %s: %w", h.WaitEntry, err)
	}
	if !ok {
		return fmt.Errorf("hold %s is the offer of entry %s, which does not exist", h.ID, h.WaitEntry)
	}
	e.State, e.SettledAt = state, now
	if err := tx.PutWaitEntry(e); err != nil {
		return fmt.Errorf("update entry %s: %w", e.ID, err)
	}
	return nil
}

// offerEnd is the state of the entry of an offer settled into hold state
// s: the inverse of offerStates.
var offerEnd = func() map[HoldState]WaitState {
	m := make(map[HoldState]WaitState, len(offerStates))
	for e, h := range offerStates {
		m[h] = e
	}
	return m
}()

// join puts the request d decides on w's waiting list, behind every entry
// there, and then serves the list, should the places free fit the new
// entry where they fit nobody before it. It returns the "waiting"
// answer's status; the entry and its position when it joined are the
// receipt's. A request for more places than w has at all joins too: its
// organizers see it on the list and may raise the capacity (a workshop of
// capacity 0 gathers the people who want to come before it opens); the
// places free meanwhile go to the entries behind it that fit them, and
// to anyone who joins and fits.
func (d *draft) join(tx Tx, w Workshop, req Request) (string, error) {
	waiting, last := 0, ""
	err := tx.ForEachWaitingEntry(w.ID, func(o WaitEntry) error {
		waiting, last = waiting+1, o.ID
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("read the waiting list of workshop %s: %w", w.ID, err)
	}
	e := WaitEntry{ID: d.mint(), Actor: d.Actor, OperationKey: d.OperationKey, Workshop: w.ID, Quantity: req.Quantity, State: WaitWaiting, CreatedAt: d.now}
	if e.ID <= last {
		// The list is served in the order of ids, which start with the
		// time they were minted: behind a clock of another daemon that is
		// ahead of this one's (or one that stepped back), the new entry
		// gets the id after the last one's, so that it still joins at the
		// end.
		e.ID = idAfter(last)
	}
	if _, taken, err := tx.WaitEntry(e.ID); err != nil || taken {
		return "", fmt.Errorf("entry id %s: already taken or unreadable: %v", e.ID, err)
	}
	if err := tx.PutWaitEntry(e); err != nil {
		return "", fmt.Errorf("insert entry: %w", err)
	}
	w.Waiting++
	if _, err := d.serve(tx, &w); err != nil {
		return "", err
	}
	if err := tx.PutWorkshop(w); err != nil {
		return "", fmt.Errorf("update workshop %s: %w", w.ID, err)
	}
	d.EntryID, d.Position = e.ID, waiting+1
	return StatusWaiting, nil
}

// LeaveWaitlist is the idempotent leaving of waiting list entry id by
// who (its owner) under operation key: it replays, refuses with
// CodeOperationConflict, or decides once, in one transaction: an entry
// that is not who's is CodeUnknownEntry and stores nothing; a waiting
// entry leaves the queue ("left"); an entry offered places declines the
// offer, whose places pass on to the next entries ("left", or "expired"
// when the offer's deadline has passed); otherwise the stored answer is
// "already_left", "already_reserved" or "expired".
func (e *Engine) LeaveWaitlist(ctx context.Context, who Principal, key OperationKey, id string) (Outcome, error) {
	if err := checkActorKey(who.Actor, key); err != nil {
		return Outcome{}, err
	}
	if !IsWaitEntryID(id) {
		return Outcome{}, unknownEntry(who, id)
	}
	return operate(e, ctx, who, key, payload{kind: OperationLeaveWaitlist, entryID: id}, leaving{}, "leave waiting list entry "+id)
}

func unknownEntry(who Principal, id string) *Error {
	return Errorf(CodeUnknownEntry, "no waiting list entry %s is visible to %s", truncate(id, 40), who.Actor)
}

// leaveStatus is the answer of leaving an entry that is no longer in the
// queue, by its state.
var leaveStatus = map[WaitState]string{WaitLeft: StatusAlreadyLeft, WaitReserved: StatusAlreadyReserved, WaitExpired: StatusExpired}

// entryAt is what leaving acts on: the entry and its workshop.
type entryAt struct {
	e WaitEntry
	w Workshop
}

// leaving is the decision's part of leaving a waiting list. Its target is
// the entry, which must be who's (else CodeUnknownEntry, which stores
// nothing), and, while the entry waits or is offered places, its
// workshop, read (on PostgreSQL locked) before the clock, as a settlement
// reads its hold. (A workshop with people waiting or places held cannot
// be deleted, so such an entry's workshop exists.)
type leaving struct{}

func (leaving) target(tx Tx, who Principal, p payload) (entryAt, *Error, error) {
	e, ok, err := tx.WaitEntry(p.entryID)
	if err != nil {
		return entryAt{}, nil, fmt.Errorf("look up entry %s: %w", p.entryID, err)
	}
	if !ok || e.Actor != who.Actor {
		return entryAt{}, unknownEntry(who, p.entryID), nil
	}
	if e.State != WaitWaiting && e.State != WaitOffered {
		// A settled entry is answered from its state alone: its workshop
		// may have been deleted since.
		return entryAt{e: e}, nil, nil
	}
	w, ok, err := tx.Workshop(e.Workshop)
	if err != nil {
		return entryAt{}, nil, fmt.Errorf("look up workshop %s: %w", e.Workshop, err)
	}
	if !ok {
		return entryAt{}, nil, fmt.Errorf("entry %s is for workshop %q, which does not exist", e.ID, e.Workshop)
	}
	return entryAt{e, w}, nil, nil
}

func (leaving) effect(tx Tx, _ payload, t entryAt, d *draft) (string, error) {
	e, w := t.e, t.w
	d.Request, d.EntryID = Request{Workshop: e.Workshop, Quantity: e.Quantity}, e.ID
	switch e.State {
	case WaitWaiting:
		e.State, e.SettledAt = WaitLeft, d.now
		if err := tx.PutWaitEntry(e); err != nil {
			return "", fmt.Errorf("update entry %s: %w", e.ID, err)
		}
		w.Waiting--
		// Leaving frees no place, but it is a decision on w: the places of
		// w's holds and offers whose deadline has passed go on.
		if _, err := d.serve(tx, &w); err != nil {
			return "", err
		}
		if err := tx.PutWorkshop(w); err != nil {
			return "", fmt.Errorf("update workshop %s: %w", w.ID, err)
		}
		return StatusLeft, nil
	case WaitOffered:
		h, ok, err := tx.Hold(e.HoldID)
		if err != nil {
			return "", fmt.Errorf("look up hold %s: %w", e.HoldID, err)
		}
		if !ok || !h.Open() {
			return "", fmt.Errorf("entry %s is offered hold %s, which is not open", e.ID, e.HoldID)
		}
		status := StatusLeft
		w.Holding -= h.Quantity
		if h.StateAt(d.now) == HoldExpired {
			status = StatusExpired
			if err := putExpired(tx, h, d.now, d.mint()); err != nil {
				return "", err
			}
			d.expiredHolds++
		} else {
			h.State, h.SettledAt, h.SettleOperation = HoldReleased, d.now, d.OperationKey
			if err := tx.PutHold(h); err != nil {
				return "", fmt.Errorf("update hold %s: %w", h.ID, err)
			}
			if err := settleOffer(tx, h, WaitLeft, d.now); err != nil {
				return "", err
			}
			if err := addHoldEvent(tx, d.mint(), EventHoldReleased, h, d.Actor, d.OperationKey, d.now); err != nil {
				return "", err
			}
		}
		if _, err := d.serve(tx, &w); err != nil {
			return "", err
		}
		if err := tx.PutWorkshop(w); err != nil {
			return "", fmt.Errorf("update workshop %s: %w", w.ID, err)
		}
		return status, nil
	default:
		return leaveStatus[e.State], nil
	}
}

// Waitlist returns one page of the waiting list entries of f.Actor (the
// caller's own unless an admin names another), newest first, that match
// f (a state now, or all, by default all), each with its state and, while
// waiting, its position now.
func (e *Engine) Waitlist(ctx context.Context, who Principal, f ListFilter) ([]WaitEntry, string, error) {
	after, err := f.check(who, WaitStatuses, ListAll)
	if err != nil {
		return nil, "", err
	}
	now := e.utcNow()
	keep := func(w WaitEntry) bool {
		return (f.Workshop == "" || w.Workshop == f.Workshop) && (f.Status == ListAll || string(w.StateAt(now)) == f.Status)
	}
	var es []WaitEntry
	var next string
	err = e.store.View(ctx, func(tx Tx) error {
		var err error
		es, next, err = page(f.Limit, keep, func(w WaitEntry) string { return listCursor(w.ID) }, func(fn func(WaitEntry) error) error {
			return tx.ForEachWaitEntryOf(f.Actor, after, fn)
		})
		if err != nil {
			return err
		}
		return positions(tx, es, now)
	})
	if err != nil {
		return nil, "", fmt.Errorf("list the waiting list entries of %s: %w", f.Actor, err)
	}
	return es, next, nil
}

// positions sets the state of each of es at now and the position of each
// that is waiting, reading each workshop's queue once.
func positions(tx Tx, es []WaitEntry, now time.Time) error {
	queues := map[string][]string{}
	for i := range es {
		es[i].State = es[i].StateAt(now)
		if es[i].State != WaitWaiting {
			continue
		}
		q, ok := queues[es[i].Workshop]
		if !ok {
			err := tx.ForEachWaitingEntry(es[i].Workshop, func(o WaitEntry) error {
				q = append(q, o.ID)
				return nil
			})
			if err != nil {
				return fmt.Errorf("read the waiting list of workshop %s: %w", es[i].Workshop, err)
			}
			queues[es[i].Workshop] = q
		}
		if n, found := slices.BinarySearch(q, es[i].ID); found {
			es[i].Position = n + 1
		}
	}
	return nil
}

// WorkshopWaitlist returns one page of the waiting list of workshop, for
// its organizers (an admin; CodeForbidden otherwise): its entries in every
// state in the order they joined, from the one after f.Cursor on, each
// with its state and, while waiting, its position now. f.Status filters
// by state (by default all); f.Actor and f.Workshop are not used.
func (e *Engine) WorkshopWaitlist(ctx context.Context, who Principal, workshop string, f ListFilter) ([]WaitEntry, string, error) {
	if !who.Admin {
		return nil, "", Errorf(CodeForbidden, "only an admin may read a workshop's waiting list")
	}
	if err := ValidateWorkshopID(workshop); err != nil {
		return nil, "", Errorf(CodeRequestContract, "workshop id %s", err)
	}
	f.Actor, f.Workshop = "", ""
	after, err := f.check(who, WaitStatuses, ListAll)
	if err != nil {
		return nil, "", err
	}
	now := e.utcNow()
	keep := func(w WaitEntry) bool { return f.Status == ListAll || string(w.StateAt(now)) == f.Status }
	var es []WaitEntry
	var next string
	found := false
	err = e.store.View(ctx, func(tx Tx) error {
		var err error
		if _, found, err = tx.Workshop(workshop); err != nil || !found {
			return err
		}
		es, next, err = page(f.Limit, keep, func(w WaitEntry) string { return listCursor(w.ID) }, func(fn func(WaitEntry) error) error {
			return tx.ForEachWaitEntryIn(workshop, after, fn)
		})
		if err != nil {
			return err
		}
		return positions(tx, es, now)
	})
	if err != nil {
		return nil, "", fmt.Errorf("list the waiting list of workshop %s: %w", workshop, err)
	}
	if !found {
		return nil, "", Errorf(CodeUnknownWorkshop, "workshop %q does not exist", workshop)
	}
	return es, next, nil
}
