package engine

import (
	"errors"
	"fmt"
)

// The error codes are stable: they appear in HTTP problem details, in logs and
// in the CLI's exit-code mapping. Never rename one; add new ones instead.
// These are the domain's; the refusals that only the HTTP edge makes (a
// missing key, the media type, the body's size and framing, routing) have
// their codes in package api.
const (
	// CodeInvalidIdempotencyKey means the operation key is not a lowercase
	// canonical UUIDv4 or UUIDv7.
	CodeInvalidIdempotencyKey = "invalid_idempotency_key"
	// CodeRequestContract means the body breaks the request contract.
	CodeRequestContract = "request_contract"
	// CodeOperationConflict means the operation key was already used by the
	// same actor for a different payload.
	CodeOperationConflict = "operation_conflict"
	// CodeOperationExpired means the caller's receipt for the operation key
	// was purged after the retention period; only its tombstone is left, so
	// the operation is not repeated and its answer cannot be replayed.
	CodeOperationExpired = "operation_expired"
	// CodeBatchRefused means an atomic batch was refused as a whole: an
	// item that could not be reserved refused them all, and nothing was
	// stored for any item. The same batch sent again is decided afresh.
	CodeBatchRefused = "batch_refused"
	// CodeUnknownWorkshop means no workshop has the requested id.
	CodeUnknownWorkshop = "unknown_workshop"
	// CodeUnknownOperation means the caller has no receipt for that key.
	CodeUnknownOperation = "unknown_operation"
	// CodeUnknownReservation means no reservation visible to the caller has
	// that id.
	CodeUnknownReservation = "unknown_reservation"
	// CodeUnknownHold means no hold visible to the caller has that id.
	CodeUnknownHold = "unknown_hold"
	// CodeUnknownToken means no API token has that id: there never was one,
	// or it was revoked.
	CodeUnknownToken = "unknown_token"
	// CodeVersionMismatch means an If-Match precondition named a stale
	// workshop version.
	CodeVersionMismatch = "version_mismatch"
	// CodeCapacityBelowReserved means an update would set a workshop's
	// capacity below the seats already reserved.
	CodeCapacityBelowReserved = "capacity_below_reserved"
	// CodeWorkshopInUse means a workshop cannot be deleted while it has an
	// active reservation or an open hold.
	CodeWorkshopInUse = "workshop_in_use"
	// CodeUnknownWebhook means no webhook endpoint has that id.
	CodeUnknownWebhook = "unknown_webhook"
	// CodeWebhookExists means a webhook endpoint for that URL exists
	// already: one URL gets each event once.
	CodeWebhookExists = "webhook_exists"
	// CodeUnknownDelivery means no delivery has that id.
	CodeUnknownDelivery = "unknown_delivery"
	// CodeUnknownEntry means no waiting list entry visible to the caller
	// has that id.
	CodeUnknownEntry = "unknown_entry"
	// CodeUnauthenticated means the caller has no valid credentials.
	CodeUnauthenticated = "unauthenticated"
	// CodeForbidden means the caller is known but not allowed.
	CodeForbidden = "forbidden"
	// CodeInsufficientStorage means the machine lacks the disk space the
	// request needs (a backup's snapshot beside the database). Nothing was
	// done, and the same request is refused again until someone frees
	// space, so it is a decided refusal, not an undecided answer: the
	// client knows that it took no effect.
	CodeInsufficientStorage = "insufficient_storage"
	// CodeStoreUnavailable means the store could not serve the request now:
	// its database is unreachable, restarting, refusing connections, failing
	// over or too slow to answer, or the daemon is closing it. It is
	// undecided: the client keeps the operation key and retries with the
	// same key (after the answer's Retry-After), which decides the request
	// then, or replays the decision if one was committed after all (a commit
	// whose connection broke before its acknowledgement arrived).
	CodeStoreUnavailable = "store_unavailable"
	// CodeIdentityUnavailable means the caller's actor could not be
	// worked out now: a Unix socket peer whose uid has no actor yet, while
	// the user database (files, LDAP, SSSD) fails to say who that uid is
	// (any failure other than "no such user"). It is undecided: nothing was
	// decided, and no actor was bound; the client keeps the operation key
	// and retries with the same key (after the answer's Retry-After), once
	// the user database answers again. A uid that has an actor never gets
	// this answer: its actor does not depend on the user database.
	CodeIdentityUnavailable = "identity_unavailable"
	// CodeInternal means something failed inside the service. It is
	// undecided: the outcome of a reservation answered with it is unknown to
	// the client, which retries with the same key.
	CodeInternal = "internal"
)

// undecidedCodes are the codes whose answers decide nothing for the client.
var undecidedCodes = map[string]bool{
	CodeStoreUnavailable:    true,
	CodeIdentityUnavailable: true,
	CodeInternal:            true,
}

// Undecided reports whether an answer with code leaves its request
// undecided: the client does not know whether the request took effect, so
// it keeps the operation key and retries with the same key, and never
// treats the answer as a refusal. Every other code is a decision: a refusal
// that the same request gets again, or for a read the answer itself. This
// is the one rule for the domain's codes; api.Undecided, which every
// client applies through internal/client, adds the HTTP edge's codes.
func Undecided(code string) bool { return undecidedCodes[code] }

// Codes lists every stable error code of the domain, for documentation and
// tests; api.Codes adds the HTTP edge's.
var Codes = []string{
	CodeInvalidIdempotencyKey,
	CodeRequestContract, CodeOperationConflict, CodeOperationExpired, CodeBatchRefused, CodeUnknownWorkshop,
	CodeUnknownOperation, CodeUnknownReservation, CodeUnknownHold, CodeUnknownToken, CodeVersionMismatch,
	CodeCapacityBelowReserved, CodeWorkshopInUse, CodeUnknownWebhook, CodeWebhookExists, CodeUnknownDelivery, CodeUnknownEntry, CodeUnauthenticated, CodeForbidden,
	CodeInsufficientStorage, CodeStoreUnavailable, CodeIdentityUnavailable, CodeInternal,
}

// Error is the one error type of reserve: a stable machine-readable code and a
// message for people. Front ends map the code to their own vocabulary (HTTP
// status, exit code) in one table each.
type Error struct {
	Code    string
	Message string
}

// Error returns the message prefixed with the code.
func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// errStoreUnavailable is what a client learns of a store that cannot serve:
// the code and a message without the cause, which only the log gets.
var errStoreUnavailable = &Error{
	Code:    CodeStoreUnavailable,
	Message: "the store is unavailable (unreachable or restarting), so this request got no decision; send it again with the same Idempotency-Key",
}

// StoreUnavailable returns cause marked with CodeStoreUnavailable: its
// ErrorCode is CodeStoreUnavailable, its ErrorMessage says nothing of the
// cause, and its Error text (for the log) ends with the cause, which
// errors.Is and errors.As still find. Stores return it for the failures
// that retrying later with the same key resolves without anyone's action.
func StoreUnavailable(cause error) error {
	return fmt.Errorf("%w: %w", errStoreUnavailable, cause)
}

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, CodeInternal
// for any other non-nil error, and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// ErrorMessage returns the message of the first *Error in err's chain. For any
// other error it returns a generic text, so internals never reach a client.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "an internal error occurred"
}
