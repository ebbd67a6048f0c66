package engine

import (
	"bytes"
	"slices"
	"time"

	"github.com/reserve/reserve/internal/strictjson"
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
	// The refusals of a request for places by the workshop's registration
	// window and its limit per person.
	StatusRegistrationNotOpen = "registration_not_open"
	StatusRegistrationClosed  = "registration_closed"
	StatusLimitReached        = "limit_reached"
	// The answers of an operator's corrections of a delivery.
	StatusRequeued         = "requeued"
	StatusSkipped          = "skipped"
	StatusAlreadyDelivered = "already_delivered"
	StatusAlreadySkipped   = "already_skipped"
	// The answers of a reservation request that joined a waiting list,
	// and of leaving one.
	StatusWaiting         = "waiting"
	StatusLeft            = "left"
	StatusAlreadyLeft     = "already_left"
	StatusAlreadyReserved = "already_reserved"
)

// Effect is what an authoritative answer says its operation did: made
// something new (a reservation, a hold), changed something that was there
// (a cancellation, a release), or refused, for good, with nothing changed
// (too few places, a hold that expired). Front ends give each effect their
// own form: the server an HTTP status.
type Effect int

// The effects of answers.
const (
	EffectMade Effect = iota + 1
	EffectChanged
	EffectRefused
	// EffectQueued: the request joined a waiting list, to be offered
	// places when they are freed.
	EffectQueued
)

// AnswerMembers says which members an answer's body carries beside
// "status", "workshop" and "quantity", which every answer has.
type AnswerMembers struct {
	ReservationID bool // "reservation_id": the reservation made or cancelled.
	HoldID        bool // "hold_id": the hold made, confirmed or released.
	ExpiresAt     bool // "expires_at": the deadline of the hold made.
	// Limit: "max_per_person" and "already", the workshop's limit per
	// person and the places the actor had already.
	Limit bool
	// DeliveryID: "delivery_id", the delivery sent again or given up.
	DeliveryID bool
	// EntryID: "entry_id", the waiting list entry made or left.
	EntryID bool
	// Position: "position", the entry's place in the queue when it joined.
	Position bool
}

// Names returns the names of every member of such a body, in the order of
// its encoding.
func (m AnswerMembers) Names() []string {
	names := []string{"status"}
	if m.ReservationID {
		names = append(names, "reservation_id")
	}
	if m.HoldID {
		names = append(names, "hold_id")
	}
	if m.DeliveryID {
		names = append(names, "delivery_id")
	}
	if m.EntryID {
		names = append(names, "entry_id")
	}
	names = append(names, "workshop", "quantity")
	if m.Position {
		names = append(names, "position")
	}
	if m.ExpiresAt {
		names = append(names, "expires_at")
	}
	if m.Limit {
		names = append(names, "max_per_person", "already")
	}
	return names
}

// AnswerSpec is one row of the table of authoritative answers: a status
// word a kind of operation answers with, its effect, and the members of
// its body.
type AnswerSpec struct {
	Kind    OperationKind
	Status  string
	Effect  Effect
	Members AnswerMembers
}

