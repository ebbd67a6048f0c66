package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/intent"
)

// The kinds of an outcome, as --json prints them.
const (
	kindReserved         = "reserved"
	kindUnavailable      = "unavailable"
	kindCancelled        = "cancelled"
	kindAlreadyCancelled = "already_cancelled"
	kindRejected         = "rejected"
	kindUnknown          = "unknown"
)

// outcome is what one attempt (or one receipt) says about an intent. Only
// reserved, unavailable and rejected are authoritative; unknown leaves the
// intent open.
type outcome struct {
	kind string
	// op is the command that retries the intent: "reserve" or "cancel".
	op       string
	key      engine.OperationKey
	replayed bool
	// status and body are the server's answer, when there was one.
	status int
	body   []byte
	// answer is the decoded body of a reserved or unavailable answer.
	answer engine.Answer
	// problem is the rejection of a rejected answer.
	problem *engine.Error
	// why says, for an unknown outcome, what went wrong.
	why string
	// unconfirmed is set for an outcome read from the state file because a
	// retry of the settled intent got no answer; it says why.
	unconfirmed string
	// notResent marks a recorded rejection that a retry did not send again.
	notResent bool
}

// classify decides what the answer to one POST /reservations of req under
// key means. It is the one place that knows which answers are
// authoritative: a 201 whose body is the reservation of exactly req, a 409
// "unavailable" for exactly req, and a problem that client.Undecided calls
// a decided refusal. Everything else (no answer, 5xx such as 503
// store_unavailable, 408, 429, a body that is not such an answer) leaves
// the outcome unknown.
func classify(key engine.OperationKey, req engine.Request, status int, body []byte, replayed bool, err error, timeout time.Duration) outcome {
	o := outcome{key: key, replayed: replayed, status: status, body: body}
	if err != nil {
		var ee *engine.Error
		if errors.As(err, &ee) && !client.Undecided(status, err) {
			o.kind, o.problem = kindRejected, ee
			return o
		}
		o.kind, o.why = kindUnknown, describe(err, status, timeout)
		return o
	}
	a, err := engine.DecodeAnswer(engine.OperationReserve, body)
	matches := err == nil && a.Workshop == req.Workshop && a.Quantity == req.Quantity
	switch {
	case matches && status == http.StatusCreated && a.Status == engine.StatusReserved && engine.IsReservationID(a.ReservationID):
		o.kind, o.answer = kindReserved, a
	case matches && status == http.StatusConflict && a.Status == engine.StatusUnavailable && a.ReservationID == "":
		o.kind, o.answer = kindUnavailable, a
	default:
		o.kind = kindUnknown
		o.why = fmt.Sprintf("unparseable answer: %d %s whose body is not the answer to this intent (%d bytes)", status, http.StatusText(status), len(body))
	}
	return o
}

// classifyCancel decides what the answer to one cancellation of reservation
// id under key means, with the rules of classify: a 200 "cancelled" or a 409
// "already_cancelled" of exactly that reservation, or a rejection, are
// authoritative; everything else leaves the outcome unknown.
func classifyCancel(key engine.OperationKey, id string, status int, body []byte, replayed bool, err error, timeout time.Duration) outcome {
	o := classify(key, engine.Request{}, status, body, replayed, err, timeout)
	o.op = intent.KindCancel
	if err != nil {
		return o
	}
	a, derr := engine.DecodeAnswer(engine.OperationCancel, body)
	matches := derr == nil && a.ReservationID == id && engine.ValidateWorkshopID(a.Workshop) == nil && a.Quantity > 0
	o.kind, o.answer = kindUnknown, engine.Answer{}
	switch {
	case matches && status == http.StatusOK && a.Status == engine.StatusCancelled:
		o.kind, o.answer, o.why = kindCancelled, a, ""
	case matches && status == http.StatusConflict && a.Status == engine.StatusAlreadyCancelled:
		o.kind, o.answer, o.why = kindAlreadyCancelled, a, ""
	default:
		o.why = fmt.Sprintf("unparseable answer: %d %s whose body is not the answer to this intent (%d bytes)", status, http.StatusText(status), len(body))
	}
	return o
}

