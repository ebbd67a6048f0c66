package engine

import (
	"context"
	"fmt"
	"time"
)

// WorkshopPatch is a change to a workshop: each member that is not nil
// replaces the workshop's; one that points at its zero value clears an
// optional member (a schedule's text, time, time zone or limit per
// person). Title, Capacity, MaxQuantity and Hidden cannot be cleared.
type WorkshopPatch struct {
	Title        *string
	Capacity     *int
	MaxQuantity  *int
	Hidden       *bool
	Description  *string
	Location     *string
	TimeZone     *string
	StartsAt     *time.Time
	EndsAt       *time.Time
	OpensAt      *time.Time // registration_opens_at
	ClosesAt     *time.Time // registration_closes_at
	MaxPerPerson *int
	// OfferTTLSeconds: how long an offer from the waiting list lasts
	// (0: the default).
	OfferTTLSeconds *int
}

// patch returns the change that spec asks of an existing workshop: its
// capacity, and every other member it sets.
func (spec WorkshopSpec) patch() WorkshopPatch {
	p := WorkshopPatch{Capacity: &spec.Capacity, Hidden: spec.Hidden}
	if spec.MaxQuantity != 0 {
		p.MaxQuantity = &spec.MaxQuantity
	}
	if spec.Title != "" {
		p.Title = &spec.Title
	}
	s := spec.Schedule
	setIf(&p.Description, s.Description, s.Description != "")
	setIf(&p.Location, s.Location, s.Location != "")
	setIf(&p.TimeZone, s.TimeZone, s.TimeZone != "")
	setIf(&p.StartsAt, s.StartsAt, !s.StartsAt.IsZero())
	setIf(&p.EndsAt, s.EndsAt, !s.EndsAt.IsZero())
	setIf(&p.OpensAt, s.RegistrationOpensAt, !s.RegistrationOpensAt.IsZero())
	setIf(&p.ClosesAt, s.RegistrationClosesAt, !s.RegistrationClosesAt.IsZero())
	setIf(&p.MaxPerPerson, s.MaxPerPerson, s.MaxPerPerson != 0)
	setIf(&p.OfferTTLSeconds, spec.OfferTTLSeconds, spec.OfferTTLSeconds != 0)
	return p
}

// setIf points *dst at v when set is true.
func setIf[T any](dst **T, v T, set bool) {
	if set {
		*dst = &v
	}
}

// check refuses a patch whose members are out of their ranges on their
// own; how they fit together is checked on the workshop they make.
func (p WorkshopPatch) check() error {
	if p.Capacity != nil && (*p.Capacity < 0 || *p.Capacity > MaxQuantity) {
		return Errorf(CodeRequestContract, "member \"capacity\" must be an integer from 0 to %d", MaxQuantity)
	}
	if p.MaxQuantity != nil && (*p.MaxQuantity < 1 || *p.MaxQuantity > MaxQuantity) {
		return Errorf(CodeRequestContract, "member \"max_quantity\" must be an integer from 1 to %d", MaxQuantity)
	}
	if p.MaxPerPerson != nil && (*p.MaxPerPerson < 0 || *p.MaxPerPerson > MaxQuantity) {
		return Errorf(CodeRequestContract, "member \"max_per_person\" must be an integer from 1 to %d", MaxQuantity)
	}
	if p.OfferTTLSeconds != nil {
		if err := checkOfferTTL(*p.OfferTTLSeconds); err != nil {
			return err
		}
	}
	if p.Title != nil {
		if err := ValidateTitle(*p.Title); err != nil {
			return Errorf(CodeRequestContract, "member \"title\" %s", err)
		}
	}
	return nil
}

// apply returns w changed by p.
func (p WorkshopPatch) apply(w Workshop) Workshop {
	put(&w.Title, p.Title)
	put(&w.Capacity, p.Capacity)
	put(&w.MaxQuantity, p.MaxQuantity)
	put(&w.Hidden, p.Hidden)
	put(&w.OfferTTLSeconds, p.OfferTTLSeconds)
	s := &w.Schedule
	put(&s.Description, p.Description)
	put(&s.Location, p.Location)
	put(&s.TimeZone, p.TimeZone)
	put(&s.StartsAt, p.StartsAt)
	put(&s.EndsAt, p.EndsAt)
	put(&s.RegistrationOpensAt, p.OpensAt)
	put(&s.RegistrationClosesAt, p.ClosesAt)
	put(&s.MaxPerPerson, p.MaxPerPerson)
	w.Schedule = s.utc()
	return w
}

// Spec returns the body of a PUT that creates a workshop with the members
// p sets (a new workshop has no member to clear): a client that sends a
// patch of a workshop that turns out not to exist creates it with this.
func (p WorkshopPatch) Spec() WorkshopSpec {
	w := p.apply(Workshop{})
	return WorkshopSpec{Capacity: w.Capacity, MaxQuantity: w.MaxQuantity, Title: w.Title, Hidden: p.Hidden,
		OfferTTLSeconds: w.OfferTTLSeconds, Schedule: w.Schedule}
}

