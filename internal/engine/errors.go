package engine

import (
	"errors"
	"fmt"
)

// The error codes are stable: they appear in HTTP problem details, in logs and
// in the CLI's exit-code mapping. Never rename one; add new ones instead.
const (
	// CodeMissingIdempotencyKey means the request carried no operation key.
	CodeMissingIdempotencyKey = "missing_idempotency_key"
	// CodeInvalidIdempotencyKey means the operation key is not a lowercase
	// canonical UUIDv4.
	CodeInvalidIdempotencyKey = "invalid_idempotency_key"
	// CodeUnsupportedMediaType means the body is not application/json.
	CodeUnsupportedMediaType = "unsupported_media_type"
	// CodeBodyTooLarge means the body exceeds the request limit.
	CodeBodyTooLarge = "body_too_large"
	// CodeBodyIncomplete means the body could not be read to its end (the
	// client stalled or the connection broke); nothing was decided, so a
	// client must treat it as no answer and retry.
	CodeBodyIncomplete = "body_incomplete"
	// CodeBadFraming means the request's length is framed ambiguously
	// (Content-Length with Transfer-Encoding, say) or where it begins on
	// its connection is uncertain; it was not read, nothing was decided,
	// and the connection is closed.
	CodeBadFraming = "bad_framing"
	// CodeRequestContract means the body breaks the request contract.
	CodeRequestContract = "request_contract"
	// CodeOperationConflict means the operation key was already used by the
	// same actor for a different payload.
	CodeOperationConflict = "operation_conflict"
	// CodeOperationExpired means the caller's receipt for the operation key
	// was purged after the retention period; only its tombstone is left, so
	// the operation is not repeated and its answer cannot be replayed.
	CodeOperationExpired = "operation_expired"
	// CodeUnknownWorkshop means no workshop has the requested id.
	CodeUnknownWorkshop = "unknown_workshop"
	// CodeUnknownOperation means the caller has no receipt for that key.
	CodeUnknownOperation = "unknown_operation"
	// CodeUnknownReservation means no reservation visible to the caller has
	// that id.
	CodeUnknownReservation = "unknown_reservation"
	// CodeVersionMismatch means an If-Match precondition named a stale
	// workshop version.
	CodeVersionMismatch = "version_mismatch"
	// CodeCapacityBelowReserved means an update would set a workshop's
	// capacity below the seats already reserved.
	CodeCapacityBelowReserved = "capacity_below_reserved"
	// CodeUnauthenticated means the caller has no valid credentials.
	CodeUnauthenticated = "unauthenticated"
	// CodeForbidden means the caller is known but not allowed.
	CodeForbidden = "forbidden"
	// CodeNotFound means no such route or resource.
	CodeNotFound = "not_found"
	// CodeMethodNotAllowed means the route exists but not for this method.
	CodeMethodNotAllowed = "method_not_allowed"
	// CodeNotImplemented means the store behind this daemon cannot do what
	// was asked (an online backup of a PostgreSQL store).
	CodeNotImplemented = "not_implemented"
	// CodeInternal means something failed inside the service; the outcome of
	// a reservation answered with it is unknown to the client.
	CodeInternal = "internal"
)

// Codes lists every stable error code, for documentation and tests.
var Codes = []string{
	CodeMissingIdempotencyKey, CodeInvalidIdempotencyKey, CodeUnsupportedMediaType,
	CodeBodyTooLarge, CodeBodyIncomplete, CodeBadFraming, CodeRequestContract, CodeOperationConflict, CodeOperationExpired, CodeUnknownWorkshop,
	CodeUnknownOperation, CodeUnknownReservation, CodeVersionMismatch,
	CodeCapacityBelowReserved, CodeUnauthenticated, CodeForbidden, CodeNotFound,
	CodeMethodNotAllowed, CodeNotImplemented, CodeInternal,
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
