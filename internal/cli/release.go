package cli

import (
	"github.com/spf13/cobra"

	"github.com/reserve/reserve/internal/intent"
)

// newReleaseCmd returns "release", with --retry.
func newReleaseCmd(env *commandEnv) *cobra.Command {
	var retry bool
	cmd := &cobra.Command{
		Use:   "release [HOLD-ID | --retry]",
		Short: "Give the places of a hold back, exactly once however often you retry",
		Long: `release starts a new intent to release one of your holds: its places are
free again at once. It journals and sends like confirm, and picks its hold
the same way: without HOLD-ID the hold that the state file's settled hold
intent made, which the release intent then replaces in one write; an open
intent is never replaced, and any other settled intent must be cleared with
"reservectl new-intent" first.

release --retry resends the release intent in the state file with the same
key; the server releases at most once and replays its first answer.

Answers: "released" (exit 0); "expired" (exit 3) means the hold's deadline
had passed, so its places were free already; "already released" and
"already confirmed" (then cancel the reservation instead) and rejections
such as an unknown hold (exit 4) settle the intent too. A timeout, a lost or
garbled answer, a server error or an unreachable daemon exit 75 and keep the
intent open for --retry.`,
		Example: `  reservectl hold --workshop workshop-demo --quantity 2
  reservectl release                  # the hold just made
  reservectl release --retry
  reservectl release 0195c1d2e3f4a5b6c7d8e9f0a1b2c3d4`,
		RunE: env.settleHoldCmd(intent.KindRelease, &retry),
	}
	cmd.Flags().BoolVar(&retry, "retry", false, "resend the release intent in the state file (same key, same hold)")
	return cmd
}
