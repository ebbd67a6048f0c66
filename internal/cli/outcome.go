package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/intent"
)

// outcome is what one attempt (or one receipt, or the state file) says
// about an intent. Its status is the journal's: the status word of an
// authoritative answer, intent.StatusRejected, or intent.StatusOpen, which
// leaves the intent open.
type outcome struct {
	status intent.Status
	// op is the kind of the intent, such as intent.KindReserve.
	op  engine.OperationKind
	key engine.OperationKey
	// res is the server's answer; its Status is 0 without one.
	res client.Result
	// why says, for an open outcome, what went wrong.
	why string
	// unconfirmed is set for an outcome read from the state file because a
	// retry of the settled intent got no answer; it says why.
	unconfirmed string
	// notResent marks a recorded rejection that a retry did not send again.
	notResent bool
	// lost is the outcome the intent had recorded before this one, which
	// reserved no longer stood by: it answered the key anew, which it does
	// only after losing the receipt (a restore from an earlier backup).
	lost *intent.Outcome
}

// outcomeOf is what the classified answer res to op under key means, or,
// with err, what no answer at all means: an answer and a decided refusal
// settle the intent, everything else (no answer, 5xx such as 503
// store_unavailable, 408, 429, a body that is not the answer to op, which
// describe calls unparseable) leaves it open.
func outcomeOf(op client.Operation, key engine.OperationKey, res client.Result, err error, timeout time.Duration) outcome {
	o := outcome{status: intent.StatusOpen, op: op.Kind, key: key, res: res}
	switch {
	case err != nil:
		o.why = describe(err, 0, timeout)
	case res.Answer.Status != "":
		o.status = intent.Status(res.Answer.Status)
	case res.Decided && res.Problem != nil && res.Problem.Code == engine.CodeOperationExpired:
		o.status = intent.StatusAnswerExpired
	case res.Decided:
		o.status = intent.StatusRejected
	default:
		o.why = describe(res.Err(), res.Status, timeout)
	}
	return o
}

// operation returns the operation that in sends.
func operation(in *intent.Intent) client.Operation {
	switch in.Kind {
	case intent.KindCancel:
		c, _ := in.CancelRequest()
		return client.Cancelling(c.ReservationID)
	case intent.KindHold:
		h, _ := in.HoldRequest()
		return client.Holding(h)
	case intent.KindConfirm:
		r, _ := in.HoldRef()
		return client.Confirming(r.HoldID)
	case intent.KindRelease:
		r, _ := in.HoldRef()
		return client.Releasing(r.HoldID)
	case intent.KindRetryDelivery:
		r, _ := in.DeliveryRef()
		return client.RetryingDelivery(r.DeliveryID)
	case intent.KindSkipDelivery:
		r, _ := in.DeliveryRef()
		return client.SkippingDelivery(r.DeliveryID)
	case intent.KindLeaveWaitlist:
		r, _ := in.EntryRef()
		return client.LeavingWaitlist(r.EntryID)
	}
	req, _ := in.Request()
	return client.Reserving(req)
}

// describe says why err left an outcome unknown, in words for people.
func describe(err error, status int, timeout time.Duration) string {
	var (
		ce *client.ConnectError
		se *client.SentError
		re *client.UnexpectedResponseError
		ee *engine.Error
	)
	switch {
	case errors.As(err, &ce):
		return ce.Error()
	case errors.As(err, &se):
		return se.Error()
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
	case errors.As(err, &ee) && (ee.Code == api.CodeTooManyConnections || ee.Code == api.CodeRateLimited):
		return ee.Error() // It says that reserved did nothing, and when to retry.
	case errors.As(err, &ee) && !client.Undecided(status, err):
		return "reserved refused: " + ee.Error()
	case errors.As(err, &ee) && status == 0:
		return "the server failed: " + ee.Error()
	case errors.As(err, &ee):
		return fmt.Sprintf("the server failed: %d %s: %s", status, http.StatusText(status), ee)
	}
	return err.Error()
}

