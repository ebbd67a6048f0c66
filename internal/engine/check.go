package engine

import (
	"context"
	"encoding/json"
	"fmt"
)

// Finding is one broken invariant found by Check.
type Finding struct {
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
}

func (f Finding) String() string { return f.Kind + ": " + f.Detail }

// The kinds of Finding.
const (
	FindingCounter          = "counter_mismatch"
	FindingOverCapacity     = "over_capacity"
	FindingOrphanReceipt    = "receipt_without_reservation"
	FindingOrphanReserve    = "reservation_without_receipt"
	FindingUnknownWorkshop  = "reservation_for_unknown_workshop"
	FindingMalformedReceipt = "malformed_receipt"
)

// Check reads the whole store in one consistent snapshot and reports every
// broken invariant: a workshop counter that differs from the sum of its
// reservations, reserved above capacity, a stored 201 receipt without its
// reservation (same actor, key, workshop and quantity), a reservation without
// exactly one receipt that names it, a reservation of an unknown workshop, and
// receipts whose stored answer does not match their own request. No findings
// means the store keeps the promise "one intent, one effect".
func Check(ctx context.Context, store Store) ([]Finding, error) {
	type resInfo struct {
		actor, workshop string
		key             OperationKey
		quantity        int
		receipts        int
	}
	var findings []Finding
	add := func(kind, format string, args ...any) {
		findings = append(findings, Finding{Kind: kind, Detail: fmt.Sprintf(format, args...)})
	}
	err := store.View(ctx, func(tx Tx) error {
		workshops := map[string]Workshop{}
		sums := map[string]int{}
		if err := tx.ForEachWorkshop(func(w Workshop) error {
			workshops[w.ID] = w
			return nil
		}); err != nil {
			return err
		}
		reservations := map[string]*resInfo{}
		if err := tx.ForEachReservation(func(r Reservation) error {
			if _, ok := workshops[r.Workshop]; !ok {
				add(FindingUnknownWorkshop, "reservation %s is for workshop %q, which does not exist", r.ID, r.Workshop)
			}
			sums[r.Workshop] += r.Quantity
			reservations[r.ID] = &resInfo{actor: r.Actor, workshop: r.Workshop, key: r.OperationKey, quantity: r.Quantity}
			return nil
		}); err != nil {
			return err
		}
		if err := tx.ForEachReceipt(func(rec Receipt) error {
			checkReceiptAnswer(rec, add)
			if rec.HTTPStatus != StatusCodeReserved {
				return nil
			}
			r, ok := reservations[rec.ReservationID]
			if !ok {
				add(FindingOrphanReceipt, "receipt %s of %s answers 201 with reservation %s, which does not exist", rec.OperationKey, rec.Actor, rec.ReservationID)
				return nil
			}
			if r.actor != rec.Actor || r.key != rec.OperationKey || r.workshop != rec.Request.Workshop || r.quantity != rec.Request.Quantity {
				add(FindingOrphanReceipt, "receipt %s of %s names reservation %s, which belongs to %s/%s (%s × %d), not to this receipt (%s × %d)",
					rec.OperationKey, rec.Actor, rec.ReservationID, r.actor, r.key, r.workshop, r.quantity, rec.Request.Workshop, rec.Request.Quantity)
				return nil
			}
			r.receipts++
			return nil
		}); err != nil {
			return err
		}
		for id, r := range reservations {
			if r.receipts != 1 {
				add(FindingOrphanReserve, "reservation %s (%s, key %s) is named by %d receipts, not exactly one", id, r.actor, r.key, r.receipts)
			}
		}
		for id, w := range workshops {
			if w.Reserved != sums[id] {
				add(FindingCounter, "workshop %q counts %d reserved, but its reservations sum to %d", id, w.Reserved, sums[id])
			}
			if w.Reserved > w.Capacity {
				add(FindingOverCapacity, "workshop %q has %d reserved, above its capacity %d", id, w.Reserved, w.Capacity)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	return findings, nil
}

// checkReceiptAnswer reports a receipt whose stored body is not the answer
// the engine gives for its own request and status.
func checkReceiptAnswer(rec Receipt, add func(kind, format string, args ...any)) {
	var a Answer
	err := json.Unmarshal(rec.Body, &a)
	want := Answer{Status: StatusUnavailable, Workshop: rec.Request.Workshop, Quantity: rec.Request.Quantity}
	if rec.HTTPStatus == StatusCodeReserved {
		want.Status, want.ReservationID = StatusReserved, rec.ReservationID
	}
	same, fpErr := sameFingerprint(rec, rec.Request)
	switch {
	case rec.HTTPStatus != StatusCodeReserved && rec.HTTPStatus != StatusCodeUnavailable:
		add(FindingMalformedReceipt, "receipt %s of %s has status %d", rec.OperationKey, rec.Actor, rec.HTTPStatus)
	case err != nil || a != want:
		add(FindingMalformedReceipt, "receipt %s of %s stores a body that does not match its request: %q", rec.OperationKey, rec.Actor, truncate(string(rec.Body), 200))
	case fpErr != nil || !same:
		add(FindingMalformedReceipt, "receipt %s of %s has a fingerprint that does not match its request", rec.OperationKey, rec.Actor)
	}
}
