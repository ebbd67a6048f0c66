// Package api holds the wire contract of reserve's HTTP API v1 that the
// server writes and the client reads: header names, media types, paths,
// the JSON bodies that are not already engine types, the strict decoders of
// every request body (the CLI's journal decodes its stored payloads with
// them too), the Idempotency-Key header's parser, and the error codes of
// the refusals only the HTTP edge makes, with the one rule of which codes
// leave a request undecided. Keeping them here means they exist once, not
// once per side.
//
// It may import packages engine and strictjson; it must not import
// net/http, the server, the client or any command tree.
package api

import (
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/strictjson"
)

// Header names and media types of the API.
const (
	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderReplayed       = "Idempotent-Replayed"
	MediaJSON            = "application/json"
	MediaMergePatch      = "application/merge-patch+json"
	MediaCSV             = "text/csv"
	MediaProblem         = "application/problem+json"
	MediaBackup          = "application/octet-stream"
)

// HeaderRequestID names one request in the daemon's log: the caller's own
// id when it sends a valid one (ValidRequestID), else one the daemon makes;
// every answer carries it.
const HeaderRequestID = "X-Request-Id"

// MaxRequestIDLength bounds the length of a request id a caller sends.
const MaxRequestIDLength = 128

// ValidRequestID reports whether id may be used as a request's id as the
// caller sent it: 1 to MaxRequestIDLength printable ASCII characters
// (space to tilde), which a log line can quote as they are.
func ValidRequestID(id string) bool {
	if id == "" || len(id) > MaxRequestIDLength {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < ' ' || id[i] > '~' {
			return false
		}
	}
	return true
}

// MaxBodyBytes bounds every request body the API reads (4 KiB) but a
// batch's, which MaxBatchBytes bounds (256 KiB), and a workshop's, which
// MaxWorkshopBytes bounds (32 KiB: a description of 2,000 characters,
// each escaped as JSON at worst).
const (
	MaxBodyBytes     = 4096
	MaxBatchBytes    = 256 << 10
	MaxWorkshopBytes = 32 << 10
)

// Paths of the API. Routes with an id are built by the functions below.
const (
	PathHealth       = "/healthz"
	PathLive         = "/livez"
	PathReady        = "/readyz"
	PathMetrics      = "/metrics"
	PathWhoAmI       = "/api/v1/whoami"
	PathMe           = "/api/v1/me" // The caller's own profile.
	PathWorkshops    = "/api/v1/workshops"
	PathReservations = "/api/v1/reservations"
	PathHolds        = "/api/v1/holds"
	PathWaitlist     = "/api/v1/waitlist" // The caller's own waiting list entries.
	PathBatches      = "/api/v1/batches"
	PathOperations   = "/api/v1/operations"
	PathTokens       = "/api/v1/tokens"
	PathFaults       = "/api/v1/debug/faults"
	PathBackup       = "/api/v1/admin/backup"
	PathAdminOps     = "/api/v1/admin/operations"
	PathWebhooks     = "/api/v1/admin/webhooks"
	PathDeliveries   = "/api/v1/admin/deliveries"
	PathOpenAPI      = "/api/v1/openapi.yaml"
)

// WorkshopPath returns the path of workshop id.
func WorkshopPath(id string) string { return PathWorkshops + "/" + id }

// AttendeesPath returns the path of workshop id's attendee list.
func AttendeesPath(id string) string { return WorkshopPath(id) + "/attendees" }

// ReservationPath returns the path of reservation id.
func ReservationPath(id string) string { return PathReservations + "/" + id }

// CancelPath returns the path that cancels reservation id.
func CancelPath(id string) string { return ReservationPath(id) + "/cancel" }

// HoldPath returns the path of hold id.
func HoldPath(id string) string { return PathHolds + "/" + id }

// ConfirmPath returns the path that confirms hold id.
func ConfirmPath(id string) string { return HoldPath(id) + "/confirm" }

// ReleasePath returns the path that releases hold id.
func ReleasePath(id string) string { return HoldPath(id) + "/release" }

// WaitlistLeavePath returns the path that takes waiting list entry id
// off its list.
func WaitlistLeavePath(id string) string { return PathWaitlist + "/" + id + "/leave" }

// WorkshopWaitlistPath returns the path of workshop id's waiting list,
// the organizers' view.
func WorkshopWaitlistPath(id string) string { return WorkshopPath(id) + "/waitlist" }

// OperationPath returns the path of the receipt of operation key.
func OperationPath(key engine.OperationKey) string { return PathOperations + "/" + string(key) }

// statusByEffect is the HTTP status each effect of an authoritative answer
// (engine.Answers) is sent with: 201 Created for an answer that made a
// reservation or a hold, 200 OK for one that changed what was there (a
// cancellation, a release, leaving a waiting list), 409 Conflict for a
// decided refusal, 202 Accepted for a request that joined a waiting list:
// decided and stored like every answer, its places to be offered later.
var statusByEffect = map[engine.Effect]int{
	engine.EffectMade:    201,
	engine.EffectChanged: 200,
	engine.EffectRefused: 409,
	engine.EffectQueued:  202,
}

