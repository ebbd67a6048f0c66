package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/intent"
)

// newWaitlistCmd returns "waitlist", which lists one's own waiting list
// entries, with "leave".
func newWaitlistCmd(env *commandEnv) *cobra.Command {
	var f engine.ListFilter
	cmd := &cobra.Command{
		Use:   "waitlist [--status S] [--workshop W] [--limit N] [--cursor C]",
		Short: "List your places on waiting lists and the places offered to you",
		Long: `waitlist shows your waiting list entries, newest first, each with its state
now: "waiting" with its position (1 is next), "offered" with the hold of the
places offered and the offer's deadline (in UTC), "reserved" (you confirmed
the offer), "left" (you left the list or declined the offer) or "expired"
(the offer's deadline passed). --status keeps one state (default all),
--workshop one workshop's. At most --limit are shown (default 50, at most
1000); when there are more, the last line is the command of the next page.
An admin may add --actor to list another actor's. It sends nothing that
changes anything.

You join a waiting list with "reservectl reserve --waitlist": when a
workshop is full, the request waits for a place instead of being answered
"unavailable". Places freed later (a cancellation, a released or expired
hold, a raised capacity) are offered in the order people joined, each
offer a hold of the places asked for until its deadline (the workshop's
offer time, a day unless its organizers chose another). An offer is also
an event waitlist.offered, which reserved mails you when it mails
reservations. To accept an offer, confirm its hold: "reservectl confirm
HOLD-ID". To decline it, "reservectl waitlist leave ENTRY-ID" (or
"reservectl release HOLD-ID"): its places go to the next person waiting.
An offer not confirmed by its deadline expires and goes on the same way.`,
		Example: `  reservectl waitlist
  reservectl waitlist --status offered
  reservectl confirm 0195c1d2e3f4a5b6c7d8e9f0a1b2c3d4   # accept the offer: its HOLD
  reservectl waitlist leave 0195c1d2e3f4a5b6c7d8e9f0a1b2c3d5
  reservectl --json waitlist --workshop workshop-demo`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkWaitFilter(cmd, f); err != nil {
				return err
			}
			ctx, cancel := env.callContext(cmd.Context())
			defer cancel()
			page, err := env.client().Waitlist(ctx, f)
			if err != nil {
				return fmt.Errorf("list waiting list entries: %w", err)
			}
			return env.print(page, func(w io.Writer) error {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ENTRY\tWORKSHOP\tQTY\tSTATE\tPOSITION\tHOLD\tOFFER UNTIL")
				for _, e := range page.Entries {
					fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", e.ID, e.Workshop, e.Quantity, e.State, position(e), orDash(e.HoldID), offerDeadline(e))
				}
				if err := finishList(w, tw, len(page.Entries), "waiting list entries", nextWaitlistCommand(f, page.NextCursor)); err != nil {
					return err
				}
				if slices.ContainsFunc(page.Entries, func(e engine.WaitEntry) bool { return e.State == engine.WaitOffered }) {
					_, err := fmt.Fprintln(w, "accept an offer with 'reservectl confirm HOLD'; decline it with 'reservectl waitlist leave ENTRY'")
					return err
				}
				return nil
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Status, "status", "", "only entries in this state now: "+strings.Join(engine.WaitStatuses, ", ")+" (default all)")
	fl.StringVar(&f.Workshop, "workshop", "", "only this workshop's")
	cmd.RegisterFlagCompletionFunc("workshop", completeWorkshops(env))
	fl.StringVar(&f.Actor, "actor", "", "another actor's (admins only)")
	fl.IntVar(&f.Limit, "limit", engine.DefaultListLimit, fmt.Sprintf("at most this many (1 to %d)", engine.MaxListLimit))
	fl.StringVar(&f.Cursor, "cursor", "", "continue after the page that printed this cursor")
	cmd.AddCommand(newWaitlistLeaveCmd(env))
	return cmd
}

// checkWaitFilter refuses, before anything is sent, a filter of a waiting
// list that the daemon would refuse.
func checkWaitFilter(cmd *cobra.Command, f engine.ListFilter) error {
	if f.Status != "" && !slices.Contains(engine.WaitStatuses, f.Status) {
		return usageErrorf("nothing sent: --status %q is not a state: use one of %s", f.Status, strings.Join(engine.WaitStatuses, ", "))
	}
	if cmd.Flags().Changed("limit") && (f.Limit < 1 || f.Limit > engine.MaxListLimit) {
		return usageErrorf("nothing sent: --limit must be from 1 to %d, not %d", engine.MaxListLimit, f.Limit)
	}
	if f.Workshop != "" {
		if err := engine.ValidateWorkshopID(f.Workshop); err != nil {
			return flagError("--workshop", err)
		}
	}
	return nil
}

// position is e's place in the queue while it waits, else "-".
func position(e engine.WaitEntry) string {
	if e.State != engine.WaitWaiting || e.Position == 0 {
		return "-"
	}
	return fmt.Sprint(e.Position)
}

// offerDeadline is the deadline of the offer made to e, in UTC, else "-".
func offerDeadline(e engine.WaitEntry) string {
	if e.OfferExpiresAt.IsZero() {
		return "-"
	}
	return e.OfferExpiresAt.UTC().Format(time.RFC3339)
}

// nextWaitlistCommand returns the command line of the page of one's own
// entries after cursor, with every filter of f, or "" without a cursor.
func nextWaitlistCommand(f engine.ListFilter, cursor string) string {
	if cursor == "" {
		return ""
	}
	args := []string{"reservectl", "waitlist"}
	for _, fl := range [][2]string{{"--status", f.Status}, {"--workshop", f.Workshop}, {"--actor", f.Actor}} {
		if fl[1] != "" {
			args = append(args, fl[0], fl[1])
		}
	}
	if f.Limit != engine.DefaultListLimit {
		args = append(args, "--limit", fmt.Sprint(f.Limit))
	}
	return strings.Join(append(args, "--cursor", cursor), " ")
}

// newWaitlistLeaveCmd returns "waitlist leave", with --retry.
func newWaitlistLeaveCmd(env *commandEnv) *cobra.Command {
	var retry, fresh bool
	cmd := &cobra.Command{
		Use:   "leave [ENTRY-ID [--new] | --retry]",
		Short: "Leave a waiting list (declining its offer), exactly once however often you retry",
		Long: `leave starts a new intent to take one of your waiting list entries off its
list; an offer made to it is declined, and its places go to the next person
waiting. Like reserve, it gives the intent a new operation key and writes it
to the state file (fsync'd) before it sends anything.

Without ENTRY-ID it leaves the entry that the state file's settled
"reserve --waitlist" intent made: "reservectl reserve --waitlist …" then
"reservectl waitlist leave" just works, and the leave intent replaces that
intent in one write. With ENTRY-ID (see "reservectl waitlist") it leaves
that entry; like cancel, it refuses (exit 2, nothing sent) while the state
file holds an open intent, or a settled one that did something unless --new
is given; a settled intent that had no effect gives way to it, with a note
on stderr.

leave --retry resends the leave intent in the state file with the same key;
the server takes the entry off at most once and replays its first answer
("replayed: …").

Answers: "left" (exit 0); "already left" (exit 0) means the entry had left
the list before, and this intent changed nothing; "expired" (exit 3) means
the offer's deadline had passed, so the entry was off the list already;
"already reserved" (exit 4) means the offer was confirmed: cancel that
reservation to give its places back. An unknown entry, or another's, is
rejected (exit 4). A timeout, a lost or garbled answer, a server error or an
unreachable daemon exit 75 and keep the intent open for --retry.`,
		Example: `  reservectl reserve --workshop workshop-demo --waitlist
  reservectl waitlist leave                  # the entry just made
  reservectl waitlist leave --retry
  reservectl waitlist leave --new 0195c1d2e3f4a5b6c7d8e9f0a1b2c3d5`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if retry {
				if len(args) != 0 || fresh {
					return usageErrorf("--retry resends the recorded intent: do not pass an entry id or --new")
				}
				return env.retryIntent(cmd.Context(), intent.KindLeaveWaitlist)
			}
			if len(args) > 1 {
				return usageErrorf("%s wants at most one entry id, got %d arguments (see '%s --help')", cmd.CommandPath(), len(args), cmd.CommandPath())
			}
			id := ""
			if len(args) == 1 {
				if id = args[0]; !engine.IsWaitEntryID(id) {
					return usageErrorf("nothing sent: %q is not a waiting list entry id (32 lowercase hex digits)", id)
				}
			}
			return env.startLeave(cmd.Context(), id, fresh)
		},
	}
	cmd.Flags().BoolVar(&retry, "retry", false, "resend the leave intent in the state file (same key, same entry)")
	cmd.Flags().BoolVar(&fresh, "new", false, "start a new intent even after a settled one that did something (new-intent and leave in one step)")
	return cmd
}

// startLeave starts the intent to leave entry id, or, for an empty id,
// the entry that the state file's settled intent joined. An open intent
// is never replaced. The settled intent that made the entry is replaced by
// the new intent in one write, if it was made by the same actor on the
// same server; any other settled intent gives way as it gives way to a
// new reservation (by itself after no effect, else with --new).
func (env *commandEnv) startLeave(ctx context.Context, id string, fresh bool) error {
	server, j, prev, err := env.openSession()
	if err != nil {
		return err
	}
	defer j.Close()
	entry, waiting := prev.WaitingEntry()
	switch {
	case prev.IsOpen():
		return refuseNew(prev, intent.KindLeaveWaitlist)
	case id == "" && prev == nil:
		return usageErrorf("no waiting list entry to leave: %s holds no intent; nothing sent: pass an ENTRY-ID ('reservectl waitlist' lists yours), or join a waiting list with 'reservectl reserve --waitlist --workshop ID'", j.Path())
	case id == "" && !waiting:
		return usageErrorf("no waiting list entry to leave: the last intent %s in %s is a settled %s intent (%s) that joined no waiting list; nothing sent: pass an ENTRY-ID ('reservectl waitlist' lists yours)",
			prev.Key, j.Path(), prev.Kind, prev.Outcome.Status)
	case waiting && (id == "" || id == entry):
		return env.begin(ctx, server, j, prev, true, leaveIntent(entry))
	case prev != nil && (fresh || prev.Effect() == engine.EffectRefused):
		env.noteReplaced(prev)
		return env.begin(ctx, server, j, prev, false, leaveIntent(id))
	case prev != nil:
		return refuseNew(prev, intent.KindLeaveWaitlist)
	}
	return env.begin(ctx, server, j, nil, false, leaveIntent(id))
}

// leaveIntent makes the intent to leave waiting list entry id.
func leaveIntent(id string) func(server, actor string) (*intent.Intent, error) {
	return func(server, actor string) (*intent.Intent, error) {
		in, err := intent.NewLeaveWaitlist(id, server, actor)
		if err != nil {
			return nil, fmt.Errorf("leave waiting list entry %s: %w", id, err)
		}
		return in, nil
	}
}