// authoritative reports whether o settles its intent.
func (o outcome) authoritative() bool { return o.status != intent.StatusOpen }

// settle is the one step that settles the intent in on an authoritative
// outcome o and records it in the state file; an outcome that is not
// authoritative leaves in as it is. So does an operation_expired refusal of
// an intent that settled before its receipt expired: the recorded answer
// stands, and the 410 only says that it cannot be replayed (see
// expiredAfterSettled). An intent settled before on another answer is
// settled on o, which stands, and its earlier outcome is returned as lost
// (see intent.Journal.Settle).
func settle(j *intent.Journal, in *intent.Intent, o outcome) (lost *intent.Outcome, err error) {
	if !o.authoritative() || expiredAfterSettled(in, o) {
		return nil, nil
	}
	return j.Settle(in, o.settlement())
}

// expiredAfterSettled reports whether o is the operation_expired refusal
// of an intent that was settled before on the answer that expired since.
func expiredAfterSettled(in *intent.Intent, o outcome) bool {
	return o.status == intent.StatusAnswerExpired && in.Settled() && in.Outcome.Status != intent.StatusAnswerExpired
}

// lostLine says what became of an outcome that reserved no longer stood
// by.
func lostLine(in *intent.Intent, lost intent.Outcome) string {
	what := string(lost.Status)
	if lost.ReservationID != "" {
		what += ", reservation " + lost.ReservationID
	}
	return fmt.Sprintf("reserved no longer had the answer recorded at %s (%s): its database was restored from a backup taken before that, so that answer was lost with the restore and reserved decided intent %s anew",
		lost.SettledAt.Format(time.RFC3339), what, in.Key)
}

// settlement is the authoritative o as the journal records it.
func (o outcome) settlement() intent.Outcome {
	return intent.Outcome{Status: o.status, HTTPStatus: o.res.Status, Body: o.res.Body, ReservationID: o.res.Answer.ReservationID}
}

// exitCode is the exit code of a command that ends on o: 0 for a
// reservation (also one a confirmation made), a cancellation or a
// reservation cancelled before, a hold made and a hold released, a
// delivery requeued or skipped, a request that joined a waiting list (it
// asked to, and it is decided: its places are offered when they are
// freed), and an entry that left its list or had left it before (the
// person is off the list, as asked); 3 for the authoritative lack of
// places and for a hold or an offer whose deadline passed; 4 for a
// rejection, for a refusal by the workshop's registration window or limit
// per person, for a hold that was settled before (a confirmation of a
// released hold, a hold confirmed or released before), for an entry whose
// offer was confirmed before it was to leave, and for a delivery
// delivered or skipped before a skip; 5 for an intent decided earlier
// whose answer reserved no longer keeps; 75 while the outcome is unknown.
func (o outcome) exitCode() int {
	spec, decided := engine.SpecOf(o.op, string(o.status))
	if decided && spec.Effect != engine.EffectRefused {
		return ExitReserved // The answer table says it had its effect.
	}
	switch o.status {
	case engine.StatusAlreadyCancelled, engine.StatusAlreadyLeft:
		return ExitReserved // Refused, but the person is where they asked to be.
	case engine.StatusUnavailable, engine.StatusExpired:
		return ExitUnavailable
	case intent.StatusRejected:
		return ExitRejected
	case intent.StatusAnswerExpired:
		return ExitAnswerExpired
	case intent.StatusOpen:
		return ExitUnknown
	}
	if decided {
		return ExitRejected // Every other refusal of the table.
	}
	return ExitFailure
}