// StatusOfAnswer returns the HTTP status of an answer of kind with status,
// and 0 for a (kind, status) that is not an answer.
func StatusOfAnswer(kind engine.OperationKind, status string) int {
	spec, ok := engine.SpecOf(kind, status)
	if !ok {
		return 0
	}
	return statusByEffect[spec.Effect]
}

// Problem is an RFC 9457 problem detail with reserve's stable code member.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Code   string `json:"code"`
	Detail string `json:"detail,omitempty"`
	// Reason is set on the problem of an item of an atomic batch refused
	// as a whole: why the item was not reserved (engine.RefusalReasons, or
	// the code of the item's own refusal).
	Reason string `json:"reason,omitempty"`
}

// BatchAnswer is the body of the answer to POST /api/v1/batches: 200 with
// Results, or 409 with Status "batch_refused" for an atomic batch refused
// as a whole (nothing stored).
type BatchAnswer struct {
	Status  string        `json:"status,omitempty"`
	Results []BatchResult `json:"results"`
}

// BatchResult is one item's result in a batch: its key, the HTTP status
// and body it gets as a single reservation (its answer or its problem),
// and whether that answer was replayed from its receipt.
type BatchResult struct {
	Key      string          `json:"key"`
	Status   int             `json:"status"`
	Replayed bool            `json:"replayed"`
	Body     json.RawMessage `json:"body"`
}

// WorkshopList is the body of GET /api/v1/workshops.
type WorkshopList struct {
	Workshops []engine.Workshop `json:"workshops"`
}

// AttendeePage is the body of GET /api/v1/workshops/{id}/attendees: one
// page of a workshop's attendee list, by actor then reservation, and the
// cursor of the next page ("" on the last).
type AttendeePage struct {
	Attendees  []engine.Attendee `json:"attendees"`
	NextCursor string            `json:"next_cursor,omitempty"`
}

// AttendeeCSVHeader is the header row of an attendee list as CSV; each
// row has these columns of one engine.Attendee, times in RFC 3339 UTC.
var AttendeeCSVHeader = []string{"reservation_id", "actor", "display_name", "email", "quantity", "status", "created_at", "cancelled_at"}

// ReservationPage is the body of GET /api/v1/reservations: one page of a
// person's reservations, newest first, and the cursor of the next page (""
// when this is the last).
type ReservationPage struct {
	Reservations []ReservationItem `json:"reservations"`
	NextCursor   string            `json:"next_cursor,omitempty"`
}

// ReservationItem is one reservation of a ReservationPage; Status is
// active or cancelled.
type ReservationItem struct {
	ID          string    `json:"id"`
	Workshop    string    `json:"workshop"`
	Quantity    int       `json:"quantity"`
	Status      string    `json:"status"`
	CreatedAt   time.Time `json:"created_at"`
	CancelledAt time.Time `json:"cancelled_at,omitzero"`
}

// ReservationItemOf returns r as a list shows it.
func ReservationItemOf(r engine.Reservation) ReservationItem {
	status := engine.ListActive
	if r.Cancelled() {
		status = engine.ListCancelled
	}
	return ReservationItem{ID: r.ID, Workshop: r.Workshop, Quantity: r.Quantity, Status: status, CreatedAt: r.CreatedAt, CancelledAt: r.CancelledAt}
}

// HoldPage is the body of GET /api/v1/holds: one page of a person's
// holds, newest first, each with its state now.
type HoldPage struct {
	Holds      []engine.Hold `json:"holds"`
	NextCursor string        `json:"next_cursor,omitempty"`
}

// WaitlistPage is the body of GET /api/v1/waitlist (a person's own
// waiting list entries, newest first) and of GET
// /api/v1/workshops/{id}/waitlist (a workshop's, in the order they
// joined), each entry with its state now and, while it waits, its
// position; NextCursor is the cursor of the next page ("" on the last).
type WaitlistPage struct {
	Entries    []engine.WaitEntry `json:"entries"`
	NextCursor string             `json:"next_cursor,omitempty"`
}

// OperationPage is the body of GET /api/v1/admin/operations: one page of
// stored operations, newest first, and the cursor of the next page ("" when
// this is the last).
type OperationPage struct {
	Operations []OperationRecord `json:"operations"`
	NextCursor string            `json:"next_cursor,omitempty"`
}

// OperationRecord is one stored operation of an OperationPage: who used
// which key for what kind of operation, the stored answer's outcome (its
// status) and HTTP status. Expired is set for an operation whose receipt
// was purged after the retention period (only its tombstone is left).
type OperationRecord struct {
	Actor         string               `json:"actor"`
	Operation     engine.OperationKey  `json:"operation"`
	Kind          engine.OperationKind `json:"kind"`
	Outcome       string               `json:"outcome"`
	HTTPStatus    int                  `json:"http_status"`
	Workshop      string               `json:"workshop"`
	Quantity      int                  `json:"quantity"`
	ReservationID string               `json:"reservation_id,omitempty"`
	HoldID        string               `json:"hold_id,omitempty"`
	DeliveryID    string               `json:"delivery_id,omitempty"`
	EntryID       string               `json:"entry_id,omitempty"`
	CreatedAt     time.Time            `json:"created_at"`
	Expired       bool                 `json:"expired,omitempty"`
}

