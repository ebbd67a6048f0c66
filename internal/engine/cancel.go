package engine

import (
	"context"
	"fmt"
)

// Cancel is the idempotent cancellation of reservation id by who (its owner
// or an admin) under operation key: for (who.Actor, key) it either replays
// the stored answer (same reservation), refuses with CodeOperationConflict
// (the key was used for another reservation or for a reservation request),
// or decides once, in one transaction: a reservation that is not visible to
// who is CodeUnknownReservation and stores nothing; an active one is marked
// cancelled, its places go back to the workshop's counter, a cancellation
// event enters the outbox and the answer "cancelled" is stored; one
// cancelled before is answered with a stored "already_cancelled".
func (e *Engine) Cancel(ctx context.Context, who Principal, key OperationKey, id string) (Outcome, error) {
	if err := checkActorKey(who.Actor, key); err != nil {
		return Outcome{}, err
	}
	if !IsReservationID(id) {
		return Outcome{}, unknownReservation(who, id)
	}
	return operate(e, ctx, who, key, payload{kind: OperationCancel, reservationID: id}, cancellation{}, "cancel "+id)
}

func unknownReservation(who Principal, id string) *Error {
	return Errorf(CodeUnknownReservation, "no reservation %s is visible to %s", truncate(id, 40), who.Actor)
}

// cancellation is the decision's part of a cancellation. Its target is
// the reservation, which must be visible to who (else
// CodeUnknownReservation, which stores nothing); on PostgreSQL the read
// locks it, so that two decisions cancelling one reservation cannot both
// see it active.
type cancellation struct{}

func (cancellation) target(tx Tx, who Principal, p payload) (Reservation, *Error, error) {
	res, ok, err := tx.Reservation(p.reservationID)
	if err != nil {
		return Reservation{}, nil, fmt.Errorf("look up reservation %s: %w", p.reservationID, err)
	}
	if !ok || (res.Actor != who.Actor && !who.Admin) {
		return Reservation{}, unknownReservation(who, p.reservationID), nil
	}
	return res, nil, nil
}

func (cancellation) effect(tx Tx, _ payload, res Reservation, d *draft) (string, error) {
	d.Request, d.ReservationID = Request{Workshop: res.Workshop, Quantity: res.Quantity}, res.ID
	eventID := d.mint()
	if res.Cancelled() {
		return StatusAlreadyCancelled, nil
	}
	w, ok, err := tx.Workshop(res.Workshop)
	if err != nil {
		return "", fmt.Errorf("look up workshop %s: %w", res.Workshop, err)
	}
	if !ok {
		return "", fmt.Errorf("reservation %s is for workshop %q, which does not exist", res.ID, res.Workshop)
	}
	w.Reserved -= res.Quantity
	if _, err := d.serve(tx, &w); err != nil { // The places go to the people waiting first.
		return "", err
	}
	if err := tx.PutWorkshop(w); err != nil {
		return "", fmt.Errorf("update workshop %s: %w", w.ID, err)
	}
	res.CancelledAt, res.CancelledBy, res.CancelOperation = d.now, d.Actor, d.OperationKey
	if err := tx.PutReservation(res); err != nil {
		return "", fmt.Errorf("mark reservation %s cancelled: %w", res.ID, err)
	}
	if err := addEvent(tx, eventID, EventCancelled, res, d.Actor, d.OperationKey, d.now); err != nil {
		return "", err
	}
	return StatusCancelled, nil
}
