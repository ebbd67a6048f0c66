package cli

import (
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/intent"
)

// defaultHoldTTL is how long a hold keeps its places unless --ttl says.
const defaultHoldTTL = 10 * time.Minute

// newHoldCmd returns "hold", with --retry.
func newHoldCmd(env *commandEnv) *cobra.Command {
	var (
		workshop string
		quantity int
		ttl      time.Duration
		retry    bool
		fresh    bool
	)
	cmd := &cobra.Command{
		Use:   "hold (--workshop ID [--quantity N] [--ttl DURATION] [--new] | --retry)",
		Short: "Hold places in a workshop until a deadline, exactly once however often you retry",
		Long: `hold starts a new intent to keep places of a workshop for you for a while,
say while you pay: like reserve, it gives the intent a new operation key and
writes it to the state file (fsync'd) before it sends anything. Like
reserve, it refuses (exit 2, nothing sent) while the state file holds an
open intent, or a settled one that did something unless --new is given; a
settled intent that had no effect gives way to it, with a note on stderr.

The held places count against the workshop's capacity until the hold is
confirmed ("reservectl confirm", which makes them a reservation), released
("reservectl release"), or its deadline passes, whichever comes first. The
deadline is the server's time of the decision, to the second, plus --ttl: a
Go duration of whole seconds from 30s to 24h (default 10m). A hold whose
deadline has passed can no longer be confirmed.

hold --retry resends the hold intent in the state file with the same key and
payload; the server holds at most once and replays its first answer
("replayed: …").

Answers: "held" (exit 0) names the hold and its deadline; "unavailable"
(exit 3) means not enough free places; a rejection (exit 4) settles the
intent too. A timeout, a lost or garbled answer, a server error or an
unreachable daemon exit 75 and keep the intent open for --retry.`,
		Example: `  reservectl hold --workshop workshop-demo --quantity 2 --ttl 15m
  reservectl hold --retry
  reservectl confirm                  # reserve the places of the hold just made
  reservectl --json hold --workshop workshop-demo`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if retry {
				if cmd.Flags().Changed("workshop") || cmd.Flags().Changed("quantity") || cmd.Flags().Changed("ttl") || fresh {
					return usageErrorf("--retry resends the recorded payload: do not pass --workshop, --quantity, --ttl or --new")
				}
				return env.retryIntent(cmd.Context(), intent.KindHold)
			}
			if err := requireFlags(cmd, "workshop"); err != nil {
				return err
			}
			seconds, err := holdTTLSeconds(ttl)
			if err != nil {
				return err
			}
			req := engine.HoldRequest{Workshop: workshop, Quantity: quantity, TTLSeconds: seconds}
			if err := checkRequest(engine.Request{Workshop: workshop, Quantity: quantity}); err != nil {
				return err
			}
			return env.startIntent(cmd.Context(), intent.KindHold, fresh, func(server, actor string) (*intent.Intent, error) {
				return intent.NewHold(req, server, actor)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&workshop, "workshop", "", "id of the workshop")
	cmd.RegisterFlagCompletionFunc("workshop", completeWorkshops(env))
	f.IntVar(&quantity, "quantity", 1, "number of places")
	f.DurationVar(&ttl, "ttl", defaultHoldTTL, "how long the places are held: whole seconds from 30s to 24h, e.g. 90s, 15m, 2h")
	f.BoolVar(&retry, "retry", false, "resend the hold intent in the state file (same key, same payload)")
	f.BoolVar(&fresh, "new", false, "start a new intent even after a settled one that did something (new-intent and hold in one step)")
	return cmd
}

// holdTTLSeconds returns --ttl in seconds, or a usage error for a duration
// that is not whole seconds from engine.MinHoldTTLSeconds to
// engine.MaxHoldTTLSeconds.
func holdTTLSeconds(ttl time.Duration) (int, error) {
	lo, hi := time.Duration(engine.MinHoldTTLSeconds)*time.Second, time.Duration(engine.MaxHoldTTLSeconds)*time.Second
	if ttl%time.Second != 0 || ttl < lo || ttl > hi {
		return 0, usageErrorf("nothing sent: --ttl must be whole seconds from %s to %s, not %s", lo, shortDuration(hi), ttl)
	}
	return int(ttl / time.Second), nil
}

// shortDuration writes d without zero minutes and seconds: 24h, not
// 24h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if d%time.Minute == 0 {
		s = strings.TrimSuffix(s, "0s")
	}
	if d%time.Hour == 0 {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
