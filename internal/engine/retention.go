package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Tombstone is what is left of a receipt after the retention period: who
// used which key for which payload (its fingerprint), the answer's members
// (never its bytes), and when the receipt was purged. It is enough to
// refuse a late retry of the key safely (CodeOperationExpired, never a
// second effect) and to tell a different payload under the key
// (CodeOperationConflict), but not to replay the answer.
type Tombstone struct {
	Actor              string
	OperationKey       OperationKey
	FingerprintVersion FingerprintVersion
	Fingerprint        string
	Answer             Answer
	// CreatedAt is when the receipt was stored, PurgedAt when it was
	// turned into this tombstone.
	CreatedAt time.Time
	PurgedAt  time.Time
}

// Kind returns the kind of operation the tombstone's key was used for.
func (t Tombstone) Kind() OperationKind { return t.FingerprintVersion.Kind() }

// Request returns the workshop and quantity the key was used for.
func (t Tombstone) Request() Request {
	return Request{Workshop: t.Answer.Workshop, Quantity: t.Answer.Quantity}
}

// expired is the answer to a retry of the tombstone's key.
func (t Tombstone) expired() error { return &ExpiredError{Tombstone: t} }

// ExpiredError refuses a retry of an operation key whose receipt expired
// (CodeOperationExpired); Tombstone is what is left of the receipt. Its
// message names the receipt's answer by its status; a front end that names
// answers in its own words words the refusal with Describe.
type ExpiredError struct{ Tombstone Tombstone }

func (e *ExpiredError) Error() string { return e.Unwrap().Error() }

// Unwrap returns the refusal as the *Error that names the answer by its
// status.
func (e *ExpiredError) Unwrap() error { return e.Describe(e.Tombstone.Answer.Status) }

// Describe returns the refusal as an *Error whose message calls the
// receipt's answer answer.
func (e *ExpiredError) Describe(answer string) *Error {
	t := e.Tombstone
	if t.Answer.ReservationID != "" {
		answer += ", reservation " + t.Answer.ReservationID
	}
	return Errorf(CodeOperationExpired,
		"operation key %s expired: its receipt (%s, stored %s) was purged at %s after the retention period; nothing was done again",
		t.OperationKey, answer, t.CreatedAt.Format(time.RFC3339), t.PurgedAt.Format(time.RFC3339))
}

// TombstoneOf returns the tombstone that replaces rec when it is purged at
// now: the answer's status with the receipt's own members.
func TombstoneOf(rec Receipt, now time.Time) Tombstone {
	return Tombstone{
		Actor: rec.Actor, OperationKey: rec.OperationKey,
		FingerprintVersion: rec.FingerprintVersion, Fingerprint: rec.Fingerprint,
		Answer:    rec.AnswerOf(rec.Answer.Status),
		CreatedAt: rec.CreatedAt, PurgedAt: now,
	}
}

// ExpireStep is the most receipts one write transaction of ExpireReceipts
// turns into tombstones. The janitor's writes share the store's one writer
// (and, with group commit, the commits of reservations), so each step is
// kept small enough to add no more than a few milliseconds to any commit.
const ExpireStep = 32

// ExpireReceipts turns up to limit receipts stored before now − retention
// into tombstones and returns how many it turned. It finds them in a read
// transaction, oldest first through the store's time-ordered index, which
// stops at the first receipt that is recent enough: when nothing is old
// enough that is one index seek and no write at all. It then writes them in
// transactions of at most ExpireStep receipts each, each of which reads the
// receipt again and leaves it alone if it is gone or no longer old enough.
// The receipts turned are gone from the index, so the next call finds the
// next oldest without passing over them again; the daemon's janitor calls
// it until it returns fewer than limit.
func (e *Engine) ExpireReceipts(ctx context.Context, retention time.Duration, limit int) (int, error) {
	now := e.now().UTC()
	cutoff := now.Add(-retention)
	var old []Receipt
	err := e.store.View(ctx, func(tx Tx) error {
		old = old[:0]
		err := tx.ForEachReceiptCreatedBefore(cutoff, func(rec Receipt) error {
			if len(old) >= limit {
				return errEnough
			}
			old = append(old, rec)
			return nil
		})
		if errors.Is(err, errEnough) {
			return nil
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("expire receipts: %w", err)
	}
	n := 0
	for step := range slices.Chunk(old, ExpireStep) {
		turned := 0
		err := e.store.Update(ctx, func(tx Tx) error {
			turned = 0
			for _, c := range step {
				rec, ok, err := tx.Receipt(c.Actor, c.OperationKey)
				if err != nil {
					return fmt.Errorf("read receipt %s/%s: %w", c.Actor, c.OperationKey, err)
				}
				if !ok || !rec.CreatedAt.Before(cutoff) {
					continue
				}
				if err := tx.PutTombstone(TombstoneOf(rec, now)); err != nil {
					return fmt.Errorf("tombstone of %s/%s: %w", rec.Actor, rec.OperationKey, err)
				}
				if err := tx.DeleteReceipt(rec.Actor, rec.OperationKey); err != nil {
					return fmt.Errorf("delete receipt %s/%s: %w", rec.Actor, rec.OperationKey, err)
				}
				turned++
			}
			return nil
		})
		if err != nil {
			return n, fmt.Errorf("expire receipts: %w", err)
		}
		n += turned
	}
	return n, nil
}
