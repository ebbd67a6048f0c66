package client

import (
	"encoding/json"
	"errors"
	"mime"
	"strconv"
	"strings"
	"time"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// Operation is what an answer is classified against: the kind of the
// operation sent and what it asked for: the Request of a reserve (which
// may ask to join the waiting list), the Request and TTLSeconds of a
// hold, the ReservationID of a cancel, the HoldID of a confirm or a
// release, the DeliveryID of an operator's retry or skip of a delivery,
// the EntryID of leaving a waiting list. An answer about another
// workshop, quantity, reservation, hold, delivery or entry answers
// someone else's request.
type Operation struct {
	Kind          engine.OperationKind
	Request       engine.Request
	TTLSeconds    int
	ReservationID string
	HoldID        string
	DeliveryID    string
	EntryID       string
}

// Reserving returns the operation that reserves req.
func Reserving(req engine.Request) Operation {
	return Operation{Kind: engine.OperationReserve, Request: req}
}

// Cancelling returns the operation that cancels reservation id.
func Cancelling(id string) Operation {
	return Operation{Kind: engine.OperationCancel, ReservationID: id}
}

// Holding returns the operation that holds the places req asks for.
func Holding(req engine.HoldRequest) Operation {
	return Operation{Kind: engine.OperationHold, Request: engine.Request{Workshop: req.Workshop, Quantity: req.Quantity}, TTLSeconds: req.TTLSeconds}
}

// Confirming returns the operation that confirms hold id.
func Confirming(id string) Operation {
	return Operation{Kind: engine.OperationConfirm, HoldID: id}
}

// Releasing returns the operation that releases hold id.
func Releasing(id string) Operation {
	return Operation{Kind: engine.OperationRelease, HoldID: id}
}

// RetryingDelivery returns the operation that sends delivery id again.
func RetryingDelivery(id string) Operation {
	return Operation{Kind: engine.OperationRetryDelivery, DeliveryID: id}
}

// SkippingDelivery returns the operation that gives delivery id up.
func SkippingDelivery(id string) Operation {
	return Operation{Kind: engine.OperationSkipDelivery, DeliveryID: id}
}

// LeavingWaitlist returns the operation that takes waiting list entry id
// off its list.
func LeavingWaitlist(id string) Operation {
	return Operation{Kind: engine.OperationLeaveWaitlist, EntryID: id}
}

// answers reports whether a, decoded from body and sent with HTTP status,
// is the answer to op: of op's kind, with the status that answer is sent
// with, with exactly the members of that answer (engine.Answers), ids
// of the right form, and about op's request: the same workshop and
// quantity for a reserve or a hold, the same reservation for a cancel, the
// same hold for a confirm or a release, the same delivery for a retry or
// a skip of one, the same entry for leaving a waiting list. A "waiting"
// answer (202, decided: the request joined the waiting list) answers only
// a reservation request that asked to join one.
func (op Operation) answers(a engine.Answer, body []byte, status int) bool {
	spec, ok := engine.SpecOf(op.Kind, a.Status)
	if !ok || api.StatusOfAnswer(op.Kind, a.Status) != status {
		return false
	}
	m := spec.Members
	if !hasMembers(body, m.Names()) {
		return false
	}
	if (m.ReservationID && !engine.IsReservationID(a.ReservationID)) || (m.HoldID && !engine.IsHoldID(a.HoldID)) || (m.DeliveryID && a.DeliveryID == "") ||
		(m.EntryID && !engine.IsWaitEntryID(a.EntryID)) {
		return false
	}
	if a.Status == engine.StatusWaiting && !op.Request.Waitlist {
		return false
	}
	switch op.Kind {
	case engine.OperationCancel:
		return a.ReservationID == op.ReservationID && engine.ValidateWorkshopID(a.Workshop) == nil
	case engine.OperationConfirm, engine.OperationRelease:
		return a.HoldID == op.HoldID && engine.ValidateWorkshopID(a.Workshop) == nil
	case engine.OperationRetryDelivery, engine.OperationSkipDelivery:
		return a.DeliveryID == op.DeliveryID && engine.ValidateWorkshopID(a.Workshop) == nil
	case engine.OperationLeaveWaitlist:
		return a.EntryID == op.EntryID && engine.ValidateWorkshopID(a.Workshop) == nil
	}
	return a.Workshop == op.Request.Workshop && a.Quantity == op.Request.Quantity
}

// hasMembers reports whether body, a JSON object that engine.DecodeAnswer
// accepted (so with distinct, known members), has exactly the members
// names: an answer that lacks one or carries one of another answer is not
// the documented answer.
func hasMembers(body []byte, names []string) bool {
	var members map[string]json.RawMessage
	if json.Unmarshal(body, &members) != nil || len(members) != len(names) {
		return false
	}
	for _, n := range names {
		if _, ok := members[n]; !ok {
			return false
		}
	}
	return true
}

// Reply is one HTTP answer as it came.
type Reply struct {
	Status      int
	ContentType string
	Replayed    bool
	Body        []byte
	// RetryAfter is the answer's Retry-After in whole seconds (at most
	// MaxRetryAfter), zero without one: how long the server asks a client
	// to wait before it sends an undecided request again.
	RetryAfter time.Duration
}

// MaxRetryAfter bounds Reply.RetryAfter.
const MaxRetryAfter = time.Minute

// retryAfter reads a Retry-After of delay-seconds; an HTTP date or
// anything else reads as none.
func retryAfter(v string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return 0
	}
	return min(time.Duration(n)*time.Second, MaxRetryAfter)
}