// put sets *dst to *v when v is not nil.
func put[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// fits refuses the workshop w that p made: a schedule out of order, or a
// per-request or per-person limit that p set above the capacity.
func (p WorkshopPatch) fits(w Workshop) error {
	if err := w.Schedule.Validate(); err != nil {
		return Errorf(CodeRequestContract, "%s", err)
	}
	room := max(w.Capacity, 1)
	if p.MaxQuantity != nil && w.MaxQuantity > room {
		return Errorf(CodeRequestContract, "member \"max_quantity\" (%d) must not be above the capacity (%d)", w.MaxQuantity, w.Capacity)
	}
	if p.MaxPerPerson != nil && w.MaxPerPerson > room {
		return Errorf(CodeRequestContract, "member \"max_per_person\" (%d) must not be above the capacity (%d)", w.MaxPerPerson, w.Capacity)
	}
	return nil
}

// PutWorkshop creates or updates workshop id to spec and reports whether it
// was created. When ifMatch is non-nil the workshop must exist at exactly that
// version (CodeVersionMismatch otherwise). Capacity can never go below the
// seats already reserved (CodeCapacityBelowReserved). Stored receipts are
// never touched: an intent answered "unavailable" stays so.
func (e *Engine) PutWorkshop(ctx context.Context, id string, spec WorkshopSpec, ifMatch *uint64) (Workshop, bool, error) {
	return e.changeWorkshop(ctx, id, spec.patch(), ifMatch, true)
}

// PatchWorkshop changes the members of workshop id that p names, with the
// rules of PutWorkshop; a workshop that does not exist is
// CodeUnknownWorkshop.
func (e *Engine) PatchWorkshop(ctx context.Context, id string, p WorkshopPatch, ifMatch *uint64) (Workshop, error) {
	w, _, err := e.changeWorkshop(ctx, id, p, ifMatch, false)
	return w, err
}

// changeWorkshop changes workshop id by p, creating it (with the capacity
// p must then set) when create is true, and reports whether it created
// it.
func (e *Engine) changeWorkshop(ctx context.Context, id string, p WorkshopPatch, ifMatch *uint64, create bool) (Workshop, bool, error) {
	if err := ValidateWorkshopID(id); err != nil {
		return Workshop{}, false, Errorf(CodeRequestContract, "workshop id %s", err)
	}
	if err := p.check(); err != nil {
		return Workshop{}, false, err
	}
	if create && p.Capacity == nil {
		return Workshop{}, false, Errorf(CodeRequestContract, "member \"capacity\" is missing")
	}
	var w Workshop
	var created bool
	var decision error
	err := e.store.Update(ctx, func(tx Tx) error {
		cur, ok, err := tx.Workshop(id)
		if err != nil {
			return fmt.Errorf("look up workshop %s: %w", id, err)
		}
		now := e.utcNow() // Read once the workshop is (on PostgreSQL) locked.
		decision, created = nil, !ok
		switch {
		case ifMatch != nil && !ok:
			decision = Errorf(CodeVersionMismatch, "workshop %q does not exist, so it cannot be at version %d", id, *ifMatch)
			return nil
		case ifMatch != nil && cur.Version != *ifMatch:
			decision = Errorf(CodeVersionMismatch, "workshop %q is at version %d, not %d; read it again and retry", id, cur.Version, *ifMatch)
			return nil
		case !ok && !create:
			decision = Errorf(CodeUnknownWorkshop, "workshop %q does not exist", id)
			return nil
		}
		if !ok {
			cur = Workshop{ID: id, Title: id, MaxQuantity: max(*p.Capacity, 1)}
		}
		w = p.apply(cur)
		if decision = p.fits(w); decision != nil {
			return nil
		}
		held := 0
		if ok {
			if held, err = heldAt(tx, cur, now); err != nil {
				return err
			}
		}
		if ok && w.Capacity < cur.Reserved+held {
			decision = Errorf(CodeCapacityBelowReserved, "workshop %q has %d places reserved and %d held; capacity %d would be below that", id, cur.Reserved, held, w.Capacity)
			return nil
		}
		w.Version++
		// Places a raised capacity frees go to the people waiting first.
		d := draft{now: now, newID: e.newID}
		if _, err := d.serve(tx, &w); err != nil {
			return err
		}
		if err := tx.PutWorkshop(w); err != nil {
			return err
		}
		w, err = viewAt(tx, w, now)
		return err
	})
	if err != nil {
		return Workshop{}, false, fmt.Errorf("put workshop %s: %w", id, err)
	}
	if decision != nil {
		return Workshop{}, false, decision
	}
	return w, created, nil
}

// DeleteWorkshop removes workshop id, which must have no active
// reservation and no open hold before its deadline (CodeWorkshopInUse
// otherwise); the open holds past their deadline are stored as expired
// first. When ifMatch is non-nil the workshop must be at exactly that
// version. Its reservations, holds and receipts stay, so every stored
// answer that names it replays as before.
func (e *Engine) DeleteWorkshop(ctx context.Context, id string, ifMatch *uint64) error {
	var decision error
	err := e.store.Update(ctx, func(tx Tx) error {
		w, ok, err := tx.Workshop(id)
		if err != nil {
			return fmt.Errorf("look up workshop %s: %w", id, err)
		}
		now := e.utcNow()
		decision = nil
		switch {
		case !ok:
			decision = Errorf(CodeUnknownWorkshop, "workshop %q does not exist", truncate(id, 50))
			return nil
		case ifMatch != nil && w.Version != *ifMatch:
			decision = Errorf(CodeVersionMismatch, "workshop %q is at version %d, not %d; read it again and retry", id, w.Version, *ifMatch)
			return nil
		}
		held, err := heldAt(tx, w, now)
		if err != nil {
			return err
		}
		if w.Waiting > 0 {
			decision = Errorf(CodeWorkshopInUse, "workshop %q has people on its waiting list (%d waiting); it can be deleted once nobody waits", id, w.Waiting)
			return nil
		}
		if w.Reserved > 0 || held > 0 {
			decision = Errorf(CodeWorkshopInUse, "workshop %q has %d places reserved and %d held; cancel those reservations and let the holds end before deleting it", id, w.Reserved, held)
			return nil
		}
		var due []Hold
		err = tx.ForEachOpenHold(w.ID, now, func(h Hold) error {
			due = append(due, h)
			return nil
		})
		if err != nil {
			return fmt.Errorf("read the expired holds of workshop %s: %w", w.ID, err)
		}
		for _, h := range due {
			if err := putExpired(tx, h, now, e.newID(now)); err != nil {
				return err
			}
		}
		return tx.DeleteWorkshop(id)
	})
	if err != nil {
		return fmt.Errorf("delete workshop %s: %w", id, err)
	}
	return decision
}

// Workshop returns one workshop, or CodeUnknownWorkshop.
func (e *Engine) Workshop(ctx context.Context, id string) (Workshop, error) {
	var w Workshop
	var ok bool
	now := e.now()
	err := e.store.View(ctx, func(tx Tx) error {
		var err error
		if w, ok, err = tx.Workshop(id); err != nil || !ok {
			return err
		}
		w, err = viewAt(tx, w, now)
		return err
	})
	if err != nil {
		return Workshop{}, fmt.Errorf("get workshop %s: %w", id, err)
	}
	if !ok {
		return Workshop{}, Errorf(CodeUnknownWorkshop, "workshop %q does not exist", truncate(id, 50))
	}
	return w, nil
}

// Workshops returns the listed workshops in id order, and the hidden ones
// too when withHidden is set.
func (e *Engine) Workshops(ctx context.Context, withHidden bool) ([]Workshop, error) {
	ws := []Workshop{}
	now := e.now()
	err := e.store.View(ctx, func(tx Tx) error {
		ws = ws[:0]
		return tx.ForEachWorkshop(func(w Workshop) error {
			if w.Hidden && !withHidden {
				return nil
			}
			w, err := viewAt(tx, w, now)
			ws = append(ws, w)
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list workshops: %w", err)
	}
	return ws, nil
}

// Operation returns the receipt of actor's own operation key,
// CodeOperationExpired when only its tombstone is left, or
// CodeUnknownOperation (also when only another actor used that key).
func (e *Engine) Operation(ctx context.Context, actor string, key OperationKey) (Receipt, error) {
	var rec Receipt
	var ts Tombstone
	var ok, expired bool
	err := e.store.View(ctx, func(tx Tx) error {
		var err error
		if rec, ok, err = tx.Receipt(actor, key); err != nil || ok {
			return err
		}
		ts, expired, err = tx.Tombstone(actor, key)
		return err
	})
	if err != nil {
		return Receipt{}, fmt.Errorf("get operation %s: %w", key, err)
	}
	if expired {
		return Receipt{}, ts.expired()
	}
	if !ok {
		return Receipt{}, Errorf(CodeUnknownOperation, "no operation %s is recorded for %s", key, actor)
	}
	return rec, nil
}

// Reservation returns reservation id if who owns it or is an admin, and
// CodeUnknownReservation otherwise, so that ids of others are not revealed.
func (e *Engine) Reservation(ctx context.Context, who Principal, id string) (Reservation, error) {
	notFound := Errorf(CodeUnknownReservation, "no reservation %s is visible to %s", truncate(id, 40), who.Actor)
	if !IsReservationID(id) {
		return Reservation{}, notFound
	}
	var r Reservation
	var ok bool
	err := e.store.View(ctx, func(tx Tx) error {
		var err error
		r, ok, err = tx.Reservation(id)
		return err
	})
	if err != nil {
		return Reservation{}, fmt.Errorf("get reservation %s: %w", id, err)
	}
	if !ok || (r.Actor != who.Actor && !who.Admin) {
		return Reservation{}, notFound
	}
	return r, nil
}