// classifyIntent classifies an answer to in, reserve or cancel.
func classifyIntent(in *intent.Intent, status int, body []byte, replayed bool, err error, timeout time.Duration) (outcome, error) {
	if in.Kind == intent.KindCancel {
		c, perr := in.CancelRequest()
		if perr != nil {
			return outcome{}, perr
		}
		return classifyCancel(in.Key, c.ReservationID, status, body, replayed, err, timeout), nil
	}
	req, perr := in.Request()
	if perr != nil {
		return outcome{}, perr
	}
	return classify(in.Key, req, status, body, replayed, err, timeout), nil
}

// describe says why err left an outcome unknown, in words for people.
func describe(err error, status int, timeout time.Duration) string {
	var (
		ce *client.ConnectError
		re *client.UnexpectedResponseError
		ee *engine.Error
	)
	switch {
	case errors.As(err, &ce):
		return ce.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("no answer within %s", timeout)
	case errors.Is(err, context.Canceled):
		return "interrupted before the answer arrived"
	case errors.As(err, &re):
		return fmt.Sprintf("unparseable answer: %d %s with %d bytes of %q", re.Status, http.StatusText(re.Status), len(re.Body), re.ContentType)
	case errors.As(err, &ee) && ee.Code == engine.CodeStoreUnavailable:
		why := "reserved's store is unavailable (unreachable or restarting)"
		if status != 0 {
			why += fmt.Sprintf(": %d %s", status, http.StatusText(status))
		}
		return why
	case errors.As(err, &ee):
		return fmt.Sprintf("the server failed: %d %s: %s", status, http.StatusText(status), ee)
	}
	return err.Error()
}

// authoritative reports whether o settles its intent.
func (o outcome) authoritative() bool { return o.kind != kindUnknown }

// settlement is the authoritative o as the journal records it.
func (o outcome) settlement() intent.Outcome {
	s := intent.Outcome{HTTPStatus: o.status, Body: o.body}
	switch o.kind {
	case kindReserved, kindCancelled, kindAlreadyCancelled:
		s.Status, s.ReservationID = o.kind, o.answer.ReservationID
	case kindUnavailable:
		s.Status = intent.StatusUnavailable
	default:
		s.Status = intent.StatusRejected
	}
	return s
}

// succeeded reports whether o ends its command with exit 0: a reservation,
// a cancellation, or a reservation that was cancelled before.
func (o outcome) succeeded() bool {
	return o.kind == kindReserved || o.kind == kindCancelled || o.kind == kindAlreadyCancelled
}

// err returns nil for a successful outcome and an *outcomeError for every
// other one, so that the command fails with the right exit code.
func (o outcome) err() error {
	if o.succeeded() {
		return nil
	}
	return &outcomeError{o: o}
}

// line is the one line that reports o to people.
func (o outcome) line() string {
	prefix := ""
	switch {
	case o.unconfirmed != "":
		prefix = "recorded (reserved did not confirm it now: " + o.unconfirmed + "): "
	case o.notResent:
		prefix = "recorded (a rejection is final; nothing was sent again): "
	case o.replayed:
		prefix = "replayed: "
	}
	switch o.kind {
	case kindReserved:
		return fmt.Sprintf("%sreserved %s in %s (reservation %s)", prefix, places(o.answer.Quantity), o.answer.Workshop, o.answer.ReservationID)
	case kindUnavailable:
		return fmt.Sprintf("%sunavailable: not enough free places in %s for %s; intent %s is settled, run 'reservectl new-intent' to try again",
			prefix, o.answer.Workshop, places(o.answer.Quantity), o.key)
	case kindCancelled:
		return fmt.Sprintf("%scancelled reservation %s (%s in %s)", prefix, o.answer.ReservationID, places(o.answer.Quantity), o.answer.Workshop)
	case kindAlreadyCancelled:
		return fmt.Sprintf("%salready cancelled: reservation %s (%s in %s) was cancelled before; this intent changed nothing",
			prefix, o.answer.ReservationID, places(o.answer.Quantity), o.answer.Workshop)
	case kindRejected:
		if o.problem != nil && o.problem.Code == engine.CodeOperationExpired {
			return fmt.Sprintf("%srejected: the operation key expired, so reserved refuses to repeat it and cannot replay its answer: %s (HTTP %d); intent %s is settled, run 'reservectl new-intent' to start another",
				prefix, o.problem.Message, o.status, o.key)
		}
		return fmt.Sprintf("%srejected: %s (HTTP %d); intent %s is settled, run 'reservectl new-intent' to start another",
			prefix, o.problem, o.status, o.key)
	}
	return fmt.Sprintf("outcome unknown: %s; your intent is kept — run: reservectl %s --retry", o.why, o.retryCommand())
}

