package cli

import (
	"github.com/spf13/cobra"

	"github.com/reserve/reserve/internal/intent"
)

// newConfirmCmd returns "confirm", with --retry.
func newConfirmCmd(env *commandEnv) *cobra.Command {
	var retry bool
	cmd := &cobra.Command{
		Use:   "confirm [HOLD-ID | --retry]",
		Short: "Turn a hold into a reservation, exactly once however often you retry",
		Long: `confirm starts a new intent to confirm one of your holds: its places become
a reservation, with no new check of the workshop's capacity (they were
kept for you). Like reserve, it gives the intent a new operation key and
writes it to the state file (fsync'd) before it sends anything.

Without HOLD-ID it confirms the hold that the state file's hold intent made:
"reservectl hold …" then "reservectl confirm" just works. The settled hold
intent is then replaced by the confirm intent in one write (the hold's id
lives on in its payload); it must have been made by you on the same server.
With HOLD-ID it confirms that hold, and the state file must hold no intent,
or the hold intent that made that very hold. An open intent, whatever its
kind, is never replaced (exit 2, nothing sent): resend it with --retry, or
give it up with "reservectl new-intent --discard-open". Any other settled
intent must be cleared with "reservectl new-intent" first.

confirm --retry resends the confirm intent in the state file with the same
key; the server confirms at most once and replays its first answer
("replayed: …").

Answers: "reserved" (exit 0) names the new reservation; "expired" (exit 3)
means the hold's deadline passed first and its places are free again;
"released before" (the hold was released), "already confirmed" (by another
intent) and rejections such as an unknown hold (exit 4) settle the intent
too. A timeout, a lost or garbled answer, a server error or an unreachable
daemon exit 75 and keep the intent open for --retry.`,
		Example: `  reservectl hold --workshop workshop-demo --quantity 2 --ttl 15m
  reservectl confirm                  # the hold just made
  reservectl confirm --retry          # after "outcome unknown": same key
  reservectl confirm 0195c1d2e3f4a5b6c7d8e9f0a1b2c3d4`,
		RunE: env.settleHoldCmd(intent.KindConfirm, &retry),
	}
	cmd.Flags().BoolVar(&retry, "retry", false, "resend the confirm intent in the state file (same key, same hold)")
	return cmd
}
