package intent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/strictjson"
)

// SchemaVersion is the version of the state file's record that this package
// writes and reads. Any change to the record (a new member, a new meaning)
// bumps it; a file with a higher version is refused as written by a newer
// reservectl, never guessed at. Version 2 adds the member "superseded";
// a version 1 record, which has none, reads as it is and is written as
// version 2 the next time it is saved. Version 3 adds the outcome status
// StatusAnswerExpired: an earlier version recorded such an answer as
// StatusRejected, and reading its record upgrades that outcome (see
// upgradeExpired), which is written as version 3 the next time it is saved.
// Version 4 adds waiting lists: the reserve payload's member "waitlist",
// its outcome status engine.StatusWaiting, and the kind KindLeaveWaitlist;
// a record of an earlier version has none of them, reads as it is and is
// written as version 4 the next time it is saved. Version 5 allows UUIDv7
// operation keys, which NewKey makes: a reservectl of version 4 or
// earlier refuses such a file as newer instead of calling it corrupt and
// advising to start over, which would send a decided intent again under
// a new key. A record of an earlier version reads as it is and is written
// as version 5 the next time it is saved.
const SchemaVersion = 5

// waitlistSchemaVersion is the first record version that knows waiting
// lists.
const waitlistSchemaVersion = 4

// expiredSchemaVersion is the first record version that knows
// StatusAnswerExpired.
const expiredSchemaVersion = 3

// minSchemaVersion is the oldest record version this package reads.
const minSchemaVersion = 1

// KindReserve is the kind of an intent to reserve places; its payload is an
// engine.Request, which may ask to join the workshop's waiting list when
// the places cannot be reserved.
const KindReserve = engine.OperationReserve

// KindCancel is the kind of an intent to cancel a reservation; its payload
// is a CancelRequest.
const KindCancel = engine.OperationCancel

// KindHold is the kind of an intent to hold places until a deadline; its
// payload is an engine.HoldRequest.
const KindHold = engine.OperationHold

// KindConfirm and KindRelease are the kinds of the intents to confirm and to
// release a hold; their payload is a HoldRef.
const (
	KindConfirm = engine.OperationConfirm
	KindRelease = engine.OperationRelease
)

// KindRetryDelivery and KindSkipDelivery are the kinds of an admin's
// intents to send a delivery again and to give one up; their payload is a
// DeliveryRef.
const (
	KindRetryDelivery = engine.OperationRetryDelivery
	KindSkipDelivery  = engine.OperationSkipDelivery
)

// KindLeaveWaitlist is the kind of an intent to leave a waiting list (and
// decline the places it offered, if any); its payload is an EntryRef.
const KindLeaveWaitlist = engine.OperationLeaveWaitlist

// kinds maps every known intent kind to the decoder of its payload, which
// keeps the decoded value in the intent. A new kind is added here together
// with its constructor.
var kinds = map[engine.OperationKind]func(in *Intent) error{
	KindReserve: func(in *Intent) (err error) {
		in.request, err = api.DecodeRequest(in.Payload)
		return err
	},
	KindCancel: func(in *Intent) (err error) {
		in.cancel, err = DecodeCancelRequest(in.Payload)
		return err
	},
	KindHold: func(in *Intent) (err error) {
		in.hold, err = api.DecodeHoldRequest(in.Payload)
		return err
	},
	KindConfirm:       decodeHoldRef,
	KindRelease:       decodeHoldRef,
	KindRetryDelivery: decodeDeliveryRef,
	KindSkipDelivery:  decodeDeliveryRef,
	KindLeaveWaitlist: func(in *Intent) (err error) {
		in.entryRef, err = DecodeEntryRef(in.Payload)
		return err
	},
}

func decodeHoldRef(in *Intent) (err error) {
	in.holdRef, err = DecodeHoldRef(in.Payload)
	return err
}

// CancelRequest is the payload of a KindCancel intent: the reservation to
// cancel.
type CancelRequest struct {
	ReservationID string `json:"reservation_id"`
}

// DecodeCancelRequest decodes a CancelRequest strictly.
func DecodeCancelRequest(payload []byte) (CancelRequest, error) {
	var c CancelRequest
	err := api.DecodeStrict(payload, []strictjson.Member{
		strictjson.StringMember("reservation_id", true, validReservationID, &c.ReservationID),
	})
	return c, err
}