// retryCommand is the reservectl command that retries o's intent.
func (o outcome) retryCommand() string {
	if o.op == intent.KindCancel {
		return intent.KindCancel
	}
	return intent.KindReserve
}

// places says "1 place" or "n places".
func places(n int) string {
	if n == 1 {
		return "1 place"
	}
	return fmt.Sprintf("%d places", n)
}

// outcomeJSON is what --json prints for an outcome.
type outcomeJSON struct {
	// Outcome is reserved, unavailable, rejected or unknown.
	Outcome   string              `json:"outcome"`
	Operation engine.OperationKey `json:"operation"`
	Replayed  bool                `json:"replayed"`
	// HTTPStatus is the server's status, 0 without an answer.
	HTTPStatus    int    `json:"http_status,omitempty"`
	ReservationID string `json:"reservation_id,omitempty"`
	// Response is the server's body when it is JSON, byte for byte.
	Response json.RawMessage `json:"response,omitempty"`
	// ResponseText is the server's body when it is not JSON.
	ResponseText string `json:"response_text,omitempty"`
	// Error says why the outcome is unknown, or why a recorded outcome was
	// not confirmed by reserved.
	Error string `json:"error,omitempty"`
	// Recorded says that the outcome comes from the state file: a retry of
	// the settled intent got no answer.
	Recorded bool `json:"recorded,omitempty"`
}

// json returns o as --json prints it.
func (o outcome) json() outcomeJSON {
	j := outcomeJSON{
		Outcome:       o.kind,
		Operation:     o.key,
		Replayed:      o.replayed,
		HTTPStatus:    o.status,
		ReservationID: o.answer.ReservationID,
		Error:         o.why + o.unconfirmed,
		Recorded:      o.unconfirmed != "" || o.notResent,
	}
	switch {
	case len(o.body) == 0:
	case json.Valid(o.body):
		j.Response = json.RawMessage(o.body)
	default:
		j.ResponseText = string(o.body)
	}
	return j
}

// outcomeError is an outcome other than reserved, returned by a command so
// that Run prints its line and exits with its code.
type outcomeError struct{ o outcome }

// Error returns the outcome's line.
func (e *outcomeError) Error() string { return e.o.line() }

// Unwrap returns the server's rejection, if any.
func (e *outcomeError) Unwrap() error {
	if e.o.problem == nil {
		return nil
	}
	return e.o.problem
}

// report prints the outcome of an intent (a line for a reservation, or the
// JSON of any outcome) and returns the error the command ends with.
func (g *globals) report(o outcome) error {
	if g.json {
		if err := g.printJSON(o.json()); err != nil {
			return err
		}
	} else if o.succeeded() {
		fmt.Fprintln(g.stdout, o.line())
	}
	return o.err()
}

// settledOutcome rebuilds the outcome recorded in a settled intent.
func settledOutcome(in *intent.Intent) outcome {
	rec := in.Outcome
	o := outcome{key: in.Key, op: in.Kind, status: rec.HTTPStatus, body: rec.Body}
	switch rec.Status {
	case intent.StatusReserved, intent.StatusUnavailable, intent.StatusCancelled, intent.StatusAlreadyCancelled:
		o.kind = rec.Status
		o.answer, _ = engine.DecodeAnswer(in.Kind, rec.Body)
	default:
		o.kind = kindRejected
		o.problem = problemOf(rec.Body)
	}
	return o
}

// problemOf decodes the code and detail of a stored problem body.
func problemOf(body []byte) *engine.Error {
	var p struct {
		Code   string `json:"code"`
		Detail string `json:"detail"`
	}
	if json.Unmarshal(body, &p) != nil || p.Code == "" {
		return &engine.Error{Code: "rejected", Message: string(body)}
	}
	return &engine.Error{Code: p.Code, Message: p.Detail}
}