// Answers is the one table of authoritative answers. Every front end
// derives what it needs from it (the server its HTTP statuses, the
// clients what an answer must look like, the browser page its generated
// copy), and a new kind of operation or a new refusal adds its rows here.
var Answers = []AnswerSpec{
	{OperationReserve, StatusReserved, EffectMade, AnswerMembers{ReservationID: true}},
	{OperationReserve, StatusUnavailable, EffectRefused, AnswerMembers{}},
	{OperationReserve, StatusRegistrationNotOpen, EffectRefused, AnswerMembers{}},
	{OperationReserve, StatusRegistrationClosed, EffectRefused, AnswerMembers{}},
	{OperationReserve, StatusLimitReached, EffectRefused, AnswerMembers{Limit: true}},
	{OperationReserve, StatusWaiting, EffectQueued, AnswerMembers{EntryID: true, Position: true}},
	{OperationCancel, StatusCancelled, EffectChanged, AnswerMembers{ReservationID: true}},
	{OperationCancel, StatusAlreadyCancelled, EffectRefused, AnswerMembers{ReservationID: true}},
	{OperationHold, StatusHeld, EffectMade, AnswerMembers{HoldID: true, ExpiresAt: true}},
	{OperationHold, StatusUnavailable, EffectRefused, AnswerMembers{}},
	{OperationHold, StatusRegistrationNotOpen, EffectRefused, AnswerMembers{}},
	{OperationHold, StatusRegistrationClosed, EffectRefused, AnswerMembers{}},
	{OperationHold, StatusLimitReached, EffectRefused, AnswerMembers{Limit: true}},
	{OperationConfirm, StatusReserved, EffectMade, AnswerMembers{ReservationID: true, HoldID: true}},
	{OperationConfirm, StatusExpired, EffectRefused, AnswerMembers{HoldID: true}},
	{OperationConfirm, StatusReleased, EffectRefused, AnswerMembers{HoldID: true}},
	{OperationConfirm, StatusAlreadyConfirmed, EffectRefused, AnswerMembers{HoldID: true}},
	{OperationRelease, StatusReleased, EffectChanged, AnswerMembers{HoldID: true}},
	{OperationRelease, StatusExpired, EffectRefused, AnswerMembers{HoldID: true}},
	{OperationRelease, StatusAlreadyConfirmed, EffectRefused, AnswerMembers{HoldID: true}},
	{OperationRelease, StatusAlreadyReleased, EffectRefused, AnswerMembers{HoldID: true}},
	{OperationRetryDelivery, StatusRequeued, EffectChanged, AnswerMembers{DeliveryID: true}},
	{OperationSkipDelivery, StatusSkipped, EffectChanged, AnswerMembers{DeliveryID: true}},
	{OperationSkipDelivery, StatusAlreadyDelivered, EffectRefused, AnswerMembers{DeliveryID: true}},
	{OperationSkipDelivery, StatusAlreadySkipped, EffectRefused, AnswerMembers{DeliveryID: true}},
	{OperationLeaveWaitlist, StatusLeft, EffectChanged, AnswerMembers{EntryID: true}},
	{OperationLeaveWaitlist, StatusExpired, EffectRefused, AnswerMembers{EntryID: true}},
	{OperationLeaveWaitlist, StatusAlreadyLeft, EffectRefused, AnswerMembers{EntryID: true}},
	{OperationLeaveWaitlist, StatusAlreadyReserved, EffectRefused, AnswerMembers{EntryID: true}},
}

// SpecOf returns the row of Answers for an answer of kind with status, and
// false when kind does not answer with status.
func SpecOf(kind OperationKind, status string) (AnswerSpec, bool) {
	for _, a := range Answers {
		if a.Kind == kind && a.Status == status {
			return a, true
		}
	}
	return AnswerSpec{}, false
}

// AnswerStatuses returns every status word of Answers, each once, in the
// order of the table.
func AnswerStatuses() []string {
	var words []string
	for _, a := range Answers {
		if !slices.Contains(words, a.Status) {
			words = append(words, a.Status)
		}
	}
	return words
}