// Result is what one answer to an operation means. Exactly one of three
// holds: Answer is set (the operation's authoritative answer, Decided), or
// Problem is set (the server refused or failed; Decided says which), or
// neither (an answer that is not the documented one: a garbled body, a
// proxy's page, the answer to another request; never Decided).
type Result struct {
	Reply
	Answer  engine.Answer // Its Status is empty without an answer.
	Problem *engine.Error
	// Decided reports whether the answer decides the operation: the caller
	// records it and never sends the operation again. An undecided one
	// leaves the outcome unknown; the caller retries with the same key.
	Decided bool
}

// Classify is the one rule of every Go client for what an answer to op
// means: a JSON answer of op's kind, with its HTTP status, about exactly
// op's request, is authoritative; a problem with a code is a decided
// refusal unless its code is undecided (api.Undecided: body_incomplete,
// store_unavailable, identity_unavailable, internal) or its status is not
// a refusal (not a 4xx, or 408 or 429, whatever its code); anything else
// is undecided.
// reply.Replayed is kept only on an answer.
func Classify(op Operation, reply Reply) Result {
	r := Result{Reply: reply}
	r.Replayed = false
	switch mt, _, _ := mime.ParseMediaType(reply.ContentType); mt {
	case api.MediaJSON:
		if a, err := engine.DecodeAnswer(op.Kind, reply.Body); err == nil && op.answers(a, reply.Body, reply.Status) {
			r.Answer, r.Decided, r.Replayed = a, true, reply.Replayed
		}
	case api.MediaProblem:
		if p := problemOf(reply.Body); p != nil {
			r.Problem, r.Decided = p, decides(reply.Status, p.Code)
		}
	}
	return r
}

// Err returns nil for an answer, the *engine.Error of a problem, and an
// *UnexpectedResponseError for anything else.
func (r Result) Err() error {
	switch {
	case r.Answer.Status != "":
		return nil
	case r.Problem != nil:
		return r.Problem
	}
	return &UnexpectedResponseError{Status: r.Status, ContentType: r.ContentType, Body: r.Body}
}

// problemOf decodes a problem detail with a code, nil for anything else.
func problemOf(body []byte) *engine.Error {
	var p api.Problem
	if json.Unmarshal(body, &p) != nil || p.Code == "" {
		return nil
	}
	return &engine.Error{Code: p.Code, Message: p.Detail}
}

// decides reports whether a problem with code, answered with HTTP status,
// decides its request; status 0 means the status is not known, and the
// code alone decides then.
//
// invalid_idempotency_key decides nothing either: every client of this
// package checks its keys before it sends them, so the refusal of one
// means a daemon that does not accept that form of key (one from before
// UUIDv7 keys, still serving during an upgrade), while another daemon of
// the store may have decided an earlier send of the same key.
func decides(status int, code string) bool {
	if api.Undecided(code) || code == engine.CodeInvalidIdempotencyKey {
		return false
	}
	return status == 0 || (status >= 400 && status < 500 && status != 408 && status != 429)
}

// Undecided applies the rule of Classify to a call that returned status and
// err instead of a Result (WhoAmI, say): there was no answer at all (the
// daemon unreachable, the connection broken, a timeout) or one that is not
// the documented one, or a problem that Classify calls undecided. status 0
// means the caller does not know the status. A nil err is an answer, and
// every other problem is a decided refusal.
func Undecided(status int, err error) bool {
	if err == nil {
		return false
	}
	var ee *engine.Error
	return !errors.As(err, &ee) || !decides(status, ee.Code)
}