func validReservationID(id string) error {
	if !engine.IsReservationID(id) {
		return errors.New("must be a reservation id of 32 lowercase hex digits")
	}
	return nil
}

// HoldRef is the payload of a KindConfirm or KindRelease intent: the hold
// to confirm or release. (The request body of both is the empty object;
// the hold is in their path.)
type HoldRef struct {
	HoldID string `json:"hold_id"`
}

// DecodeHoldRef decodes a HoldRef strictly.
func DecodeHoldRef(payload []byte) (HoldRef, error) {
	var h HoldRef
	err := api.DecodeStrict(payload, []strictjson.Member{
		strictjson.StringMember("hold_id", true, validHoldID, &h.HoldID),
	})
	return h, err
}

func validHoldID(id string) error {
	if !engine.IsHoldID(id) {
		return errors.New("must be a hold id of 32 lowercase hex digits")
	}
	return nil
}

// EntryRef is the payload of a KindLeaveWaitlist intent: the waiting list
// entry to take off its list. (The request body is the empty object; the
// entry is in its path.)
type EntryRef struct {
	EntryID string `json:"entry_id"`
}

// DecodeEntryRef decodes an EntryRef strictly.
func DecodeEntryRef(payload []byte) (EntryRef, error) {
	var e EntryRef
	err := api.DecodeStrict(payload, []strictjson.Member{
		strictjson.StringMember("entry_id", true, validEntryID, &e.EntryID),
	})
	return e, err
}

func validEntryID(id string) error {
	if !engine.IsWaitEntryID(id) {
		return errors.New("must be a waiting list entry id of 32 lowercase hex digits")
	}
	return nil
}

func decodeDeliveryRef(in *Intent) (err error) {
	in.deliveryRef, err = DecodeDeliveryRef(in.Payload)
	return err
}

// DeliveryRef is the payload of a KindRetryDelivery or KindSkipDelivery
// intent: the delivery to send again or give up. (The request body of both
// is the empty object; the delivery is in their path.)
type DeliveryRef struct {
	DeliveryID string `json:"delivery_id"`
}

// MaxDeliveryIDLen bounds the delivery id of a DeliveryRef; the server
// knows no longer one.
const MaxDeliveryIDLen = 200

// DecodeDeliveryRef decodes a DeliveryRef strictly.
func DecodeDeliveryRef(payload []byte) (DeliveryRef, error) {
	var d DeliveryRef
	err := api.DecodeStrict(payload, []strictjson.Member{
		strictjson.StringMember("delivery_id", true, ValidDeliveryID, &d.DeliveryID),
	})
	return d, err
}

// ValidDeliveryID refuses what cannot name a delivery in a request's
// path: an empty id, one longer than MaxDeliveryIDLen, or one with a
// character other than a letter, a digit, "-", "_" or ".". Whether a
// delivery has the id only the server says.
func ValidDeliveryID(id string) error {
	if id == "" || len(id) > MaxDeliveryIDLen {
		return fmt.Errorf("must be a delivery id of 1 to %d characters", MaxDeliveryIDLen)
	}
	for _, c := range []byte(id) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return errors.New("must be a delivery id of letters, digits, \"-\", \"_\" and \".\", as the delivery view lists it")
		}
	}
	return nil
}

// Status is where an operation of the journal stands: the status word of
// its authoritative answer (one that its kind answers with, such as
// engine.StatusReserved or engine.StatusHeld), StatusRejected, or
// StatusOpen while it has none.
type Status string

const (
	// StatusRejected is an authoritative refusal: any decided 4xx problem
	// (conflict, request contract, unknown workshop, authentication).
	StatusRejected Status = engine.OutcomeRejected
	// StatusOpen is an operation without an authoritative answer: never
	// sent, or sent without one. It is never recorded as an outcome.
	StatusOpen Status = engine.OutcomeUnknown
	// StatusAnswerExpired is the refusal engine.CodeOperationExpired of an
	// open operation: the server decided the operation earlier, under its
	// key, but no longer keeps the answer (its receipt was purged after the
	// retention period), so what it did is not known here and is never done
	// again. It is a decided refusal like StatusRejected, with a 4xx, but
	// not one that says nothing was done.
	StatusAnswerExpired Status = engine.CodeOperationExpired
)