// Answer is the authoritative result of one operation: what the engine
// decided, stored in the operation's receipt and given again to every
// repeat. Its one encoding (AppendJSON) is the body of the answer:
//
//	reserve {"status":"reserved","reservation_id":"…","workshop":"…","quantity":N}
//	reserve {"status":"unavailable","workshop":"…","quantity":N}
//	reserve {"status":S,"workshop":"…","quantity":N}, S registration_not_open or registration_closed
//	reserve {"status":"limit_reached","workshop":"…","quantity":N,"max_per_person":M,"already":A}
//	reserve {"status":"waiting","entry_id":"…","workshop":"…","quantity":N,"position":P}
//	cancel  {"status":"cancelled","reservation_id":"…","workshop":"…","quantity":N}
//	cancel  {"status":"already_cancelled","reservation_id":"…","workshop":"…","quantity":N}
//	hold    {"status":"held","hold_id":"…","workshop":"…","quantity":N,"expires_at":"<RFC 3339 UTC>"}
//	hold    {"status":S,"workshop":"…","quantity":N}, S unavailable, registration_not_open or registration_closed
//	hold    {"status":"limit_reached","workshop":"…","quantity":N,"max_per_person":M,"already":A}
//	confirm {"status":"reserved","reservation_id":"…","hold_id":"…","workshop":"…","quantity":N}
//	confirm {"status":S,"hold_id":"…","workshop":"…","quantity":N}, S expired, released or already_confirmed
//	release {"status":S,"hold_id":"…","workshop":"…","quantity":N}, S released, expired, already_confirmed or already_released
//	retry_delivery {"status":"requeued","delivery_id":"…","workshop":"…","quantity":N}
//	skip_delivery  {"status":S,"delivery_id":"…","workshop":"…","quantity":N}, S skipped, already_delivered or already_skipped
//	leave_waitlist {"status":S,"entry_id":"…","workshop":"…","quantity":N}, S left, expired, already_left or already_reserved
//
// (the workshop and quantity of a delivery's answer are its event's)
//
// Kind is not encoded: the operation it answers says it. Members that only
// some kinds of operation have (a hold's id and expiry) are omitted when
// empty, so the encoding of every other answer stays the same.
type Answer struct {
	Kind          OperationKind `json:"-"`
	Status        string        `json:"status"`
	ReservationID string        `json:"reservation_id,omitempty"`
	HoldID        string        `json:"hold_id,omitempty"`
	DeliveryID    string        `json:"delivery_id,omitempty"`
	EntryID       string        `json:"entry_id,omitempty"`
	Workshop      string        `json:"workshop"`
	Quantity      int           `json:"quantity"`
	Position      int           `json:"position,omitempty"`
	ExpiresAt     time.Time     `json:"expires_at,omitzero"`
	// Limit is encoded, as "max_per_person" and "already", in a
	// limit_reached answer only.
	Limit Limit `json:"-"`
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
	err := decodeStrict(body, []strictjson.Member{
		strictjson.StringMember("status", true, func(s string) error { return checkStatus(kind, s) }, &a.Status),
		strictjson.StringMember("reservation_id", false, nil, &a.ReservationID),
		strictjson.StringMember("hold_id", false, nil, &a.HoldID),
		strictjson.StringMember("delivery_id", false, nil, &a.DeliveryID),
		strictjson.StringMember("entry_id", false, nil, &a.EntryID),
		strictjson.StringMember("workshop", true, nil, &a.Workshop),
		strictjson.IntMember("quantity", true, 1, MaxQuantity, &a.Quantity),
		strictjson.IntMember("position", false, 1, MaxQuantity, &a.Position),
		strictjson.TimeMember("expires_at", false, &a.ExpiresAt),
		strictjson.IntMember("max_per_person", false, 1, MaxQuantity, &a.Limit.MaxPerPerson),
		strictjson.IntMember("already", false, 0, MaxQuantity, &a.Limit.Already),
	})
	if err != nil {
		return Answer{}, err
	}
	return a, nil
}

// decodeStrict is strictjson.Decode with its refusal as a
// CodeRequestContract error with the same message.
func decodeStrict(body []byte, members []strictjson.Member) error {
	if err := strictjson.Decode(body, members); err != nil {
		return Errorf(CodeRequestContract, "%s", err)
	}
	return nil
}

// checkStatus reports a status that kind does not answer with.
func checkStatus(kind OperationKind, status string) error {
	if _, ok := SpecOf(kind, status); ok {
		return nil
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
