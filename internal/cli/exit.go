package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/intent"
	"github.com/reserve/reserve/internal/safefile"
)

// The exit codes of reservectl. exitCode is the one place that
// maps errors to them.
const (
	// ExitReserved means reserved (also from a hold), cancelled, held or
	// released, on a waiting list (a reservation request that asked to
	// wait, a decided answer) or off one (left, or left before), a
	// delivery requeued or skipped, the first time or replayed, or that
	// another command succeeded.
	ExitReserved = 0
	// ExitFailure means a failure that no other code covers.
	ExitFailure = 1
	// ExitUsage means a usage error or a local refusal: nothing was sent.
	ExitUsage = 2
	// ExitUnavailable means the authoritative answer "not enough free
	// places", or that the hold to confirm or release, or the offer of
	// the entry to leave a waiting list, had expired.
	ExitUnavailable = 3
	// ExitRejected means an authoritative 4xx rejection (conflict, request
	// contract, unknown workshop or hold, authentication or permission), a
	// refusal by the workshop's registration window or limit per person
	// (registration_not_open, registration_closed, limit_reached), or that
	// the hold to confirm or release, or the delivery to skip, was settled
	// before, or the entry to leave a waiting list was reserved before.
	ExitRejected = 4
	// ExitAnswerExpired means that reserved decided the intent earlier but
	// no longer keeps its answer (its receipt was purged after the
	// retention period), so what it did is not known here: the intent is
	// settled, and "reservectl list" shows the reservations.
	ExitAnswerExpired = 5
	// ExitUnknown means the outcome is unknown and the intent stays open
	// (timeout, reset, 5xx such as 503 store_unavailable, unparseable
	// answer, daemon unreachable); 75 is EX_TEMPFAIL.
	ExitUnknown = 75
)

// usageError is a usage error or a local refusal: nothing was sent.
type usageError struct{ err error }

// Error returns the message of the wrapped error.
func (e *usageError) Error() string { return e.err.Error() }

// Unwrap returns the wrapped error.
func (e *usageError) Unwrap() error { return e.err }

// usageErrorf returns a *usageError with a formatted message.
func usageErrorf(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
}

// exitCoder is an error that knows its own exit code (an import that left
// rows unclear).
type exitCoder interface {
	error
	ExitCode() int
}

// exitCode maps the error a command returned to reservectl's exit code.
func exitCode(err error) int {
	var (
		oe *outcomeError
		ue *usageError
		ce *client.ConnectError
		se *client.SentError
		re *client.UnexpectedResponseError
		ee *engine.Error
		xc exitCoder
	)
	switch {
	case err == nil:
		return ExitReserved
	case errors.As(err, &xc):
		return xc.ExitCode()
	case errors.As(err, &oe):
		return oe.o.exitCode()
	case errors.As(err, &ue),
		errors.Is(err, intent.ErrBusy),
		errors.Is(err, intent.ErrCorrupt),
		errors.Is(err, intent.ErrMismatch),
		errors.Is(err, safefile.ErrRefused):
		return ExitUsage
	case refusedSocket(err):
		return ExitUsage
	case errors.As(err, &ce), errors.As(err, &se), errors.As(err, &re), errors.Is(err, context.DeadlineExceeded):
		return ExitUnknown
	case errors.As(err, &ee):
		if client.Undecided(0, err) {
			return ExitUnknown
		}
		return ExitRejected
	}
	return ExitFailure
}

// errorLine is the one line reservectl prints on stderr for err. The outcome
// of a reservation speaks for itself ("unavailable: …", "outcome unknown:
// …"); every other failure is prefixed with the program's name.
func errorLine(err error) string {
	var oe *outcomeError
	if errors.As(err, &oe) {
		return oe.Error()
	}
	return "reservectl: " + err.Error()
}

// refusedSocket reports whether err is the refusal of a socket that
// belongs to someone else, or one the system does not let the caller reach
// (permission denied): nothing was sent, and retrying does not change it.
func refusedSocket(err error) bool {
	var ce *client.ConnectError
	return errors.As(err, &ce) && ce.Denied()
}

// exitMeanings are the words --json prints for each exit code.
var exitMeanings = map[int]string{
	ExitReserved:      "succeeded",
	ExitFailure:       "failed",
	ExitUsage:         "refused locally: nothing sent",
	ExitUnavailable:   "unavailable",
	ExitRejected:      engine.OutcomeRejected,
	ExitAnswerExpired: "decided earlier, its answer no longer kept: see reservectl list",
	ExitUnknown:       "outcome unknown or no answer: try again (an intent stays open)",
}

// errorJSON is what --json prints on stdout for a failure that is not the
// outcome of an intent (which prints its own object): the exit code, what
// it means, a stable code and the message of the one line on stderr.
type errorJSON struct {
	Error struct {
		ExitCode int    `json:"exit_code"`
		Meaning  string `json:"meaning"`
		Code     string `json:"code"`
		Message  string `json:"message"`
	} `json:"error"`
}

// errorCode is the stable code of err in errorJSON: the daemon's code of a
// problem it answered, else one of reservectl's own.
func errorCode(err error, exit int) string {
	var (
		ee *engine.Error
		ce *client.ConnectError
		se *client.SentError
	)
	switch {
	case errors.As(err, &ee):
		return ee.Code
	case refusedSocket(err):
		return "socket_refused"
	case errors.As(err, &ce):
		return "unreachable"
	case errors.As(err, &se):
		return "connection_broken"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case exit == ExitUsage:
		return "usage"
	case exit == ExitUnknown:
		return "unknown"
	}
	return "failure"
}

// failureJSON returns the errorJSON of err, or nil for the outcome of an
// intent, which --json has printed already.
func failureJSON(err error) *errorJSON {
	var oe *outcomeError
	if err == nil || errors.As(err, &oe) {
		return nil
	}
	var j errorJSON
	j.Error.ExitCode = exitCode(err)
	j.Error.Meaning = exitMeanings[j.Error.ExitCode]
	j.Error.Code = errorCode(err, j.Error.ExitCode)
	j.Error.Message = reworded(err, err.Error())
	return &j
}