// Record is where one operation stands: the operation key (a lowercase
// canonical UUIDv7, or a UUIDv4 in a journal of an earlier reservectl)
// sent as Idempotency-Key with every attempt, how many sends were begun,
// each counted before it starts, and its authoritative
// outcome O once there is one. The intent of the state file and every row
// of an import plan hold one; O is the outcome as that file records it.
type Record[O Settlement[O]] struct {
	Key      engine.OperationKey `json:"operation"`
	Attempts int                 `json:"attempts"`
	Outcome  *O                  `json:"outcome,omitempty"`
}

// Settlement is an authoritative outcome as a file records it.
type Settlement[O any] interface {
	// SameAnswer reports whether two outcomes record the same answer.
	SameAnswer(O) bool
}

// Settled reports whether r has an authoritative outcome.
func (r *Record[O]) Settled() bool { return r.Outcome != nil }

// Settle is the one step that ends an operation on its authoritative
// outcome o. Settling again with the same answer does nothing; with a
// different answer it fails with ErrAlreadySettled, because an
// authoritative outcome is final.
func (r *Record[O]) Settle(o O) error {
	if r.Outcome != nil {
		if (*r.Outcome).SameAnswer(o) {
			return nil
		}
		return fmt.Errorf("settle %s: %w", r.Key, ErrAlreadySettled)
	}
	r.Outcome = &o
	return nil
}

// Intent is the record in the state file: one business intent of the CLI,
// its operation Record, the payload bound to its key, and where and as whom
// it is sent. An intent without an Outcome is open: its result is unknown
// and only a retry with the same key and payload may follow.
type Intent struct {
	// Schema is SchemaVersion when the intent was written.
	Schema int `json:"schema"`
	// Kind says what the payload is, for example KindReserve.
	Kind engine.OperationKind `json:"kind"`
	Record[Outcome]
	// Payload is the request body of the intent as compact JSON, fixed for
	// its lifetime.
	Payload json.RawMessage `json:"payload"`
	// Server is where the intent is sent, as made by SocketServer or
	// URLServer.
	Server string `json:"server"`
	// Actor is the authenticated actor (from whoami) the intent belongs to.
	Actor string `json:"actor"`
	// CreatedAt is when the intent was first saved.
	CreatedAt time.Time `json:"created_at"`
	// UpdatedAt is when the intent was last saved.
	UpdatedAt time.Time `json:"updated_at"`
	// Superseded are the authoritative outcomes the server no longer
	// stood by, oldest first: each was recorded, and a later send of the
	// same key got a different authoritative answer, which only a server
	// that lost the receipt (a database restored from an earlier backup)
	// gives. The effect each names was lost with that receipt.
	Superseded []Outcome `json:"superseded,omitempty"`

	// request, cancel, hold, holdRef, deliveryRef and entryRef are the
	// decoded payload of a KindReserve, KindCancel, KindHold, a KindConfirm
	// or KindRelease, a KindRetryDelivery or KindSkipDelivery and a
	// KindLeaveWaitlist intent, set when the intent is made or read.
	request     engine.Request
	cancel      CancelRequest
	hold        engine.HoldRequest
	holdRef     HoldRef
	deliveryRef DeliveryRef
	entryRef    EntryRef
}

// intentJSON is the state file's record with its members in the file's
// order, which embedding the Record would change.
type intentJSON struct {
	Schema     int                  `json:"schema"`
	Kind       engine.OperationKind `json:"kind"`
	Key        engine.OperationKey  `json:"operation"`
	Payload    json.RawMessage      `json:"payload"`
	Server     string               `json:"server"`
	Actor      string               `json:"actor"`
	Attempts   int                  `json:"attempts"`
	CreatedAt  time.Time            `json:"created_at"`
	UpdatedAt  time.Time            `json:"updated_at"`
	Outcome    *Outcome             `json:"outcome,omitempty"`
	Superseded []Outcome            `json:"superseded,omitempty"`
}

// MarshalJSON encodes in as the state file's record. It leaves escaping
// HTML to the encoder that calls it.
func (in Intent) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(intentJSON{in.Schema, in.Kind, in.Key, in.Payload, in.Server, in.Actor, in.Attempts, in.CreatedAt, in.UpdatedAt, in.Outcome, in.Superseded})
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), err
}

