package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/intent"
)

// newStatusCmd returns "status".
func newStatusCmd(env *commandEnv) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the local intent and the server's receipt for it",
		Long: `status shows the intent in the state file and asks reserved for its receipt
(GET /api/v1/operations/{key}). When the intent is open and the server has
a receipt, status settles the intent from it, without sending it again. When
the server has none, nothing was done under the key (so far): resend it
with the intent's command and --retry, e.g. "reservectl reserve --retry".

For an intent about a hold (a hold that was made, or the hold a confirm or
release intent names) status also shows the hold as it stands now
(GET /api/v1/holds/{id}): held until its deadline, confirmed with its
reservation, released, or expired.

The exit status follows the intent as the command that made it would exit:
0 reserved, cancelled, held or released, on a waiting list or off it (or no
intent), 3 unavailable or expired, 4 rejected or settled before, 5 decided
earlier but its answer is no longer kept (see "reservectl list"), 75 still
open.`,
		Example: `  reservectl status
  reservectl --json status`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return env.status(cmd.Context())
		},
	}
}

// statusJSON is what status --json prints.
type statusJSON struct {
	StateFile string         `json:"state_file"`
	Intent    *intent.Intent `json:"intent"`
	// Outcome is none (no intent), the status of the recorded answer
	// (reserved, unavailable, held, expired, …), rejected or unknown
	// (open).
	Outcome    string             `json:"outcome"`
	Receipt    *api.OperationView `json:"receipt,omitempty"`
	Server     string             `json:"server_says,omitempty"`
	SettledNow bool               `json:"settled_now"`
	// Hold is the hold the intent is about, as reserved has it now, and
	// HoldSays why it is missing when reserved could not be asked.
	Hold     *engine.Hold `json:"hold,omitempty"`
	HoldSays string       `json:"hold_says,omitempty"`
}

// status reports the intent and settles an open one from its receipt.
func (env *commandEnv) status(ctx context.Context) error {
	server, j, in, err := env.openSession()
	if err != nil {
		return err
	}
	defer j.Close()
	rep := statusJSON{StateFile: j.Path(), Intent: in, Outcome: "none"}
	if in == nil {
		return env.print(rep, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "no intent in %s: the next reserve starts a new one\n", j.Path())
			return err
		})
	}

	wasOpen := in.IsOpen()
	note, receipt, asked, err := env.askReceipt(ctx, j, in, server)
	if err != nil && !errors.Is(err, intent.ErrMismatch) {
		return err
	}
	rep.Receipt, rep.Server, rep.SettledNow = receipt, note, wasOpen && !in.IsOpen()
	if id := holdOf(in); id != "" {
		rep.Hold, rep.HoldSays = env.askHold(ctx, id, asked)
	}

	var result error
	switch {
	case in.IsOpen() && err != nil:
		rep.Outcome, result = string(intent.StatusOpen), err // The identity check refused.
	case in.IsOpen():
		rep.Outcome = string(intent.StatusOpen)
		result = (outcome{status: intent.StatusOpen, op: in.Kind, key: in.Key, why: note}).err()
	default:
		o := settledOutcome(in)
		rep.Outcome = string(o.status)
		result = o.err()
	}
	if err := env.print(rep, func(w io.Writer) error { printIntent(w, in, note, rep.Hold, rep.HoldSays); return nil }); err != nil {
		return err
	}
	return result
}

