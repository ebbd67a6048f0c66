package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/reserve/reserve/internal/tracing"
)

// Verdict is what a decision came to: the operation's Outcome, or a
// Refusal, which stored nothing. A failure is no verdict: it is the error
// returned beside one, and it rolls the transaction back.
type Verdict struct {
	Outcome Outcome
	// Refusal, when not nil, refuses the operation, and nothing was
	// stored for it: an *Error, or an *ExpiredError (a retry of a key
	// whose receipt expired), whose chain holds one. Outcome is then
	// zero.
	Refusal error
}

// refuse returns the verdict that refuses with refusal.
func refuse(refusal *Error) Verdict { return Verdict{Refusal: refusal} }

// result returns v as an operation returns it: its outcome, or its
// refusal as the error.
func (v Verdict) result() (Outcome, error) {
	if v.Refusal != nil {
		return Outcome{}, v.Refusal
	}
	return v.Outcome, nil
}

// operation is one kind of operation's part of the one decision (decide):
// what it checks and what it changes. T is what it acts on (a workshop, a
// hold, a reservation), which target reads and effect gets.
type operation[T any] interface {
	// target reads what payload p of who acts on; inside a write
	// transaction of a store with row locks (PostgreSQL) the read locks
	// it. When it is not there, or not who's to act on, or refuses p, the
	// refusal is the verdict, and nothing is stored. It reads no clock.
	target(tx Tx, who Principal, p payload) (T, *Error, error)
	// effect makes p's change to t at the decision's time, with the ids
	// it mints (d.mint), and fills in the receipt d stores: what the key
	// was used for (its Request, and the reservation or hold) beside
	// what decide has set. It returns the answer's status.
	effect(tx Tx, p payload, t T, d *draft) (status string, err error)
}

// draft is a decision under way, as decide hands it to an operation's
// effect.
type draft struct {
	// Receipt is the receipt to be stored, whose actor, key, fingerprint
	// and time (now) decide has set.
	Receipt
	now   time.Time
	newID func(time.Time) string
	// expiredHolds counts the open holds past their deadline that the
	// effect cleaned up (Outcome.ExpiredHolds).
	expiredHolds int
}

// mint returns a new id minted at the decision's time.
func (d *draft) mint() string { return d.newID(d.now) }

// decide is the one decision of an idempotent operation, run inside a
// write transaction; op supplies what its kind checks and changes. In
// this order it:
//   - looks the key up: a replay, a conflict or an expired key is the
//     verdict;
//   - reads op's target, which may refuse the operation before anything is
//     written;
//   - reads the clock (in UTC), each time the store runs it and only once
//     the target is read (on PostgreSQL locked), so that the time a
//     decision is made at is the time it is decided, however long the
//     transaction waited for the writer, a row lock or a retry: the holds
//     whose deadline passed meanwhile no longer count, and a hold's
//     deadline is judged at that time;
//   - makes op's effect, with the ids it mints (newID) at that time;
//   - stores the receipt with the answer, which is the outcome.
//
// A store may run it more than once, so it has no effects outside tx.
func decide[T any](tx Tx, who Principal, key OperationKey, p payload, op operation[T], clock func() time.Time, newID func(time.Time) string) (Verdict, error) {
	if v, found, err := lookUp(tx, who.Actor, key, p); err != nil || found {
		return v, err
	}
	t, refusal, err := op.target(tx, who, p)
	if err != nil {
		return Verdict{}, err
	}
	if refusal != nil {
		return refuse(refusal), nil
	}
	now := clock()
	version, fp := p.fingerprint()
	d := draft{
		Receipt: Receipt{Actor: who.Actor, OperationKey: key, FingerprintVersion: version, Fingerprint: fp, CreatedAt: now},
		now:     now, newID: newID,
	}
	status, err := op.effect(tx, p, t, &d)
	if err != nil {
		return Verdict{}, err
	}
	out, err := storeReceipt(tx, d.Receipt, status)
	if err != nil {
		return Verdict{}, err
	}
	out.ExpiredHolds = d.expiredHolds
	return Verdict{Outcome: out}, nil
}