// Outcome is the authoritative answer to an intent.
type Outcome struct {
	// Status is the status word of the answer or StatusRejected.
	Status Status `json:"status"`
	// HTTPStatus is the answer's HTTP status (api.StatusOfAnswer), or a 4xx
	// for StatusRejected.
	HTTPStatus int `json:"http_status"`
	// Body is the server's response body, byte for byte.
	Body []byte `json:"body"`
	// ReservationID is the reservation's id for an answer that has one.
	ReservationID string `json:"reservation_id,omitempty"`
	// SettledAt is when the outcome was recorded.
	SettledAt time.Time `json:"settled_at"`
}

// NewKey returns a fresh operation key: a UUIDv7 (engine.NewOperationKey),
// whose receipt the daemon stores next to those of the moment it was made.
func NewKey() (engine.OperationKey, error) { return engine.NewOperationKey() }

// New returns a fresh open intent of the given kind with a new operation key.
// It checks the kind, the payload, the server (see SocketServer and
// URLServer) and the actor, but does not write anything: Save or
// RecordAttempt it before the first send.
func New(kind engine.OperationKind, payload json.RawMessage, server, actor string) (*Intent, error) {
	key, err := NewKey()
	if err != nil {
		return nil, err
	}
	in := &Intent{
		Schema:  SchemaVersion,
		Kind:    kind,
		Record:  Record[Outcome]{Key: key},
		Payload: payload,
		Server:  server,
		Actor:   actor,
	}
	if err := in.validate(false); err != nil {
		return nil, fmt.Errorf("new %s intent: %w", kind, err)
	}
	in.Payload = compact(payload)
	return in, nil
}

// NewReserve returns a fresh open intent to reserve req, as New does. Its
// payload has the member "waitlist" only when req.Waitlist is set, so the
// payload of a request that does not ask to wait is what versions before
// waiting lists wrote.
func NewReserve(req engine.Request, server, actor string) (*Intent, error) {
	payload, _ := json.Marshal(req) // Strings, an int and a bool always encode.
	return New(KindReserve, payload, server, actor)
}

// NewLeaveWaitlist returns a fresh open intent to leave waiting list
// entry id, as New does.
func NewLeaveWaitlist(id, server, actor string) (*Intent, error) {
	payload, _ := json.Marshal(EntryRef{EntryID: id}) // A string always encodes.
	return New(KindLeaveWaitlist, payload, server, actor)
}

// EntryRef returns the payload of a KindLeaveWaitlist intent.
func (in *Intent) EntryRef() (EntryRef, error) {
	if in.Kind != KindLeaveWaitlist {
		return EntryRef{}, fmt.Errorf("intent %s is a %q intent, not a %q one", in.Key, in.Kind, KindLeaveWaitlist)
	}
	return in.entryRef, nil
}

// WaitingEntry returns the id of the waiting list entry that in made: in
// is a KindReserve intent settled on a "waiting" answer, whose recorded
// body names the entry. It reports false for every other intent.
func (in *Intent) WaitingEntry() (string, bool) {
	if in == nil || in.Kind != KindReserve || in.Outcome == nil || in.Outcome.Status != engine.StatusWaiting {
		return "", false
	}
	id, err := waitingEntryID(in.Outcome.Body)
	return id, err == nil
}

// waitingEntryID returns the entry id of the body of a "waiting" answer.
func waitingEntryID(body []byte) (string, error) {
	a, err := engine.DecodeAnswer(KindReserve, body)
	if err != nil {
		return "", err
	}
	if a.Status != engine.StatusWaiting || !engine.IsWaitEntryID(a.EntryID) || a.Position < 1 {
		return "", errors.New("is not a waiting answer with an entry id and a position")
	}
	return a.EntryID, nil
}

// NewCancel returns a fresh open intent to cancel reservation id, as New
// does.
func NewCancel(id, server, actor string) (*Intent, error) {
	payload, _ := json.Marshal(CancelRequest{ReservationID: id}) // A string always encodes.
	return New(KindCancel, payload, server, actor)
}

// NewHold returns a fresh open intent to hold the places req asks for, as
// New does.
func NewHold(req engine.HoldRequest, server, actor string) (*Intent, error) {
	payload, _ := json.Marshal(req) // A string and ints always encode.
	return New(KindHold, payload, server, actor)
}