// succeeded reports whether o ends its command with exit 0.
func (o outcome) succeeded() bool { return o.exitCode() == ExitReserved }

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
	case o.notResent && o.status == intent.StatusAnswerExpired:
		prefix = "recorded (nothing was sent again): "
	case o.notResent:
		prefix = "recorded (a rejection is final; nothing was sent again): "
	case o.res.Replayed:
		prefix = "replayed: "
	}
	a, p := o.res.Answer, o.res.Problem
	if engine.IsAdmissionRefusal(string(o.status)) {
		return fmt.Sprintf("%s%s; %s", prefix, o.admissionRefusal(), o.next())
	}
	switch o.status {
	case engine.StatusReserved:
		from := ""
		if a.HoldID != "" {
			from = " from hold " + a.HoldID
		}
		return fmt.Sprintf("%sreserved %s in %s (reservation %s)%s", prefix, places(a.Quantity), a.Workshop, a.ReservationID, from)
	case engine.StatusUnavailable:
		return fmt.Sprintf("%sunavailable: not enough free places in %s for %s; %s",
			prefix, a.Workshop, places(a.Quantity), o.next())
	case engine.StatusWaiting:
		return fmt.Sprintf("%swaiting: entry %s, position %d on the waiting list of %s (%s); when places are freed they are offered in turn, as a hold until the offer's deadline: 'reservectl waitlist' shows your place and any offer",
			prefix, a.EntryID, a.Position, a.Workshop, places(a.Quantity))
	case engine.StatusCancelled:
		return fmt.Sprintf("%scancelled reservation %s (%s in %s)", prefix, a.ReservationID, places(a.Quantity), a.Workshop)
	case engine.StatusAlreadyCancelled:
		return fmt.Sprintf("%salready cancelled: reservation %s (%s in %s) was cancelled before; this intent changed nothing",
			prefix, a.ReservationID, places(a.Quantity), a.Workshop)
	case engine.StatusLeft, engine.StatusAlreadyLeft, engine.StatusAlreadyReserved:
		return prefix + o.leaveLine()
	case engine.StatusExpired:
		if o.op == intent.KindLeaveWaitlist {
			return prefix + o.leaveLine()
		}
		return prefix + o.holdLine()
	case engine.StatusHeld, engine.StatusReleased, engine.StatusAlreadyConfirmed, engine.StatusAlreadyReleased:
		return prefix + o.holdLine()
	case engine.StatusRequeued, engine.StatusSkipped, engine.StatusAlreadyDelivered, engine.StatusAlreadySkipped:
		return prefix + o.deliveryLine()
	case intent.StatusAnswerExpired:
		return fmt.Sprintf("%sdecided earlier: reserved decided intent %s before and no longer keeps its answer, so it cannot say what it did, and it does not do it again: %s (HTTP %d); run '%s' to see what you have; %s",
			prefix, o.key, p.Message, o.res.Status, listCommand[o.op], o.next())
	case intent.StatusRejected:
		return fmt.Sprintf("%srejected: %s (HTTP %d); %s",
			prefix, p, o.res.Status, o.next())
	}
	return fmt.Sprintf("outcome unknown: %s; your intent is kept — run: reservectl %s --retry", o.why, kindCommand[o.op])
}

// next says that o settled its intent and how to start another: after an
// outcome that had no effect the command of the intent's kind starts one
// by itself; after any other, only new-intent (or --new) does.
func (o outcome) next() string {
	spec, _ := engine.SpecOf(o.op, string(o.status))
	if o.status == intent.StatusRejected || spec.Effect == engine.EffectRefused {
		return fmt.Sprintf("intent %s is settled and had no effect: 'reservectl %s' starts a new one", o.key, startCommand[o.op])
	}
	return fmt.Sprintf("intent %s is settled, run 'reservectl new-intent' to start another", o.key)
}