// operate runs one idempotent operation (payload p, kind op) of who under
// key: when a receipt exists it answers from a read transaction, without
// taking the writer; otherwise it decides in a write transaction, whose
// verdict it returns as the outcome or the refusal. A failure that leaves
// the operation undecided is wrapped with what, which names the operation.
func operate[T any](e *Engine, ctx context.Context, who Principal, key OperationKey, p payload, op operation[T], what string) (out Outcome, err error) {
	if e.tracer != nil {
		var span tracing.Span
		ctx, span = e.tracer.Decision(ctx, string(p.kind))
		defer func() { span.EndDecision(out.Answer.Status, err) }()
	}
	var v Verdict
	found := false
	err = e.store.View(ctx, func(tx Tx) error {
		var err error
		v, found, err = lookUp(tx, who.Actor, key, p)
		return err
	})
	if err == nil && !found {
		err = e.store.Update(ctx, func(tx Tx) error {
			var err error
			v, err = decide(tx, who, key, p, op, e.utcNow, e.newID)
			return err
		})
	}
	if err != nil {
		if Undecided(ErrorCode(err)) {
			err = fmt.Errorf("%s: %w", what, err)
		}
		return Outcome{}, err
	}
	return v.result()
}

// storeReceipt stores rec with the answer of status (built from rec by
// AnswerOf, so a store may keep only the status) and returns it as the
// first answer.
func storeReceipt(tx Tx, rec Receipt, status string) (Outcome, error) {
	rec.Answer = rec.AnswerOf(status)
	if err := tx.PutReceipt(rec); err != nil {
		return Outcome{}, fmt.Errorf("store receipt: %w", err)
	}
	return Outcome{Answer: rec.Answer}, nil
}

// lookUp answers an operation whose key was used before (found): from its
// receipt (its replay, or a conflict) or, once the receipt expired, from
// its tombstone (CodeOperationExpired, or a conflict). found is false when
// the key is new.
func lookUp(tx Tx, actor string, key OperationKey, p payload) (v Verdict, found bool, err error) {
	rec, ok, err := tx.Receipt(actor, key)
	if err != nil {
		return Verdict{}, false, fmt.Errorf("look up receipt: %w", err)
	}
	if ok {
		v, err := replay(rec, p)
		return v, true, err
	}
	ts, ok, err := tx.Tombstone(actor, key)
	if err != nil {
		return Verdict{}, false, fmt.Errorf("look up tombstone: %w", err)
	}
	if !ok {
		return Verdict{}, false, nil
	}
	same, err := p.matches(ts.FingerprintVersion, ts.Fingerprint)
	if err != nil {
		return Verdict{}, false, fmt.Errorf("tombstone %s of %s: %w", key, actor, err)
	}
	if !same {
		return refuse(conflict(key, ts.Kind(), ts.Request(), ts.Answer)), true, nil
	}
	return Verdict{Refusal: ts.expired()}, true, nil
}

// replay answers an operation from its existing receipt: the stored answer
// when the payload matches, CodeOperationConflict when the key was used
// for another payload or another kind of operation.
func replay(rec Receipt, p payload) (Verdict, error) {
	same, err := p.matches(rec.FingerprintVersion, rec.Fingerprint)
	if err != nil {
		return Verdict{}, fmt.Errorf("receipt %s of %s: %w", rec.OperationKey, rec.Actor, err)
	}
	if !same {
		return refuse(conflict(rec.OperationKey, rec.Kind(), rec.Request, rec.AnswerOf(rec.Answer.Status))), nil
	}
	return Verdict{Outcome: Outcome{Answer: rec.Answer, Replayed: true}}, nil
}

// conflict is the refusal of a key already used for another payload: kind,
// req and a describe that first use.
func conflict(key OperationKey, kind OperationKind, req Request, a Answer) *Error {
	var use string
	switch kind {
	case OperationCancel:
		use = "to cancel reservation " + a.ReservationID
	case OperationHold:
		use = fmt.Sprintf("for a different hold request (workshop %q, quantity %d)", req.Workshop, req.Quantity)
	case OperationConfirm, OperationRelease:
		use = fmt.Sprintf("to %s hold %s", kind, a.HoldID)
	case OperationRetryDelivery:
		use = "to send delivery " + a.DeliveryID + " again"
	case OperationSkipDelivery:
		use = "to skip delivery " + a.DeliveryID
	case OperationLeaveWaitlist:
		use = "to leave waiting list entry " + a.EntryID
	default:
		use = fmt.Sprintf("for a different reservation (workshop %q, quantity %d)", req.Workshop, req.Quantity)
	}
	return Errorf(CodeOperationConflict, "operation key %s was already used %s; a different operation needs a new operation key", key, use)
}