// NewSettleHold returns a fresh open intent of kind KindConfirm or
// KindRelease for hold id, as New does.
func NewSettleHold(kind engine.OperationKind, id, server, actor string) (*Intent, error) {
	if kind != KindConfirm && kind != KindRelease {
		return nil, fmt.Errorf("new intent for hold %s: kind %q is neither %q nor %q", id, kind, KindConfirm, KindRelease)
	}
	payload, _ := json.Marshal(HoldRef{HoldID: id}) // A string always encodes.
	return New(kind, payload, server, actor)
}

// NewDeliveryCorrection returns a fresh open intent of kind
// KindRetryDelivery or KindSkipDelivery for delivery id, as New does.
func NewDeliveryCorrection(kind engine.OperationKind, id, server, actor string) (*Intent, error) {
	if kind != KindRetryDelivery && kind != KindSkipDelivery {
		return nil, fmt.Errorf("new intent for delivery %s: kind %q is neither %q nor %q", id, kind, KindRetryDelivery, KindSkipDelivery)
	}
	payload, _ := json.Marshal(DeliveryRef{DeliveryID: id}) // A string always encodes.
	return New(kind, payload, server, actor)
}

// DeliveryRef returns the payload of a KindRetryDelivery or
// KindSkipDelivery intent.
func (in *Intent) DeliveryRef() (DeliveryRef, error) {
	if in.Kind != KindRetryDelivery && in.Kind != KindSkipDelivery {
		return DeliveryRef{}, fmt.Errorf("intent %s is a %q intent, not a %q or %q one", in.Key, in.Kind, KindRetryDelivery, KindSkipDelivery)
	}
	return in.deliveryRef, nil
}

// HoldRequest returns the payload of a KindHold intent.
func (in *Intent) HoldRequest() (engine.HoldRequest, error) {
	if in.Kind != KindHold {
		return engine.HoldRequest{}, fmt.Errorf("intent %s is a %q intent, not a %q one", in.Key, in.Kind, KindHold)
	}
	return in.hold, nil
}

// HoldRef returns the payload of a KindConfirm or KindRelease intent.
func (in *Intent) HoldRef() (HoldRef, error) {
	if in.Kind != KindConfirm && in.Kind != KindRelease {
		return HoldRef{}, fmt.Errorf("intent %s is a %q intent, not a %q or %q one", in.Key, in.Kind, KindConfirm, KindRelease)
	}
	return in.holdRef, nil
}

// HeldHold returns the id of the hold that in made: in is a KindHold intent
// settled on a "held" answer, whose recorded body names the hold. It
// reports false for every other intent.
func (in *Intent) HeldHold() (string, bool) {
	if in == nil || in.Kind != KindHold || in.Outcome == nil || in.Outcome.Status != engine.StatusHeld {
		return "", false
	}
	id, err := heldHoldID(in.Outcome.Body)
	return id, err == nil
}

// heldHoldID returns the hold id of the body of a "held" answer.
func heldHoldID(body []byte) (string, error) {
	a, err := engine.DecodeAnswer(KindHold, body)
	if err != nil {
		return "", err
	}
	if a.Status != engine.StatusHeld || !engine.IsHoldID(a.HoldID) {
		return "", errors.New("is not a held answer with a hold id")
	}
	return a.HoldID, nil
}

// CancelRequest returns the payload of a KindCancel intent.
func (in *Intent) CancelRequest() (CancelRequest, error) {
	if in.Kind != KindCancel {
		return CancelRequest{}, fmt.Errorf("intent %s is a %q intent, not a %q one", in.Key, in.Kind, KindCancel)
	}
	return in.cancel, nil
}

// Request returns the payload of a KindReserve intent.
func (in *Intent) Request() (engine.Request, error) {
	if in.Kind != KindReserve {
		return engine.Request{}, fmt.Errorf("intent %s is a %q intent, not a %q one", in.Key, in.Kind, KindReserve)
	}
	return in.request, nil
}

// Effect says what the settled intent did, by its outcome's row of
// engine.Answers: engine.EffectMade, EffectChanged, EffectQueued (it
// joined a waiting list) or EffectRefused, which a rejection is too (a
// decided refusal stores nothing). It returns 0
// (not known) for an open intent and for StatusAnswerExpired, whose answer
// the server no longer keeps.
func (in *Intent) Effect() engine.Effect {
	if in == nil || in.Outcome == nil {
		return 0
	}
	switch in.Outcome.Status {
	case StatusRejected:
		return engine.EffectRefused
	case StatusAnswerExpired:
		return 0
	}
	spec, _ := engine.SpecOf(in.Kind, string(in.Outcome.Status))
	return spec.Effect
}

