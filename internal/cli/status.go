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
the server has none, nothing was reserved under the key (so far): resend it
with "reservectl reserve --retry".

The exit status follows the intent: 0 reserved (or no intent), 3 unavailable,
4 rejected, 75 still open.`,
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
	// Outcome is none (no intent), reserved, unavailable, rejected or
	// unknown (open).
	Outcome    string             `json:"outcome"`
	Receipt    *api.OperationView `json:"receipt,omitempty"`
	Server     string             `json:"server_says,omitempty"`
	SettledNow bool               `json:"settled_now"`
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
	note, receipt, err := env.askReceipt(ctx, j, in, server)
	if err != nil && !errors.Is(err, intent.ErrMismatch) {
		return err
	}
	rep.Receipt, rep.Server, rep.SettledNow = receipt, note, wasOpen && !in.IsOpen()

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
	if err := env.print(rep, func(w io.Writer) error { printIntent(w, in, note); return nil }); err != nil {
		return err
	}
	return result
}

// askReceipt asks reserved for the receipt of in and settles an open in from
// it. It returns what the server said, in words, and the receipt if found.
// Only a refused identity check of an open intent is returned as an error.
func (env *commandEnv) askReceipt(ctx context.Context, j *intent.Journal, in *intent.Intent, server string) (string, *api.OperationView, error) {
	if in.Attempts == 0 {
		return "nothing was sent yet: run 'reservectl reserve --retry' to send it", nil, nil
	}
	c := env.client()
	who, err := env.whoami(ctx, c)
	if err != nil {
		return "cannot ask reserved: " + describe(err, 0, env.timeout), nil, nil
	}
	if err := in.CheckRetry(server, who.Actor); err != nil {
		return "not asked: " + err.Error(), nil, err
	}
	cctx, cancel := env.callContext(ctx)
	view, err := c.Operation(cctx, in.Key)
	cancel()
	switch engine.ErrorCode(err) {
	case engine.CodeUnknownOperation:
		done := "reserved"
		if in.Kind == intent.KindCancel {
			done = "cancelled"
		}
		return fmt.Sprintf("reserved has no receipt for intent %s: nothing was %s under its key (so far)", in.Key, done), nil, nil
	case engine.CodeOperationExpired:
		return "reserved's receipt expired: " + engine.ErrorMessage(err), nil, nil
	}
	if err != nil {
		return "cannot ask reserved: " + describe(err, 0, env.timeout), nil, nil
	}
	op := operation(in)
	o := outcomeOf(op, in.Key, client.Classify(op, client.Reply{Status: view.HTTPStatus, ContentType: api.MediaJSON, Replayed: true, Body: view.Response}), nil, env.timeout)
	if !o.authoritative() {
		return fmt.Sprintf("reserved's receipt for intent %s does not answer its payload (%d, %d bytes)", in.Key, view.HTTPStatus, len(view.Response)), &view, nil
	}
	if !in.IsOpen() {
		return "reserved has the receipt: " + receiptSummary(o), &view, nil
	}
	if err := settle(j, in, o); err != nil {
		return "", &view, fmt.Errorf("settle intent %s from its receipt: %w", in.Key, err)
	}
	return "reserved has the receipt: " + receiptSummary(o) + "; intent settled now", &view, nil
}

// receiptSummary says what a receipt holds.
func receiptSummary(o outcome) string {
	o.res.Replayed = false
	switch o.status {
	case engine.StatusReserved, engine.StatusCancelled, engine.StatusAlreadyCancelled:
		return o.line()
	case engine.StatusUnavailable:
		return fmt.Sprintf("unavailable (%s in %s)", places(o.res.Answer.Quantity), o.res.Answer.Workshop)
	case intent.StatusRejected:
		return "rejected: " + o.res.Problem.Error()
	}
	return string(o.status)
}

// printIntent prints in and what the server said about it.
func printIntent(w io.Writer, in *intent.Intent, note string) {
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
	fmt.Fprintf(w, "server:   %s\n", in.Server)
	fmt.Fprintf(w, "actor:    %s\n", actor)
	fmt.Fprintf(w, "attempts: %d\n", in.Attempts)
	fmt.Fprintf(w, "created:  %s\n", in.CreatedAt.Local().Format(time.RFC3339))
	fmt.Fprintf(w, "receipt:  %s\n", note)
}
