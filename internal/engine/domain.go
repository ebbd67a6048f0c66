package engine

import (
	"errors"
	"time"
)

// Principal is an authenticated caller: the actor the server derived from the
// caller's credentials (never from a request body) and whether it is an admin.
type Principal struct {
	Actor string `json:"actor"`
	Admin bool   `json:"admin"`
}

// Workshop is a capacity-limited event. Reserved is a counter kept in the
// same transaction as every reservation; Version grows with every update.
// Holding is a counter kept the same way of the places in open holds (held,
// neither confirmed nor released nor cleaned up after their deadline), some
// of which may have passed their deadline; Held is what a view shows: the
// places of the open holds whose deadline has not passed at the time of the
// read, and Available is capacity minus reserved minus held. A Hidden
// workshop is left out of the workshop list unless the list asks for hidden
// ones; it is otherwise a workshop like any other: it can be read, reserved
// and held by its id, and its stored answers replay as stored.
type Workshop struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Capacity    int    `json:"capacity"`
	Reserved    int    `json:"reserved"`
	Held        int    `json:"held"`
	Available   int    `json:"available"`
	MaxQuantity int    `json:"max_quantity"`
	Version     uint64 `json:"version"`
	Hidden      bool   `json:"hidden,omitempty"`
	Holding     int    `json:"-"`
	// Waiting counts the entries of the workshop's waiting list that wait
	// for their turn (not those offered places, whose places are held),
	// kept in the transaction of every change to them. While it is not 0,
	// freed places go to them and requests that do not join the list are
	// answered "unavailable".
	Waiting int `json:"waiting,omitempty"`
	// OfferTTLSeconds is how long an entry offered places has to confirm
	// them (0: DefaultOfferTTLSeconds).
	OfferTTLSeconds int `json:"offer_ttl_seconds,omitempty"`
	Schedule
	// Registration is what a view shows: the registration state at the
	// time of the read (RegistrationOpen, RegistrationNotOpen or
	// RegistrationClosed). Stores do not keep it.
	Registration string `json:"registration,omitempty"`
}

// WorkshopSpec is an admin's desired state of a workshop. A zero MaxQuantity
// or empty Title keeps the current value on update; on create they default to
// the capacity (at least 1) and the id. A nil Hidden keeps the workshop as
// listed or hidden as it is; a new workshop is listed unless Hidden says
// otherwise. The members of Schedule that are set replace the workshop's;
// those not set keep theirs (a WorkshopPatch clears them).
type WorkshopSpec struct {
	Capacity    int    `json:"capacity"`
	MaxQuantity int    `json:"max_quantity,omitempty"`
	Title       string `json:"title,omitempty"`
	Hidden      *bool  `json:"hidden,omitempty"`
	// OfferTTLSeconds, when not 0, replaces the time an offer from the
	// waiting list lasts.
	OfferTTLSeconds int `json:"offer_ttl_seconds,omitempty"`
	Schedule
}

// ValidateTitle checks a workshop's title: at most 200 bytes of printable
// text. The error text completes the sentence `member "title" …`.
func ValidateTitle(t string) error {
	if len(t) > 200 {
		return errTitle
	}
	for _, r := range t {
		if r < 0x20 || r == 0x7f {
			return errTitle
		}
	}
	return nil
}

var errTitle = errors.New("must be at most 200 bytes of printable text")

// Reservation is one committed reservation: the single effect of one intent.
// A cancelled reservation keeps its row: CancelledAt, CancelledBy and
// CancelOperation name the cancellation that freed its places.
type Reservation struct {
	ID              string       `json:"id"`
	Actor           string       `json:"actor"`
	OperationKey    OperationKey `json:"operation"`
	Workshop        string       `json:"workshop"`
	Quantity        int          `json:"quantity"`
	CreatedAt       time.Time    `json:"created_at"`
	CancelledAt     time.Time    `json:"cancelled_at,omitzero"`
	CancelledBy     string       `json:"cancelled_by,omitempty"`
	CancelOperation OperationKey `json:"cancel_operation,omitempty"`
}

// Cancelled reports whether the reservation has been cancelled.
func (r Reservation) Cancelled() bool { return !r.CancelledAt.IsZero() }

// Receipt is the stored, authoritative answer to one (actor, operation key),
// which every repeat gets again. FingerprintVersion names the encoding that
// Fingerprint hashes, and through it the kind of operation the key was used
// for (see Receipt.Kind). Request and ReservationID are what the key was
// used for: the workshop and quantity of a reservation or hold request and,
// for a reservation made or a cancellation, the reservation (a
// cancellation's Request holds the workshop and quantity of the reservation
// it cancelled). HoldID names the hold a hold request made or a
// confirmation or release settled (whose workshop and quantity Request then
// holds), HoldExpiresAt is the deadline of a hold made, and HoldTTLSeconds
// the time to live a hold request asked for.
type Receipt struct {
	Actor              string
	OperationKey       OperationKey
	FingerprintVersion FingerprintVersion
	Fingerprint        string
	Request            Request
	ReservationID      string
	HoldID             string
	// DeliveryID is the delivery an operator's correction was for.
	DeliveryID string
	// EntryID is the waiting list entry a request joined or a leaving
	// left, and Position the entry's place in the queue when it joined.
	EntryID        string
	Position       int
	HoldExpiresAt  time.Time
	HoldTTLSeconds int
	// Limit is what a limit_reached answer reports beside its request.
	Limit     Limit
	Answer    Answer
	CreatedAt time.Time
}

// AnswerOf returns the answer of status to the receipt's operation, built
// from the receipt's members: the answer the engine stores, which a store
// that keeps only the status builds again.
func (r Receipt) AnswerOf(status string) Answer {
	return Answer{Kind: r.Kind(), Status: status, ReservationID: r.ReservationID, HoldID: r.HoldID, DeliveryID: r.DeliveryID,
		EntryID: r.EntryID, Workshop: r.Request.Workshop, Quantity: r.Request.Quantity, Position: r.Position,
		ExpiresAt: r.HoldExpiresAt, Limit: r.Limit}
}

// payload returns what the receipt's key was used for, as the operation
// sent it.
func (r Receipt) payload() payload {
	req := r.Request
	req.Waitlist = r.FingerprintVersion == WaitlistFingerprintV1
	return payload{kind: r.Kind(), req: req, reservationID: r.ReservationID, holdID: r.HoldID, deliveryID: r.DeliveryID,
		entryID: r.EntryID, hold: HoldRequest{Workshop: r.Request.Workshop, Quantity: r.Request.Quantity, TTLSeconds: r.HoldTTLSeconds}}
}

// Outcome is the result of an idempotent operation: its authoritative
// answer and whether it was replayed from a receipt. ExpiredHolds counts
// the holds past their deadline that the first decision found still open
// and cleaned up itself, giving their places back: the hold a confirmation
// or release was for, and the holds a reservation or hold request cleaned
// to find the places it asked for. With the holds ExpireHolds cleans up,
// these are every hold that expired, each counted once.
type Outcome struct {
	Answer       Answer
	Replayed     bool
	ExpiredHolds int
}