// recorded reports whether in records an outcome of status s, as its
// outcome or a superseded one.
func (in *Intent) recorded(s Status) bool {
	if in.Outcome != nil && in.Outcome.Status == s {
		return true
	}
	return slices.ContainsFunc(in.Superseded, func(o Outcome) bool { return o.Status == s })
}

// upgradeExpired gives every outcome that a record of a schema version
// before StatusAnswerExpired settled as StatusRejected on the refusal
// engine.CodeOperationExpired that status: those versions recorded that
// refusal as a rejection, which says that nothing was done, while the
// server had decided the operation and only its answer was gone.
func (in *Intent) upgradeExpired() {
	if in.Schema >= expiredSchemaVersion {
		return
	}
	up := func(o *Outcome) {
		if o.Status == StatusRejected && problemCode(o.Body) == engine.CodeOperationExpired {
			o.Status = StatusAnswerExpired
		}
	}
	if in.Outcome != nil {
		up(in.Outcome)
	}
	for i := range in.Superseded {
		up(&in.Superseded[i])
	}
}

// problemCode returns the code of the problem detail body, "" for a body
// that is none.
func problemCode(body []byte) string {
	var p api.Problem
	if json.Unmarshal(body, &p) != nil {
		return ""
	}
	return p.Code
}

// IsOpen reports whether in is an intent without an authoritative outcome.
// A nil intent (no state file) is not open.
func (in *Intent) IsOpen() bool {
	return in != nil && !in.Settled()
}

// CheckRetry refuses, with a *MismatchError, a retry of in by another actor
// or to another server than the ones recorded; server must be normalised as
// the recorded one is (SocketServer, URLServer).
func (in *Intent) CheckRetry(server, actor string) error {
	if in.Server == server && in.Actor == actor {
		return nil
	}
	return &MismatchError{
		Key:            in.Key,
		RecordedActor:  in.Actor,
		Actor:          actor,
		RecordedServer: in.Server,
		Server:         server,
	}
}

// compact returns a compact copy of the valid JSON text data, the one form
// in which a payload is kept in memory (the state file holds it indented).
func compact(data []byte) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, data); err != nil {
		return bytes.Clone(data) // Unreachable: data was validated.
	}
	return b.Bytes()
}

// validate checks every rule of the record; saved says whether the times of
// a saved intent must be set as well.
func (in *Intent) validate(saved bool) error {
	switch {
	case in.Schema == 0:
		return errors.New("member \"schema\" is missing")
	case in.Schema > SchemaVersion:
		return fmt.Errorf("schema version %d is newer than this reservectl understands (%d); use the reservectl that wrote it", in.Schema, SchemaVersion)
	case in.Schema < minSchemaVersion:
		return fmt.Errorf("schema version %d is not supported (this reservectl reads %d to %d)", in.Schema, minSchemaVersion, SchemaVersion)
	case in.Schema == 1 && len(in.Superseded) > 0:
		return errors.New("member \"superseded\" is not part of schema version 1")
	case len(in.Superseded) > 0 && in.Outcome == nil:
		return errors.New("member \"superseded\" without an outcome")
	case in.Schema < expiredSchemaVersion && in.recorded(StatusAnswerExpired):
		return fmt.Errorf("status %q is not part of schema version %d", StatusAnswerExpired, in.Schema)
	}
	for _, o := range in.Superseded {
		if err := o.validate(in.Kind); err != nil {
			return fmt.Errorf("member \"superseded\": %w", err)
		}
	}
	if in.Kind == "" {
		return errors.New("member \"kind\" is missing")
	}
	decodePayload, ok := kinds[in.Kind]
	if !ok {
		return fmt.Errorf("kind %q is unknown to this reservectl", in.Kind)
	}
	if in.Key == "" {
		return errors.New("member \"operation\" is missing")
	}
	if !engine.IsOperationKey(in.Key) {
		return fmt.Errorf("operation key %q is not a lowercase canonical UUIDv7 or UUIDv4", in.Key)
	}
	if len(in.Payload) == 0 {
		return errors.New("member \"payload\" is missing")
	}
	if err := decodePayload(in); err != nil {
		return fmt.Errorf("payload: %w", err)
	}
	if in.Schema < waitlistSchemaVersion && (in.Kind == KindLeaveWaitlist || in.request.Waitlist || in.recorded(engine.StatusWaiting)) {
		return fmt.Errorf("waiting lists are not part of schema version %d", in.Schema)
	}
	if in.Kind == KindReserve && !in.request.Waitlist && in.recorded(engine.StatusWaiting) {
		return fmt.Errorf("status %q answers only a reservation that asked to join the waiting list", engine.StatusWaiting)
	}
	if err := validServer(in.Server); err != nil {
		return err
	}
	if in.Actor == "" {
		return errors.New("member \"actor\" is missing")
	}
	if err := engine.ValidateActor(in.Actor); err != nil {
		return err
	}
	if in.Attempts < 0 {
		return fmt.Errorf("attempts %d is negative", in.Attempts)
	}
	if saved && in.CreatedAt.IsZero() {
		return errors.New("member \"created_at\" is missing")
	}
	if saved && in.UpdatedAt.IsZero() {
		return errors.New("member \"updated_at\" is missing")
	}
	if in.Outcome != nil {
		if err := in.Outcome.validate(in.Kind); err != nil {
			return fmt.Errorf("outcome: %w", err)
		}
	}
	return nil
}

