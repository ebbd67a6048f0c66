package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/intent"
)

// actorNotYetKnown is the actor recorded with an intent that was saved while
// reserved could not say who the caller is (the daemon was unreachable).
// Such an intent has never been sent: the first successful whoami of a
// retry binds it to the real actor and server (see bindUnsent).
const actorNotYetKnown = "not-yet-known"

// newReserveCmd returns "reserve", with --retry.
func newReserveCmd(env *commandEnv) *cobra.Command {
	var (
		workshop string
		quantity int
		retry    bool
		fresh    bool
		waitlist bool
	)
	cmd := &cobra.Command{
		Use:   "reserve (--workshop ID [--quantity N] [--waitlist] [--new] | --retry)",
		Short: "Reserve places in a workshop, exactly once however often you retry",
		Long: `reserve starts a new intent: it gives it a new operation key, writes the key,
the payload, the server and your identity to the state file (fsync'd), and
only then sends it.

While the state file holds an open intent (its outcome unknown), reserve
refuses (exit 2, nothing sent): resend that one with --retry. A settled
intent that had no effect (rejected, say for an unknown workshop or a
quantity above the limit, or unavailable) gives way to the new one, with a
note on stderr ("the previous intent … had no effect; starting a new
intent"). After a settled intent that did something (a reservation) or
whose answer reserved no longer keeps, reserve refuses (exit 2, nothing
sent): run "reservectl new-intent" first, or pass --new, which replaces the
settled intent with the new one in the same fsync'd write.

reserve --retry resends the intent in the state file with the same key and
payload. Whatever happened to the earlier attempts, the server gives the
reservation at most once and replays its first answer ("replayed: …"). A
retry as another actor or to another server is refused (exit 2, nothing
sent).

With --waitlist, a request that finds too few free places (or people
waiting for the workshop's places already, who go first) joins the
workshop's waiting list instead of being answered "unavailable": "waiting:
entry E, position P on the waiting list of W" (exit 0, the 202 answer).
The intent is settled: you need not run anything while you wait. When
places are freed they are offered in the order people joined, as a hold
of the places you asked for until the offer's deadline: "reservectl
waitlist" shows your entries, their positions and any offer with its hold
and deadline; "reservectl confirm HOLD-ID" accepts the offer, "reservectl
release HOLD-ID" or "reservectl waitlist leave" declines it. The state
file records --waitlist with the intent, so --retry sends it again.

Only a 201 reservation, a 202 "waiting", a 409 "unavailable" and a 4xx
rejection settle the intent. A timeout, a lost or garbled answer, a server error (also 503
store_unavailable: reserved's database is unreachable or restarting; and 503
identity_unavailable: on the socket, your uid has no actor yet and the user
database failed to name it) or an unreachable daemon exit 75 and keep the
intent open for --retry. An answer 429 rate_limited (reserved's rate limit
refused the request before deciding it) is sent again, with the same key,
after its Retry-After while --timeout allows; if it is still refused, or
the wait does not fit, it exits 75 too. A retry of a settled intent that gets no answer
reports the recorded outcome ("recorded (…): …") with its exit code.

A retry after reserved purged the intent's receipt (its --receipt-retention
passed) gets 410 operation_expired: reserved decided the intent earlier and
does not do it again, but no longer keeps its answer. An open intent is then
settled as decided earlier ("decided earlier: …", exit 5): run "reservectl
list" to see your reservations. An intent settled before keeps the answer
recorded here, which the retry reports ("recorded (…): …") with its exit
code.

If reserved cannot be reached for a new intent, the intent is recorded
anyway (actor "` + actorNotYetKnown + `", no attempts) and the command exits 75;
the first --retry that reaches reserved binds it to your actor and sends it.

Exit status: 0 reserved, or with --waitlist on the waiting list (first
time or replayed; --json's "outcome" tells "reserved" from "waiting"), 2
refused locally (nothing sent), 3 unavailable, 4 rejected, 5 decided
earlier but its answer is no longer kept, 75 outcome unknown (the intent
stays open), 1 anything else.`,
		Example: `  reservectl reserve --workshop workshop-demo --quantity 2
  reservectl reserve --retry
  reservectl reserve --workshop workshop-demo --waitlist   # full? then wait for a place
  reservectl reserve --new --workshop workshop-demo   # after a reservation: the next one
  reservectl --json reserve --workshop workshop-demo
  reservectl --timeout 30s reserve --retry`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if retry {
				if cmd.Flags().Changed("workshop") || cmd.Flags().Changed("quantity") || cmd.Flags().Changed("waitlist") || fresh {
					return usageErrorf("--retry resends the recorded payload: do not pass --workshop, --quantity, --waitlist or --new")
				}
				return env.retryIntent(cmd.Context(), intent.KindReserve)
			}
			if err := requireFlags(cmd, "workshop"); err != nil {
				return err
			}
			req := engine.Request{Workshop: workshop, Quantity: quantity, Waitlist: waitlist}
			if err := checkRequest(req); err != nil {
				return err
			}
			return env.startIntent(cmd.Context(), intent.KindReserve, fresh, func(server, actor string) (*intent.Intent, error) {
				return intent.NewReserve(req, server, actor)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&workshop, "workshop", "", "id of the workshop")
	cmd.RegisterFlagCompletionFunc("workshop", completeWorkshops(env))
	f.IntVar(&quantity, "quantity", 1, "number of places")
	f.BoolVar(&waitlist, "waitlist", false, "join the workshop's waiting list if too few places are free")
	f.BoolVar(&retry, "retry", false, "resend the intent in the state file (same key, same payload)")
	f.BoolVar(&fresh, "new", false, "start a new intent even after a settled one that reserved something (new-intent and reserve in one step)")
	return cmd
}

// openSession returns the server the flags select and the state file,
// opened and locked for the whole command, with its intent (nil for none).
// The caller closes the journal.
func (env *commandEnv) openSession() (string, *intent.Journal, *intent.Intent, error) {
	server, err := env.serverID()
	if err != nil {
		return "", nil, nil, &usageError{err: err}
	}
	j, in, err := env.openIntent()
	return server, j, in, err
}

// startIntent is the first step of an intent of kind: it makes the new
// intent with newIntent for the server and the caller's actor, records it
// before anything is sent, and sends it. A settled intent in the state
// file that had no effect (a refusal: rejected, unavailable, already
// cancelled, …) is replaced by the new one in the same write, with a note
// on stderr; so is any settled intent when fresh (--new) asks for it. An
// open intent, and without fresh a settled one that did something or
// whose answer reserved no longer keeps, refuse the new intent: nothing is
// sent.
func (env *commandEnv) startIntent(ctx context.Context, kind engine.OperationKind, fresh bool, newIntent func(server, actor string) (*intent.Intent, error)) error {
	server, j, in, err := env.openSession()
	if err != nil {
		return err
	}
	defer j.Close()
	if in != nil {
		if in.IsOpen() || (!fresh && in.Effect() != engine.EffectRefused) {
			return refuseNew(in, kind)
		}
		env.noteReplaced(in)
	}
	return env.begin(ctx, server, j, in, false, newIntent)
}

// noteReplaced says on stderr that the settled intent in gives way to a
// new one: it had no effect, or --new asked for a new intent after it.
func (env *commandEnv) noteReplaced(in *intent.Intent) {
	if in.Effect() == engine.EffectRefused {
		fmt.Fprintf(env.stderr, "note: the previous intent %s (%s) had no effect; starting a new intent\n", in.Key, outcomeWords(in))
		return
	}
	fmt.Fprintf(env.stderr, "note: the previous intent %s (%s) stays as it was settled; starting a new intent\n", in.Key, describeIntent(in))
}

// outcomeWords says what the settled intent in was answered, in a few
// words: the reason of a refusal, or the status of an answer.
func outcomeWords(in *intent.Intent) string {
	o := settledOutcome(in)
	if p := o.res.Problem; p != nil && o.status.Refusal() {
		return string(o.status) + ": " + inFlagWords(p.Message)
	}
	return strings.ReplaceAll(string(o.status), "_", " ")
}

// begin makes the new intent with newIntent for server and the caller's
// actor, records it in j before anything is sent, and sends it. With a
// settled intent prev, which j holds, the new intent replaces it in one
// write; when the new intent continues prev (the confirmation of the hold
// prev made), only if prev was made by the same actor on the same server.
// An intent whose actor cannot be asked (the daemon does not answer) is
// recorded unsent, for retryIntent.
func (env *commandEnv) begin(ctx context.Context, server string, j *intent.Journal, prev *intent.Intent, continues bool, newIntent func(server, actor string) (*intent.Intent, error)) error {
	c := env.client()
	who, werr := env.whoami(ctx, c)
	actor := who.Actor
	switch {
	case isAnswer(werr):
		return fmt.Errorf("%w; nothing was sent and no intent was recorded", werr)
	case refusedSocket(werr):
		return &usageError{err: fmt.Errorf("%w; nothing was sent and no intent was recorded", werr)}
	case werr != nil:
		actor = actorNotYetKnown
	}
	if prev != nil && continues {
		// Without an answer to whoami only the server can be compared.
		recorded := actor
		if werr != nil {
			recorded = prev.Actor
		}
		if err := prev.CheckRetry(server, recorded); err != nil {
			return fmt.Errorf("start from intent %s: %w", prev.Key, err)
		}
	}
	in, err := newIntent(server, actor)
	if err != nil {
		return err
	}
	switch {
	case prev != nil:
		if err := j.Supersede(prev, in); err != nil {
			return fmt.Errorf("record intent: %w", err)
		}
	case werr != nil:
		// The daemon cannot be asked who we are, but the intent must
		// exist before any send could happen: keep it for --retry.
		if err := j.Save(in); err != nil {
			return fmt.Errorf("record intent: %w", err)
		}
	}
	if werr != nil {
		return env.report(env.notSent(in, werr))
	}
	return env.sendReport(ctx, c, j, in)
}

// kindCommand says, for each kind of intent, the command (after
// "reservectl") that starts it and, with --retry, resends it.
var kindCommand = map[engine.OperationKind]string{
	intent.KindReserve:       "reserve",
	intent.KindCancel:        "cancel",
	intent.KindHold:          "hold",
	intent.KindConfirm:       "confirm",
	intent.KindRelease:       "release",
	intent.KindRetryDelivery: "admin delivery retry",
	intent.KindSkipDelivery:  "admin delivery skip",
	intent.KindLeaveWaitlist: "waitlist leave",
}

// startCommand says, for each kind of intent, how to start one.
var startCommand = map[engine.OperationKind]string{
	intent.KindReserve:       "reserve --workshop ID",
	intent.KindCancel:        "cancel RESERVATION-ID",
	intent.KindHold:          "hold --workshop ID",
	intent.KindConfirm:       "confirm HOLD-ID",
	intent.KindRelease:       "release HOLD-ID",
	intent.KindRetryDelivery: "admin delivery retry DELIVERY-ID",
	intent.KindSkipDelivery:  "admin delivery skip DELIVERY-ID",
	intent.KindLeaveWaitlist: "waitlist leave ENTRY-ID",
}

// retryIntent is every later step of the recorded intent, which must be of
// kind: a recorded rejection is reported and not sent again; any other
// intent is sent again with its key and payload, as the actor and to the
// server it was recorded with.
func (env *commandEnv) retryIntent(ctx context.Context, kind engine.OperationKind) error {
	server, j, in, err := env.openSession()
	if err != nil {
		return err
	}
	defer j.Close()
	switch {
	case in == nil:
		return usageErrorf("no intent in %s to retry: start one with 'reservectl %s'", j.Path(), startCommand[kind])
	case in.Kind != kind:
		return usageErrorf("the intent %s in %s is a %s intent, not a %s one; nothing sent: retry it with 'reservectl %s --retry'", in.Key, j.Path(), in.Kind, kind, kindCommand[in.Kind])
	case !in.IsOpen() && in.Outcome.Status.Refusal():
		// The server stored nothing for a rejected intent. Sent again, it
		// could take effect now (say, after an admin raised the workshop's
		// limit): a second outcome of one intent, which the state file
		// would contradict. An intent whose answer expired was decided,
		// and its answer is gone for good. Report the recorded outcome.
		o := settledOutcome(in)
		o.notResent = true
		return env.report(o)
	}
	c := env.client()
	who, err := env.whoami(ctx, c)
	switch {
	case isAnswer(err):
		return fmt.Errorf("%w; nothing was sent, intent %s is kept", err, in.Key)
	case refusedSocket(err):
		return &usageError{err: fmt.Errorf("%w; nothing was sent, intent %s is kept", err, in.Key)}
	case err != nil:
		return env.report(recorded(in, env.notSent(in, err)))
	}
	bindUnsent(in, server, who.Actor)
	if err := in.CheckRetry(server, who.Actor); err != nil {
		return err
	}
	return env.sendReport(ctx, c, j, in)
}

// recorded returns o, unless o is unknown for an intent that was settled
// before: then the outcome is known after all, and recorded returns the
// settled outcome, noting that reserved could not confirm it this time.
func recorded(in *intent.Intent, o outcome) outcome {
	if o.authoritative() || in.IsOpen() {
		return o
	}
	r := settledOutcome(in)
	r.unconfirmed = o.why
	return r
}

// isAnswer reports whether err is a decided answer of reserved (a refusal),
// as opposed to no answer at all or an undecided one such as 503
// store_unavailable.
func isAnswer(err error) bool {
	return err != nil && !client.Undecided(0, err)
}

// bindUnsent binds an intent that was never sent to the current server and
// actor. Nothing can have happened under its key yet, so no reservation can
// be duplicated; an intent sent at least once keeps its server and actor,
// and CheckRetry refuses any other.
func bindUnsent(in *intent.Intent, server, actor string) {
	if in.Attempts == 0 {
		in.Server, in.Actor = server, actor
	}
}

// refuseNew explains why a new intent of kind does not start while the
// state file holds in: in is open, or settled on an outcome that did
// something (or whose answer reserved no longer keeps).
func refuseNew(in *intent.Intent, kind engine.OperationKind) error {
	if in.IsOpen() {
		return usageErrorf("intent %s is still open (outcome unknown, %s); nothing sent: run 'reservectl %s --retry' to resend it, or 'reservectl new-intent --discard-open' to give it up",
			in.Key, count(in.Attempts, "attempt"), kindCommand[in.Kind])
	}
	next := ""
	if _, ok := in.HeldHold(); ok {
		next = "'reservectl confirm' or 'reservectl release' to go on with the hold it made, "
	}
	if _, ok := in.WaitingEntry(); ok {
		next = "'reservectl waitlist' to see your place and any offer, 'reservectl confirm HOLD-ID' to accept an offer, 'reservectl waitlist leave' to leave the list, "
	}
	if in.Outcome.Status == intent.StatusAnswerExpired {
		next = "'" + listCommand[in.Kind] + "' to see what it did, "
	}
	again := "'reservectl new-intent' to start another"
	if fresh, ok := freshCommand[kind]; ok {
		again = fmt.Sprintf("'reservectl %s' (or 'reservectl new-intent' first) to start another", fresh)
	}
	return usageErrorf("the last intent %s is settled (%s); nothing sent: run %s%s, or 'reservectl %s --retry' to see its answer again",
		in.Key, in.Outcome.Status, next, again, kindCommand[in.Kind])
}

// freshCommand says, for each kind of intent that --new can start, how.
var freshCommand = map[engine.OperationKind]string{
	intent.KindReserve:       "reserve --new --workshop ID",
	intent.KindCancel:        "cancel --new RESERVATION-ID",
	intent.KindHold:          "hold --new --workshop ID",
	intent.KindRetryDelivery: "admin delivery retry --new DELIVERY-ID",
	intent.KindSkipDelivery:  "admin delivery skip --new DELIVERY-ID",
	intent.KindLeaveWaitlist: "waitlist leave --new ENTRY-ID",
}

// listCommand says, for each kind of intent, the command that shows what
// such intents did.
var listCommand = map[engine.OperationKind]string{
	intent.KindReserve:       "reservectl list",
	intent.KindCancel:        "reservectl list --all",
	intent.KindHold:          "reservectl list --holds --all",
	intent.KindConfirm:       "reservectl list --holds --all",
	intent.KindRelease:       "reservectl list --holds --all",
	intent.KindRetryDelivery: "reservectl admin deliveries",
	intent.KindSkipDelivery:  "reservectl admin deliveries --state skipped",
	intent.KindLeaveWaitlist: "reservectl waitlist",
}

// notSent is the outcome of an intent that could not be sent because the
// daemon did not answer whoami: still unknown, the intent stays open. When
// the whoami request itself was sent, it says that only that question was.
func (env *commandEnv) notSent(in *intent.Intent, err error) outcome {
	again := in.Attempts > 0
	why := "nothing was sent"
	if again {
		why = "not sent again"
	}
	if errors.As(err, new(*client.SentError)) {
		why = "the intent was not sent, only the question who you are"
		if again {
			why = "the intent was not sent again, only the question who you are"
		}
	}
	o := outcomeOf(operation(in), in.Key, client.Result{}, err, env.timeout)
	o.why = why + ": " + o.why
	return o
}

// sendReport records one more attempt of in, sends it, settles in when the
// answer is authoritative, and reports the outcome.
func (env *commandEnv) sendReport(ctx context.Context, c *client.Client, j *intent.Journal, in *intent.Intent) error {
	if err := j.RecordAttempt(in); err != nil {
		return fmt.Errorf("nothing sent: %w", err)
	}
	op := operation(in)
	cctx, cancel := env.callContext(ctx)
	stop := env.waiting("waiting for reserved's answer")
	res, err := c.Send(cctx, in.Key, op)
	stop()
	cancel()
	o := outcomeOf(op, in.Key, res, err, env.timeout)
	lost, err := settle(j, in, o)
	if err != nil {
		return fmt.Errorf("reserved answered %d for intent %s: %w", o.res.Status, in.Key, err)
	}
	if lost != nil {
		o.lost = lost
		fmt.Fprintln(env.stderr, "note: "+lostLine(in, *lost))
	}
	if expiredAfterSettled(in, o) {
		// The answer recorded here is the one reserved gave and no
		// longer keeps.
		r := settledOutcome(in)
		r.unconfirmed = "its receipt expired after the retention period, so it no longer keeps the answer"
		return env.report(r)
	}
	return env.report(recorded(in, o))
}
