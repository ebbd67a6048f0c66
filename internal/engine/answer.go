package engine

import (
	"bytes"
	"time"
)

// The status words of authoritative answers.
const (
	StatusReserved         = "reserved"
	StatusUnavailable      = "unavailable"
	StatusCancelled        = "cancelled"
	StatusAlreadyCancelled = "already_cancelled"
	StatusHeld             = "held"
	StatusExpired          = "expired"
	StatusReleased         = "released"
	StatusAlreadyConfirmed = "already_confirmed"
	StatusAlreadyReleased  = "already_released"
)

// answerStatuses lists the status words each kind of operation answers
// with. A new kind of operation adds its row here, and front ends map every
// (kind, status) of this table to their own vocabulary.
var answerStatuses = map[OperationKind][]string{
	OperationReserve: {StatusReserved, StatusUnavailable},
	OperationCancel:  {StatusCancelled, StatusAlreadyCancelled},
	OperationHold:    {StatusHeld, StatusUnavailable},
	OperationConfirm: {StatusReserved, StatusExpired, StatusReleased, StatusAlreadyConfirmed},
	OperationRelease: {StatusReleased, StatusExpired, StatusAlreadyConfirmed, StatusAlreadyReleased},
}

// Answer is the authoritative result of one operation: what the engine
// decided, stored in the operation's receipt and given again to every
// repeat. Its one encoding (AppendJSON) is the body of the answer:
//
//	reserve {"status":"reserved","reservation_id":"…","workshop":"…","quantity":N}
//	reserve {"status":"unavailable","workshop":"…","quantity":N}
//	cancel  {"status":"cancelled","reservation_id":"…","workshop":"…","quantity":N}
//	cancel  {"status":"already_cancelled","reservation_id":"…","workshop":"…","quantity":N}
//	hold    {"status":"held","hold_id":"…","workshop":"…","quantity":N,"expires_at":"<RFC 3339 UTC>"}
//	hold    {"status":"unavailable","workshop":"…","quantity":N}
//	confirm {"status":"reserved","reservation_id":"…","hold_id":"…","workshop":"…","quantity":N}
//	confirm {"status":S,"hold_id":"…","workshop":"…","quantity":N}, S expired, released or already_confirmed
//	release {"status":S,"hold_id":"…","workshop":"…","quantity":N}, S released, expired, already_confirmed or already_released
//
// Kind is not encoded: the operation it answers says it. Members that only
// some kinds of operation have (a hold's id and expiry) are omitted when
// empty, so the encoding of every other answer stays the same.
type Answer struct {
	Kind          OperationKind `json:"-"`
	Status        string        `json:"status"`
	ReservationID string        `json:"reservation_id,omitempty"`
	HoldID        string        `json:"hold_id,omitempty"`
	Workshop      string        `json:"workshop"`
	Quantity      int           `json:"quantity"`
	ExpiresAt     time.Time     `json:"expires_at,omitzero"`
	// verbatim, if isVerbatim, is the body a store read for this answer
	// that its encoding does not reproduce byte for byte (see
	// StoredAnswer): the answer is replayed as those bytes.
	verbatim   string
	isVerbatim bool
}

// AppendJSON appends the answer's encoding, the body every front end sends.
func (a Answer) AppendJSON(b []byte) []byte {
	if a.isVerbatim {
		return append(b, a.verbatim...)
	}
	return a.appendJSON(b)
}

// JSON returns the answer's encoding.
func (a Answer) JSON() []byte { return a.AppendJSON(make([]byte, 0, 128)) }

// Verbatim reports whether the answer is replayed as bytes a store read
// rather than as its own encoding.
func (a Answer) Verbatim() bool { return a.isVerbatim }

// DecodeAnswer is the one decoder of answer bodies: body must be exactly
// one JSON object with the members of an Answer (status, workshop and
// quantity, and reservation_id where the status has one) and nothing else,
// and its status must be one that kind answers with. Errors are
// CodeRequestContract.
func DecodeAnswer(kind OperationKind, body []byte) (Answer, error) {
	a := Answer{Kind: kind}
	err := DecodeStrict(body, []Member{
		StringMember("status", true, func(s string) error { return checkStatus(kind, s) }, &a.Status),
		StringMember("reservation_id", false, nil, &a.ReservationID),
		StringMember("hold_id", false, nil, &a.HoldID),
		StringMember("workshop", true, nil, &a.Workshop),
		IntMember("quantity", true, 1, maxQuantity, &a.Quantity),
		TimeMember("expires_at", false, &a.ExpiresAt),
	})
	if err != nil {
		return Answer{}, err
	}
	return a, nil
}

// checkStatus reports a status that kind does not answer with.
func checkStatus(kind OperationKind, status string) error {
	for _, s := range answerStatuses[kind] {
		if s == status {
			return nil
		}
	}
	return errUnknownStatus
}

var errUnknownStatus = Errorf(CodeRequestContract, "is not a status of this kind of operation")

// StoredAnswer returns the answer of kind with status whose body a store
// kept as body (every receipt that earlier versions of the stores wrote
// with its body). When body is exactly the encoding of the answer it
// decodes to, the answer is that; otherwise (a body no version of the
// engine writes, or one of another status) it keeps kind and status, the
// members body decodes to if any, and body itself, which it is replayed as,
// so that a replay gives the bytes it always gave.
func StoredAnswer(kind OperationKind, status string, body []byte) Answer {
	a, err := DecodeAnswer(kind, body)
	if err == nil && a.Status == status && bytes.Equal(a.appendJSON(make([]byte, 0, len(body))), body) {
		return a
	}
	if err != nil {
		a = Answer{Kind: kind}
	}
	a.Status, a.verbatim, a.isVerbatim = status, string(body), true
	return a
}