// validate checks that o is a consistent authoritative outcome of an
// intent of kind: a status that kind answers with, sent with its HTTP
// status, or StatusRejected with a 4xx; a reservation id exactly where the
// answer has one; the hold in the body of a hold made.
func (o *Outcome) validate(kind engine.OperationKind) error {
	want := api.StatusOfAnswer(kind, string(o.Status))
	switch {
	case o.Status == "":
		return errors.New("member \"status\" is missing")
	case want == 0 && !o.Status.Refusal():
		return fmt.Errorf("status %q is not one of %s", o.Status, strings.Join(statusesOf(kind), ", "))
	case want != 0 && o.HTTPStatus != want:
		return fmt.Errorf("status %q needs HTTP status %d, not %d", o.Status, want, o.HTTPStatus)
	case o.Status.Refusal() && (o.HTTPStatus < 400 || o.HTTPStatus > 499):
		return fmt.Errorf("status %q needs an HTTP status from 400 to 499, not %d", o.Status, o.HTTPStatus)
	}
	var members engine.AnswerMembers
	if spec, ok := engine.SpecOf(kind, string(o.Status)); ok {
		members = spec.Members
	}
	switch {
	case members.ReservationID && !engine.IsReservationID(o.ReservationID):
		return fmt.Errorf("status %q needs a reservation id of 32 lowercase hex digits, not %q", o.Status, o.ReservationID)
	case !members.ReservationID && o.ReservationID != "":
		return fmt.Errorf("status %q has no reservation id, but %q is recorded", o.Status, o.ReservationID)
	}
	if kind == KindHold && o.Status == engine.StatusHeld {
		if _, err := heldHoldID(o.Body); err != nil {
			return fmt.Errorf("status %q needs the body of the hold made: %w", o.Status, err)
		}
	}
	if kind == KindReserve && o.Status == engine.StatusWaiting {
		if _, err := waitingEntryID(o.Body); err != nil {
			return fmt.Errorf("status %q needs the body of the entry made: %w", o.Status, err)
		}
	}
	if o.SettledAt.IsZero() {
		return errors.New("member \"settled_at\" is missing")
	}
	return nil
}

// statusesOf lists, quoted, the statuses an intent of kind can settle on.
func statusesOf(kind engine.OperationKind) []string {
	var quoted []string
	for _, s := range engine.AnswerStatuses() {
		if api.StatusOfAnswer(kind, s) != 0 {
			quoted = append(quoted, strconv.Quote(s))
		}
	}
	return append(quoted, strconv.Quote(string(StatusRejected)), strconv.Quote(string(StatusAnswerExpired)))
}

// Refusal reports whether s is a decided refusal (a problem) rather than
// the status word of an answer.
func (s Status) Refusal() bool { return s == StatusRejected || s == StatusAnswerExpired }

// SameAnswer reports whether o and p record the same answer.
func (o Outcome) SameAnswer(p Outcome) bool {
	return o.Status == p.Status && o.HTTPStatus == p.HTTPStatus &&
		o.ReservationID == p.ReservationID && bytes.Equal(o.Body, p.Body)
}