// OperationView is the body of GET /api/v1/operations/{key}, the caller's
// view of a receipt: the HTTP status and the body of the stored answer,
// verbatim.
type OperationView struct {
	Operation  engine.OperationKey `json:"operation"`
	HTTPStatus int                 `json:"http_status"`
	Response   json.RawMessage     `json:"response"`
	CreatedAt  time.Time           `json:"created_at"`
}

// TokenRequest is the body of POST /api/v1/tokens.
type TokenRequest struct {
	Actor            string `json:"actor"`
	Admin            bool   `json:"admin"`
	ExpiresInSeconds int    `json:"expires_in_seconds,omitempty"`
}

// MaxTokenLifetimeSeconds bounds "expires_in_seconds" (ten years).
const MaxTokenLifetimeSeconds = int(engine.MaxTokenLifetime / time.Second)

// DecodeTokenRequest decodes a TokenRequest with the strict rules:
// "actor" is required, "admin" is optional and false by default,
// "expires_in_seconds" is optional (no expiry), a JSON integer from 1 to
// MaxTokenLifetimeSeconds.
func DecodeTokenRequest(body []byte) (TokenRequest, error) {
	var r TokenRequest
	err := DecodeStrict(body, []strictjson.Member{
		strictjson.StringMember("actor", true, engine.ValidateActor, &r.Actor),
		strictjson.BoolMember("admin", false, &r.Admin),
		strictjson.IntMember("expires_in_seconds", false, 1, MaxTokenLifetimeSeconds, &r.ExpiresInSeconds),
	})
	return r, err
}

// Spec is the engine's view of the request.
func (r TokenRequest) Spec() engine.TokenSpec {
	return engine.TokenSpec{Actor: r.Actor, Admin: r.Admin, ExpiresIn: time.Duration(r.ExpiresInSeconds) * time.Second}
}

// TokenResponse is the answer to POST /api/v1/tokens: the token, shown
// once, with its id and, if it has one, its expiry.
type TokenResponse struct {
	ID        string    `json:"id"`
	Token     string    `json:"token"`
	Actor     string    `json:"actor"`
	Admin     bool      `json:"admin"`
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}

// TokenList is the answer to GET /api/v1/tokens: the API tokens, oldest
// first, without secrets.
type TokenList struct {
	Tokens []engine.TokenInfo `json:"tokens"`
}

// TokenPath returns the path of the API token id.
func TokenPath(id string) string { return PathTokens + "/" + url.PathEscape(id) }

// The faults that POST /api/v1/debug/faults arms.
const (
	FaultFailReceiptWrite = "fail_receipt_write"
	FaultGarbleResponse   = "garble_response"
	FaultDelayResponse    = "delay_response"
)

// MaxFaultDelayMS bounds delay_ms of a delay_response fault (ten minutes).
const MaxFaultDelayMS = 600_000

// Fault is the body of POST /api/v1/debug/faults and its answer.
type Fault struct {
	Fault   string `json:"fault"`
	Count   int    `json:"count,omitempty"`
	DelayMS int    `json:"delay_ms,omitempty"`
}

// DecodeFault decodes a Fault strictly. Count defaults to 1; delay_ms is
// required for delay_response and refused for the other faults.
func DecodeFault(body []byte) (Fault, error) {
	var f Fault
	err := DecodeStrict(body, []strictjson.Member{
		strictjson.StringMember("fault", true, validateFault, &f.Fault),
		strictjson.IntMember("count", false, 1, 1000, &f.Count),
		strictjson.IntMember("delay_ms", false, 1, MaxFaultDelayMS, &f.DelayMS),
	})
	if err != nil {
		return Fault{}, err
	}
	if f.Count == 0 {
		f.Count = 1
	}
	if (f.Fault == FaultDelayResponse) != (f.DelayMS != 0) {
		return Fault{}, engine.Errorf(engine.CodeRequestContract, "member \"delay_ms\" is required for %s and only for it", FaultDelayResponse)
	}
	return f, nil
}

func validateFault(name string) error {
	switch name {
	case FaultFailReceiptWrite, FaultGarbleResponse, FaultDelayResponse:
		return nil
	}
	return fmt.Errorf("must be one of %s, %s, %s", FaultFailReceiptWrite, FaultGarbleResponse, FaultDelayResponse)
}

// DecodeProfileChange decodes the body of PUT /api/v1/me strictly: the
// optional members "display_name" and "language", each a JSON string;
// a member left out keeps its stored value. The engine checks the values.
func DecodeProfileChange(body []byte) (engine.ProfileChange, error) {
	var c engine.ProfileChange
	var name, lang string
	err := DecodeStrict(body, []strictjson.Member{
		strictjson.StringMember("display_name", false, func(string) error { c.DisplayName = &name; return nil }, &name),
		strictjson.StringMember("language", false, func(string) error { c.Language = &lang; return nil }, &lang),
	})
	return c, err
}
