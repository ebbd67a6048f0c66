package engine

import (
	"context"
	"fmt"
)

// PutWorkshop creates or updates workshop id to spec and reports whether it
// was created. When ifMatch is non-nil the workshop must exist at exactly that
// version (CodeVersionMismatch otherwise). Capacity can never go below the
// seats already reserved (CodeCapacityBelowReserved). Stored receipts are
// never touched: an intent answered "unavailable" stays so.
func (e *Engine) PutWorkshop(ctx context.Context, id string, spec WorkshopSpec, ifMatch *uint64) (Workshop, bool, error) {
	if err := ValidateWorkshopID(id); err != nil {
		return Workshop{}, false, Errorf(CodeRequestContract, "workshop id %s", err)
	}
	if spec.Capacity < 0 || spec.Capacity > MaxQuantity {
		return Workshop{}, false, Errorf(CodeRequestContract, "member \"capacity\" must be an integer from 0 to %d", MaxQuantity)
	}
	if spec.MaxQuantity < 0 || spec.MaxQuantity > MaxQuantity {
		return Workshop{}, false, Errorf(CodeRequestContract, "member \"max_quantity\" must be an integer from 1 to %d", MaxQuantity)
	}
	if err := ValidateTitle(spec.Title); err != nil {
		return Workshop{}, false, Errorf(CodeRequestContract, "member \"title\" %s", err)
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
		}
		held := 0
		if ok {
			if held, err = heldAt(tx, cur, now); err != nil {
				return err
			}
		}
		if ok && spec.Capacity < cur.Reserved+held {
			decision = Errorf(CodeCapacityBelowReserved, "workshop %q has %d places reserved and %d held; capacity %d would be below that", id, cur.Reserved, held, spec.Capacity)
			return nil
		}
		w = cur
		if !ok {
			w = Workshop{ID: id, Title: id, MaxQuantity: max(spec.Capacity, 1)}
		}
		w.Capacity = spec.Capacity
		if spec.MaxQuantity != 0 {
			w.MaxQuantity = spec.MaxQuantity
		}
		if spec.Title != "" {
			w.Title = spec.Title
		}
		if spec.Hidden != nil {
			w.Hidden = *spec.Hidden
		}
		w.Version++
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