// holdLine says what an answer about a hold means, without the prefix of
// line.
func (o outcome) holdLine() string {
	a := o.res.Answer
	what := fmt.Sprintf("hold %s (%s in %s)", a.HoldID, places(a.Quantity), a.Workshop)
	settled := o.next()
	switch {
	case o.status == engine.StatusHeld:
		return fmt.Sprintf("held %s in %s until %s (hold %s); run 'reservectl confirm' to reserve them or 'reservectl release' to give them back",
			places(a.Quantity), a.Workshop, a.ExpiresAt.UTC().Format(time.RFC3339), a.HoldID)
	case o.status == engine.StatusReleased && o.op == intent.KindRelease:
		return "released " + what + "; its places are free again"
	case o.status == engine.StatusReleased:
		return fmt.Sprintf("released before: %s was released, so nothing was reserved; %s", what, settled)
	case o.status == engine.StatusExpired:
		step := "confirmation"
		if o.op == intent.KindRelease {
			step = "release"
		}
		return fmt.Sprintf("expired: %s passed its deadline before this %s, its places are free again; %s", what, step, settled)
	case o.status == engine.StatusAlreadyConfirmed:
		return fmt.Sprintf("already confirmed: %s was confirmed before; this intent changed nothing; %s", what, settled)
	}
	return fmt.Sprintf("already released: %s was released before; this intent changed nothing; %s", what, settled)
}

// leaveLine says what an answer to leaving a waiting list means, without
// the prefix of line.
func (o outcome) leaveLine() string {
	a := o.res.Answer
	what := fmt.Sprintf("entry %s (%s in %s)", a.EntryID, places(a.Quantity), a.Workshop)
	switch o.status {
	case engine.StatusLeft:
		return "left the waiting list: " + what + " is off it, and any places it was offered go to the next person waiting"
	case engine.StatusAlreadyLeft:
		return fmt.Sprintf("already left: %s had left the waiting list before; this intent changed nothing; %s", what, o.next())
	case engine.StatusAlreadyReserved:
		return fmt.Sprintf("already reserved: the places offered to %s were reserved before, so it is not on the list; cancel the reservation to give them back; %s", what, o.next())
	}
	return fmt.Sprintf("expired: the offer to %s passed its deadline before this intent, so it left the list and its places went on; %s", what, o.next())
}

// deliveryLine says what an answer about a delivery means, without the
// prefix of line. The workshop and places it names are those of the
// delivery's event.
func (o outcome) deliveryLine() string {
	a := o.res.Answer
	what := fmt.Sprintf("delivery %s (an event of %s in %s)", a.DeliveryID, places(a.Quantity), a.Workshop)
	switch o.status {
	case engine.StatusRequeued:
		return "requeued " + what + ": it is sent again now, under the same id as before"
	case engine.StatusSkipped:
		return fmt.Sprintf("skipped %s: it is not sent again unless 'reservectl admin delivery retry %s' asks", what, a.DeliveryID)
	case engine.StatusAlreadyDelivered:
		return fmt.Sprintf("already delivered: %s was delivered before, so it stays delivered; this intent changed nothing; %s", what, o.next())
	}
	return fmt.Sprintf("already skipped: %s was skipped before; this intent changed nothing; %s", what, o.next())
}

// admissionRefusal says why the workshop's registration window or limit
// per person refused o's places, without the prefix of line.
func (o outcome) admissionRefusal() string {
	a := o.res.Answer
	switch o.status {
	case engine.StatusRegistrationNotOpen:
		return fmt.Sprintf("registration not open: registration for %s has not opened yet, so no place was taken ('reservectl workshops' shows when it opens)", a.Workshop)
	case engine.StatusRegistrationClosed:
		return fmt.Sprintf("registration closed: registration for %s has closed, so no place was taken", a.Workshop)
	}
	return fmt.Sprintf("limit reached: %s more would be over the limit of %s per person in %s (you have %s reserved, held or waited for there already)",
		places(a.Quantity), places(a.Limit.MaxPerPerson), a.Workshop, places(a.Limit.Already))
}

// places says "1 place" or "n places".
func places(n int) string { return count(n, "place") }

