package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/intent"
)

// newCancelCmd returns "cancel", with --retry.
func newCancelCmd(env *commandEnv) *cobra.Command {
	var retry, fresh bool
	cmd := &cobra.Command{
		Use:   "cancel (RESERVATION-ID [--new] | --retry)",
		Short: "Cancel a reservation, exactly once however often you retry",
		Long: `cancel starts a new intent to cancel one of your reservations (any, for an
admin): like reserve, it gives the intent a new operation key and writes it
to the state file (fsync'd) before it sends anything. Like reserve, it
refuses (exit 2, nothing sent) while the state file holds an open intent
(settle it first), or a settled one that did something unless --new is given
(or "reservectl new-intent" ran); a settled intent that had no effect gives
way to it, with a note on stderr.

cancel --retry resends the cancel intent in the state file with the same key.
The server cancels at most once and replays its first answer ("replayed: …").

Answers: "cancelled" (exit 0) frees the places at once; "already cancelled"
(exit 0) means the reservation had been cancelled before and this intent
changed nothing; an unknown or foreign reservation or a key used before for
something else is rejected (exit 4); a retry after reserved purged the key's
receipt is "decided earlier" (exit 5: "reservectl list --all" shows whether
the reservation is cancelled). A timeout, a lost or garbled answer, a server
error or an unreachable daemon exit 75 and keep the intent open for --retry.`,
		Example: `  reservectl cancel 0195c1d2e3f4a5b6c7d8e9f0a1b2c3d4
  reservectl cancel --retry
  reservectl --json cancel 0195c1d2e3f4a5b6c7d8e9f0a1b2c3d4`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if retry {
				if len(args) != 0 || fresh {
					return usageErrorf("--retry resends the recorded intent: do not pass a reservation id or --new")
				}
				return env.retryIntent(cmd.Context(), intent.KindCancel)
			}
			if len(args) != 1 {
				return usageErrorf("%s wants one reservation id or --retry, got %d arguments (see '%s --help')", cmd.CommandPath(), len(args), cmd.CommandPath())
			}
			id := args[0]
			if !engine.IsReservationID(id) {
				return usageErrorf("nothing sent: %q is not a reservation id (32 lowercase hex digits)", id)
			}
			return env.startIntent(cmd.Context(), intent.KindCancel, fresh, func(server, actor string) (*intent.Intent, error) {
				in, err := intent.NewCancel(id, server, actor)
				if err != nil {
					return nil, fmt.Errorf("cancel %s: %w", id, err)
				}
				return in, nil
			})
		},
	}
	cmd.Flags().BoolVar(&retry, "retry", false, "resend the cancel intent in the state file (same key, same reservation)")
	cmd.Flags().BoolVar(&fresh, "new", false, "start a new intent even after a settled one that did something (new-intent and cancel in one step)")
	return cmd
}
