package engine

import (
	"encoding/json"
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
type Workshop struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Capacity    int    `json:"capacity"`
	Reserved    int    `json:"reserved"`
	Available   int    `json:"available"`
	MaxQuantity int    `json:"max_quantity"`
	Version     uint64 `json:"version"`
}

// WorkshopSpec is an admin's desired state of a workshop. A zero MaxQuantity
// or empty Title keeps the current value on update; on create they default to
// the capacity (at least 1) and the id.
type WorkshopSpec struct {
	Capacity    int    `json:"capacity"`
	MaxQuantity int    `json:"max_quantity,omitempty"`
	Title       string `json:"title,omitempty"`
}

// DecodeWorkshopSpec decodes the body of PUT /api/v1/workshops/{id} with the
// same strict rules as reservation bodies.
func DecodeWorkshopSpec(body []byte) (WorkshopSpec, error) {
	var s WorkshopSpec
	err := DecodeStrict(body, []Member{
		IntMember("capacity", true, 0, maxQuantity, &s.Capacity),
		IntMember("max_quantity", false, 1, maxQuantity, &s.MaxQuantity),
		StringMember("title", false, validateTitle, &s.Title),
	})
	return s, err
}

func validateTitle(t string) error {
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

// Receipt is the stored, authoritative answer to one (actor, operation key):
// the status and the exact body bytes the first request got, which every
// repeat gets again. FingerprintVersion also says what kind of operation the
// key was used for (see Receipt.Kind). ReservationID is set for a 201 and
// for every cancellation receipt, whose Request holds the workshop and
// quantity of the reservation it cancelled.
type Receipt struct {
	Actor              string       `json:"actor"`
	OperationKey       OperationKey `json:"operation"`
	FingerprintVersion int          `json:"fingerprint_version"`
	Fingerprint        string       `json:"fingerprint"`
	Request            Request      `json:"request"`
	HTTPStatus         int          `json:"http_status"`
	Body               []byte       `json:"body"`
	ReservationID      string       `json:"reservation_id,omitempty"`
	CreatedAt          time.Time    `json:"created_at"`
}

// Outcome statuses stored in reservation and cancellation answers.
const (
	StatusReserved         = "reserved"
	StatusUnavailable      = "unavailable"
	StatusCancelled        = "cancelled"
	StatusAlreadyCancelled = "already_cancelled"
)

// Answer is the JSON body of an authoritative reservation answer, exactly as
// the engine stores it in the receipt:
//
//	201 {"status":"reserved","reservation_id":"…","workshop":"…","quantity":N}
//	409 {"status":"unavailable","workshop":"…","quantity":N}
//
// and of a cancellation:
//
//	200 {"status":"cancelled","reservation_id":"…","workshop":"…","quantity":N}
//	409 {"status":"already_cancelled","reservation_id":"…","workshop":"…","quantity":N}
type Answer struct {
	Status        string `json:"status"`
	ReservationID string `json:"reservation_id,omitempty"`
	Workshop      string `json:"workshop"`
	Quantity      int    `json:"quantity"`
}

// OperationView is the caller's view of a receipt, the body of
// GET /api/v1/operations/{key}. Response holds the stored body verbatim.
type OperationView struct {
	Operation  OperationKey    `json:"operation"`
	HTTPStatus int             `json:"http_status"`
	Response   json.RawMessage `json:"response"`
	CreatedAt  time.Time       `json:"created_at"`
}

// View returns the receipt as its owner sees it.
func (r Receipt) View() OperationView {
	return OperationView{Operation: r.OperationKey, HTTPStatus: r.HTTPStatus, Response: json.RawMessage(r.Body), CreatedAt: r.CreatedAt}
}

// Outcome is the result of Engine.Reserve: the HTTP status and body bytes of
// the authoritative answer, and whether they were replayed from a receipt.
type Outcome struct {
	HTTPStatus    int
	Body          []byte
	Replayed      bool
	ReservationID string
}