// askReceipt asks reserved for the receipt of in and settles an open in from
// it. It returns what the server said, in words, the receipt if found, and
// whether reserved was asked as the intent's actor. Only a refused identity
// check of an open intent is returned as an error.
func (env *commandEnv) askReceipt(ctx context.Context, j *intent.Journal, in *intent.Intent, server string) (string, *api.OperationView, bool, error) {
	if in.Attempts == 0 {
		return fmt.Sprintf("nothing was sent yet: run 'reservectl %s --retry' to send it", kindCommand[in.Kind]), nil, false, nil
	}
	if in.Settled() && in.Outcome.Status == intent.StatusRejected {
		return "none: a rejection stores no receipt, so there is nothing to ask reserved", nil, false, nil
	}
	if in.Settled() && in.Outcome.Status == intent.StatusAnswerExpired {
		return "none: reserved no longer keeps the answer (its receipt expired), so there is nothing to ask reserved; run '" + listCommand[in.Kind] + "' to see what you have", nil, false, nil
	}
	c := env.client()
	who, err := env.whoami(ctx, c)
	if err != nil {
		return "cannot ask reserved: " + describe(err, 0, env.timeout), nil, false, nil
	}
	if err := in.CheckRetry(server, who.Actor); err != nil {
		return "not asked: " + err.Error(), nil, false, err
	}
	cctx, cancel := env.callContext(ctx)
	view, err := c.Operation(cctx, in.Key)
	cancel()
	switch engine.ErrorCode(err) {
	case engine.CodeUnknownOperation:
		if in.Settled() {
			return fmt.Sprintf("reserved has no receipt for intent %s although it answered it before: its database was restored from a backup taken before that answer, which was lost with the restore; 'reservectl %s --retry' sends the intent again and reserved decides it anew",
				in.Key, kindCommand[in.Kind]), nil, true, nil
		}
		return fmt.Sprintf("reserved has no receipt for intent %s: nothing was %s under its key (so far)", in.Key, doneWord[in.Kind]), nil, true, nil
	case engine.CodeOperationExpired:
		if in.IsOpen() {
			return fmt.Sprintf("reserved decided intent %s earlier but its receipt expired: %s; 'reservectl %s --retry' settles the intent without doing anything again, and '%s' shows what you have",
				in.Key, engine.ErrorMessage(err), kindCommand[in.Kind], listCommand[in.Kind]), nil, true, nil
		}
		return "reserved's receipt expired: " + engine.ErrorMessage(err) + "; the answer recorded here stands", nil, true, nil
	}
	if err != nil {
		return "cannot ask reserved: " + describe(err, 0, env.timeout), nil, false, nil
	}
	op := operation(in)
	o := outcomeOf(op, in.Key, client.Classify(op, client.Reply{Status: view.HTTPStatus, ContentType: api.MediaJSON, Replayed: true, Body: view.Response}), nil, env.timeout)
	if !o.authoritative() {
		return fmt.Sprintf("reserved's receipt for intent %s does not answer its payload (%d, %d bytes)", in.Key, view.HTTPStatus, len(view.Response)), &view, true, nil
	}
	if !in.IsOpen() && in.Outcome.SameAnswer(o.settlement()) {
		return "reserved has the receipt: " + receiptSummary(o), &view, true, nil
	}
	lost, err := settle(j, in, o)
	if err != nil {
		return "", &view, true, fmt.Errorf("settle intent %s from its receipt: %w", in.Key, err)
	}
	if lost != nil {
		return "reserved has the receipt: " + receiptSummary(o) + "; intent settled on it now, and " + lostLine(in, *lost), &view, true, nil
	}
	return "reserved has the receipt: " + receiptSummary(o) + "; intent settled now", &view, true, nil
}

// doneWord says, for each kind of intent, what its operation does.
var doneWord = map[engine.OperationKind]string{
	intent.KindReserve:       "reserved",
	intent.KindCancel:        "cancelled",
	intent.KindHold:          "held",
	intent.KindConfirm:       "confirmed",
	intent.KindRelease:       "released",
	intent.KindRetryDelivery: "sent again",
	intent.KindSkipDelivery:  "skipped",
	intent.KindLeaveWaitlist: "left",
}

// holdOf returns the hold in is about: the one a settled hold intent made,
// or the one a confirm or release intent names; "" for none.
func holdOf(in *intent.Intent) string {
	if id, ok := in.HeldHold(); ok {
		return id
	}
	if ref, err := in.HoldRef(); err == nil {
		return ref.HoldID
	}
	return ""
}