// count says n of noun: "1 attempt", "0 attempts", "2 attempts". Every
// noun it is used with forms its plural with an s.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// outcomeJSON is what --json prints for an outcome.
type outcomeJSON struct {
	// Outcome is the status of the answer (reserved, unavailable,
	// waiting, cancelled, already_cancelled, held, expired, released,
	// already_confirmed, already_released, registration_not_open,
	// registration_closed, limit_reached, requeued, skipped,
	// already_delivered, already_skipped, left, already_left,
	// already_reserved), rejected, operation_expired (decided earlier,
	// its answer no longer kept) or unknown.
	Outcome   string              `json:"outcome"`
	Operation engine.OperationKey `json:"operation"`
	Replayed  bool                `json:"replayed"`
	// HTTPStatus is the server's status, 0 without an answer.
	HTTPStatus    int    `json:"http_status,omitempty"`
	ReservationID string `json:"reservation_id,omitempty"`
	// HoldID is the hold the answer is about, if any.
	HoldID string `json:"hold_id,omitempty"`
	// DeliveryID is the delivery the answer is about, if any.
	DeliveryID string `json:"delivery_id,omitempty"`
	// EntryID is the waiting list entry the answer is about, if any, and
	// Position its place in the queue when it joined.
	EntryID  string `json:"entry_id,omitempty"`
	Position int    `json:"position,omitempty"`
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
	// Lost is the outcome the intent had recorded before, which reserved
	// no longer stood by (its database was restored from an earlier
	// backup); this outcome replaces it.
	Lost *lostJSON `json:"lost,omitempty"`
}

// lostJSON is a superseded outcome as --json prints it.
type lostJSON struct {
	Outcome       string    `json:"outcome"`
	ReservationID string    `json:"reservation_id,omitempty"`
	SettledAt     time.Time `json:"settled_at"`
}

// json returns o as --json prints it.
func (o outcome) json() outcomeJSON {
	j := outcomeJSON{
		Outcome:       string(o.status),
		Operation:     o.key,
		Replayed:      o.res.Replayed,
		HTTPStatus:    o.res.Status,
		ReservationID: o.res.Answer.ReservationID,
		HoldID:        o.res.Answer.HoldID,
		DeliveryID:    o.res.Answer.DeliveryID,
		EntryID:       o.res.Answer.EntryID,
		Position:      o.res.Answer.Position,
		Error:         o.why + o.unconfirmed,
		Recorded:      o.unconfirmed != "" || o.notResent,
	}
	if o.lost != nil {
		j.Lost = &lostJSON{Outcome: string(o.lost.Status), ReservationID: o.lost.ReservationID, SettledAt: o.lost.SettledAt}
	}
	switch {
	case len(o.res.Body) == 0:
	case json.Valid(o.res.Body):
		j.Response = json.RawMessage(o.res.Body)
	default:
		j.ResponseText = string(o.res.Body)
	}
	return j
}

// outcomeError is an outcome that does not succeed, returned by a command
// so that Run prints its line and exits with its code.
type outcomeError struct{ o outcome }

// Error returns the outcome's line.
func (e *outcomeError) Error() string { return e.o.line() }

// Unwrap returns the server's rejection, if any.
func (e *outcomeError) Unwrap() error {
	if e.o.res.Problem == nil {
		return nil
	}
	return e.o.res.Problem
}

// report prints the outcome of an intent (a line for a reservation, or the
// JSON of any outcome) and returns the error the command ends with.
func (env *commandEnv) report(o outcome) error {
	if env.json {
		if err := env.printJSON(o.json()); err != nil {
			return err
		}
	} else if o.succeeded() {
		fmt.Fprintln(env.stdout, o.line())
	}
	return o.err()
}

// settledOutcome rebuilds the outcome recorded in a settled intent.
func settledOutcome(in *intent.Intent) outcome {
	rec, ct := in.Outcome, api.MediaJSON
	if rec.Status.Refusal() {
		ct = api.MediaProblem
	}
	res := client.Classify(operation(in), client.Reply{Status: rec.HTTPStatus, ContentType: ct, Body: rec.Body})
	if res.Decided = true; rec.Status.Refusal() && res.Problem == nil {
		res.Problem = &engine.Error{Code: string(rec.Status), Message: string(rec.Body)}
	}
	return outcome{status: rec.Status, op: in.Kind, key: in.Key, res: res}
}
