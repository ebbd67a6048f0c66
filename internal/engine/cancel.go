package engine

import (
	"context"
	"fmt"
	"time"
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
	if err := ValidateActor(who.Actor); err != nil {
		return Outcome{}, Errorf(CodeUnauthenticated, "%v", err)
	}
	if !isCanonicalUUIDv4(string(key)) {
		return Outcome{}, Errorf(CodeInvalidIdempotencyKey, "operation key %q is not a lowercase canonical UUIDv4", truncate(string(key), 80))
	}
	if !IsReservationID(id) {
		return Outcome{}, unknownReservation(who, id)
	}
	p := payload{kind: OperationCancel, reservationID: id}
	out, err := e.operate(ctx, who.Actor, key, p, func(tx Tx, clock func() time.Time) (Outcome, error, error) {
		now := clock()
		return decideCancel(tx, who, key, p, now, e.newID(now))
	})
	if err != nil && Undecided(ErrorCode(err)) {
		err = fmt.Errorf("cancel %s: %w", id, err)
	}
	return out, err
}

func unknownReservation(who Principal, id string) error {
	return Errorf(CodeUnknownReservation, "no reservation %s is visible to %s", truncate(id, 40), who.Actor)
}

// decideCancel is the one cancellation decision, run inside a write
// transaction, with the same results as decide.
func decideCancel(tx Tx, who Principal, key OperationKey, p payload, now time.Time, eventID string) (out Outcome, decision, err error) {
	out, decision, found, err := lookUp(tx, who.Actor, key, p)
	if err != nil || found {
		return out, decision, err
	}
	id := p.reservationID
	res, ok, err := tx.Reservation(id)
	if err != nil {
		return Outcome{}, nil, fmt.Errorf("look up reservation %s: %w", id, err)
	}
	if !ok || (res.Actor != who.Actor && !who.Admin) {
		return Outcome{}, unknownReservation(who, id), nil
	}
	rec := Receipt{
		Actor: who.Actor, OperationKey: key,
		FingerprintVersion: CancelFingerprintV1, Fingerprint: CancelFingerprint(id),
		Request:   Request{Workshop: res.Workshop, Quantity: res.Quantity},
		CreatedAt: now, ReservationID: id,
	}
	status := StatusAlreadyCancelled
	if !res.Cancelled() {
		w, ok, err := tx.Workshop(res.Workshop)
		if err != nil {
			return Outcome{}, nil, fmt.Errorf("look up workshop %s: %w", res.Workshop, err)
		}
		if !ok {
			return Outcome{}, nil, fmt.Errorf("reservation %s is for workshop %q, which does not exist", id, res.Workshop)
		}
		w.Reserved -= res.Quantity
		if err := tx.PutWorkshop(w); err != nil {
			return Outcome{}, nil, fmt.Errorf("update workshop %s: %w", w.ID, err)
		}
		res.CancelledAt, res.CancelledBy, res.CancelOperation = now, who.Actor, key
		if err := tx.PutReservation(res); err != nil {
			return Outcome{}, nil, fmt.Errorf("mark reservation %s cancelled: %w", id, err)
		}
		if err := addEvent(tx, eventID, EventCancelled, res, who.Actor, key, now); err != nil {
			return Outcome{}, nil, err
		}
		status = StatusCancelled
	}
	out, err = storeReceipt(tx, rec, status)
	return out, nil, err
}