// askHold asks reserved for hold id as it stands now, if the receipt could
// be asked for as the intent's actor (asked); else it says that it was not
// asked either, for the reason the receipt's line gives.
func (env *commandEnv) askHold(ctx context.Context, id string, asked bool) (*engine.Hold, string) {
	if !asked {
		return nil, fmt.Sprintf("%s, not asked (see receipt)", id)
	}
	cctx, cancel := env.callContext(ctx)
	defer cancel()
	h, err := env.client().Hold(cctx, id)
	switch {
	case engine.ErrorCode(err) == engine.CodeUnknownHold:
		return nil, fmt.Sprintf("%s: reserved knows no such hold of yours (it does not exist, or it is another actor's)", id)
	case err != nil:
		return nil, fmt.Sprintf("%s, cannot ask reserved: %s", id, describe(err, 0, env.timeout))
	}
	return &h, ""
}

// holdState says where hold h stands, in a few words.
func holdState(h *engine.Hold) string {
	what := fmt.Sprintf("%s (%s in %s)", h.ID, places(h.Quantity), h.Workshop)
	switch h.State {
	case engine.HoldHeld:
		return fmt.Sprintf("%s held until %s", what, h.ExpiresAt.UTC().Format(time.RFC3339))
	case engine.HoldConfirmed:
		return fmt.Sprintf("%s confirmed: reservation %s", what, h.ReservationID)
	case engine.HoldExpired:
		return fmt.Sprintf("%s expired at %s", what, h.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("%s %s", what, h.State)
}

// receiptSummary says what a receipt holds.
func receiptSummary(o outcome) string {
	o.res.Replayed = false
	a := o.res.Answer
	switch {
	case o.status == engine.StatusHeld:
		return fmt.Sprintf("held %s in %s until %s (hold %s)", places(a.Quantity), a.Workshop, a.ExpiresAt.UTC().Format(time.RFC3339), a.HoldID)
	case o.succeeded():
		return o.line()
	case o.status == engine.StatusUnavailable:
		return fmt.Sprintf("unavailable (%s in %s)", places(a.Quantity), a.Workshop)
	case engine.IsAdmissionRefusal(string(o.status)):
		return o.admissionRefusal()
	case o.status == intent.StatusRejected:
		return "rejected: " + inFlagWords(o.res.Problem.Error())
	case o.status == intent.StatusAnswerExpired:
		return "decided earlier, its answer no longer kept: " + o.res.Problem.Message
	case a.HoldID != "":
		return fmt.Sprintf("%s (hold %s, %s in %s)", o.status, a.HoldID, places(a.Quantity), a.Workshop)
	case a.DeliveryID != "":
		return fmt.Sprintf("%s (delivery %s)", o.status, a.DeliveryID)
	}
	return string(o.status)
}

// printIntent prints in, what the server said about it, and the hold it
// is about (h, or holdNote why it is missing), if any.
func printIntent(w io.Writer, in *intent.Intent, note string, h *engine.Hold, holdNote string) {
	state := "open, outcome unknown"
	if in.Outcome != nil {
		state = "settled: " + receiptSummary(settledOutcome(in))
	}
	actor := in.Actor
	if in.Attempts == 0 && actor == actorNotYetKnown {
		actor = "not yet known (nothing sent)"
	}
	fmt.Fprintf(w, "intent:   %s\n", in.Key)
	fmt.Fprintf(w, "request:  %s\n", describeRequest(in))
	fmt.Fprintf(w, "state:    %s\n", state)
	for _, lost := range in.Superseded {
		what := string(lost.Status)
		if lost.ReservationID != "" {
			what += ", reservation " + lost.ReservationID
		}
		fmt.Fprintf(w, "lost:     %s, recorded %s, lost with a restore of reserved's database\n", what, lost.SettledAt.Local().Format(time.RFC3339))
	}
	fmt.Fprintf(w, "server:   %s\n", in.Server)
	fmt.Fprintf(w, "actor:    %s\n", actor)
	fmt.Fprintf(w, "attempts: %d\n", in.Attempts)
	fmt.Fprintf(w, "created:  %s\n", in.CreatedAt.Local().Format(time.RFC3339))
	fmt.Fprintf(w, "receipt:  %s\n", note)
	switch {
	case h != nil:
		fmt.Fprintf(w, "hold:     %s\n", holdState(h))
	case holdNote != "":
		fmt.Fprintf(w, "hold:     %s\n", holdNote)
	}
}
