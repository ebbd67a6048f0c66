package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/intent"
)

// newAdminDeliveryCmd returns "admin delivery" with "retry" and "skip".
func newAdminDeliveryCmd(env *commandEnv) *cobra.Command {
	delivery := groupCmd("delivery", "Send a delivery again or give it up, exactly once however often you retry",
		`delivery holds the controlled corrections of the deliveries that
"reservectl admin deliveries" lists: "retry" sends one again, "skip" gives
one up on purpose. Each is an intent journaled in the state file and sent
with an operation key like "reservectl cancel", so a repeat after a lost
answer ("--retry") decides nothing twice, and reserved keeps each in the
operations view ("reservectl admin operations").`,
		`  reservectl admin deliveries --failed
  reservectl admin delivery retry 0195c1d2e3f4a5b6c7d8e9f0a1b2c3d4-0195c1d2e3f4a5b6c7d8e9f0a1b2c3d5
  reservectl admin delivery skip --new 0195c1d2e3f4a5b6c7d8e9f0a1b2c3d4-mail`)
	delivery.AddCommand(newDeliveryCorrectionCmd(env, intent.KindRetryDelivery), newDeliveryCorrectionCmd(env, intent.KindSkipDelivery))
	return delivery
}

// correctionHelp is the help of "admin delivery retry" and "skip".
var correctionHelp = map[engine.OperationKind]struct{ use, short, long, flag string }{
	intent.KindRetryDelivery: {
		use:   "retry (DELIVERY-ID [--new] | --retry)",
		short: "Send a delivery again, exactly once however often you retry (admins)",
		long: `retry starts an intent to send the delivery DELIVERY-ID (see "reservectl admin
deliveries") again: the same event under the same id as before (the same
webhook-id, the same Message-ID), now, with its retries counted afresh.
Use it once the receiver that refused a failed delivery is fixed, or for a
delivered one that its receiver lost. reserved does it at most once per
intent, however often you repeat it.`,
		flag: "resend the retry intent in the state file (same key, same delivery)",
	},
	intent.KindSkipDelivery: {
		use:   "skip (DELIVERY-ID [--new] | --retry)",
		short: "Give a delivery up on purpose, exactly once however often you retry (admins)",
		long: `skip starts an intent to give the delivery DELIVERY-ID (see "reservectl admin
deliveries") up on purpose: a pending or failed delivery is not sent
again unless "reservectl admin delivery retry" asks. It stays in the
delivery view as skipped: no record is edited or removed by hand.`,
		flag: "resend the skip intent in the state file (same key, same delivery)",
	},
}

// newDeliveryCorrectionCmd returns "admin delivery retry" or "skip"
// (kind), with --retry and --new.
func newDeliveryCorrectionCmd(env *commandEnv, kind engine.OperationKind) *cobra.Command {
	var retry, fresh bool
	help := correctionHelp[kind]
	word := kindCommand[kind]
	cmd := &cobra.Command{
		Use:   help.use,
		Short: help.short,
		Long: help.long + `

Like "reservectl cancel" it gives the intent a new operation key and writes
it to the state file (fsync'd) before it sends anything; it refuses (exit
2, nothing sent) while the state file holds an open intent, or a settled
one that did something unless --new is given (or "reservectl new-intent"
ran). "reservectl ` + word + ` --retry" resends the intent with the
same key after a timeout, a crash or a lost answer: reserved replays its
first answer ("replayed: …") and does nothing more.

Answers: "requeued" and "skipped" (exit 0); "already delivered" and
"already skipped" (exit 4: the delivery was settled before and this intent
changed nothing); an unknown delivery (unknown_delivery), a caller who is
not an admin, or a key used before for something else are rejected (exit
4); a retry after reserved purged the key's receipt is "decided earlier"
(exit 5). A timeout, a lost or garbled answer, a server error or an
unreachable daemon exit 75 and keep the intent open for --retry.`,
		Example: fmt.Sprintf(`  reservectl admin deliveries --failed
  reservectl %[1]s 0195c1d2e3f4a5b6c7d8e9f0a1b2c3d4-0195c1d2e3f4a5b6c7d8e9f0a1b2c3d5
  reservectl %[1]s --retry            # after "outcome unknown": same key
  reservectl %[1]s --new 0195c1d2e3f4a5b6c7d8e9f0a1b2c3d4-mail   # after another intent that did something
  reservectl --json %[1]s 0195c1d2e3f4a5b6c7d8e9f0a1b2c3d4-mail`, word),
		RunE: func(cmd *cobra.Command, args []string) error {
			if retry {
				if len(args) != 0 || fresh {
					return usageErrorf("--retry resends the recorded intent: do not pass a delivery id or --new")
				}
				return env.retryIntent(cmd.Context(), kind)
			}
			if len(args) != 1 {
				return usageErrorf("%s wants one delivery id or --retry, got %d arguments (see '%s --help')", cmd.CommandPath(), len(args), cmd.CommandPath())
			}
			id := args[0]
			if err := intent.ValidDeliveryID(id); err != nil {
				return usageErrorf("nothing sent: %q %s", engine.Truncate(id, 80), err)
			}
			return env.startIntent(cmd.Context(), kind, fresh, func(server, actor string) (*intent.Intent, error) {
				in, err := intent.NewDeliveryCorrection(kind, id, server, actor)
				if err != nil {
					return nil, fmt.Errorf("%s delivery %s: %w", kind, id, err)
				}
				return in, nil
			})
		},
	}
	cmd.Flags().BoolVar(&retry, "retry", false, help.flag)
	cmd.Flags().BoolVar(&fresh, "new", false, "start a new intent even after a settled one that did something (new-intent and this in one step)")
	return cmd
}
