package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/reserve/reserve/internal/intent"
)

// newNewIntentCmd returns "new-intent".
func newNewIntentCmd(env *commandEnv) *cobra.Command {
	var discardOpen bool
	cmd := &cobra.Command{
		Use:   "new-intent [--discard-open]",
		Short: "Clear the settled intent so that the next reserve gets a new key",
		Long: `new-intent removes the intent from the state file once the server has answered
it authoritatively (reserved, unavailable or rejected), so that the next
"reservectl reserve" starts a new intent with a new operation key. After an
intent that did something (a reservation) this, or "reserve --new", is the
only way to reserve again: a retry never makes a second reservation. (An
intent that had no effect, rejected or unavailable, gives way to the next
reserve by itself.)

While the intent is open (its outcome unknown) new-intent refuses (exit 2):
resend it with "reservectl reserve --retry" or settle it with "reservectl
status". --discard-open gives an open intent up anyway, with a warning that
names its key; if the server did receive it, that reservation stands.`,
		Example: `  reservectl new-intent
  reservectl new-intent --discard-open   # give up an intent whose outcome is unknown`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			j, in, err := env.openIntent()
			if err != nil {
				return err
			}
			defer j.Close()
			if in == nil {
				return env.newIntentDone("no intent in %s: the next reserve starts a new one", j.Path())
			}
			what := describeIntent(in)
			if in.IsOpen() {
				if !discardOpen {
					return usageErrorf("intent %s (%s) is open, its outcome unknown: run 'reservectl %s --retry' or 'reservectl status' to settle it, or 'reservectl new-intent --discard-open' to give it up", in.Key, what, kindCommand[in.Kind])
				}
				fmt.Fprintf(env.stderr, "warning: discarding open intent %s (%s, %s): if reserved received it, its effect stands and reservectl will not retry it\n", in.Key, what, count(in.Attempts, "attempt"))
			}
			if err := j.Clear(); err != nil {
				return err
			}
			return env.newIntentDone("cleared intent %s (%s); the next reserve starts a new intent", in.Key, what)
		},
	}
	cmd.Flags().BoolVar(&discardOpen, "discard-open", false, "also discard an intent whose outcome is unknown")
	return cmd
}

// newIntentDone reports what new-intent did.
func (env *commandEnv) newIntentDone(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return env.print(struct {
		Message string `json:"message"`
	}{msg}, func(w io.Writer) error {
		_, err := fmt.Fprintln(w, msg)
		return err
	})
}

// describeRequest says what in asks for, in a few words.
func describeRequest(in *intent.Intent) string {
	op := operation(in)
	switch op.Kind {
	case intent.KindCancel:
		return "cancel reservation " + op.ReservationID
	case intent.KindHold:
		return fmt.Sprintf("hold %s in %s for %s", places(op.Request.Quantity), op.Request.Workshop, time.Duration(op.TTLSeconds)*time.Second)
	case intent.KindConfirm, intent.KindRelease:
		return fmt.Sprintf("%s hold %s", op.Kind, op.HoldID)
	case intent.KindRetryDelivery:
		return "send delivery " + op.DeliveryID + " again"
	case intent.KindSkipDelivery:
		return "skip delivery " + op.DeliveryID
	case intent.KindLeaveWaitlist:
		return "leave waiting list entry " + op.EntryID
	}
	if op.Request.Waitlist {
		return fmt.Sprintf("%s in %s, or a place on its waiting list", places(op.Request.Quantity), op.Request.Workshop)
	}
	return fmt.Sprintf("%s in %s", places(op.Request.Quantity), op.Request.Workshop)
}

// describeIntent says what in asks for and where it stands, in a few words.
func describeIntent(in *intent.Intent) string {
	what := describeRequest(in)
	if in.Outcome != nil {
		what += ", " + string(in.Outcome.Status)
	}
	return what
}
