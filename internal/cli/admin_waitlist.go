package cli

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/reserve/reserve/internal/engine"
)

// morePage prints the command of the page after cursor of "admin
// command" for workshop, with its --status, --limit and --cursor.
func (env *commandEnv) morePage(command, workshop, status string, limit int, cursor string) error {
	next := []string{"reservectl", "admin", command, workshop}
	if status != "" {
		next = append(next, "--status", status)
	}
	_, err := fmt.Fprintf(env.stdout, "more: %s\n", strings.Join(append(next, "--limit", strconv.Itoa(limit), "--cursor", cursor), " "))
	return err
}

// restOfPages appends to items, the first page, every page after its
// cursor next that fetch returns, until one has no cursor or fetch fails:
// a list that the command was not asked to page.
func restOfPages[T any](items []T, next string, fetch func(cursor string) ([]T, string, error)) ([]T, string, error) {
	for next != "" {
		more, cursor, err := fetch(next)
		if err != nil {
			return items, next, err
		}
		items, next = append(items, more...), cursor
	}
	return items, "", nil
}

// newAdminWaitlistCmd returns "admin waitlist".
func newAdminWaitlistCmd(env *commandEnv) *cobra.Command {
	var f engine.ListFilter
	cmd := &cobra.Command{
		Use:   "waitlist WORKSHOP [--status S] [--limit N] [--cursor C]",
		Short: "List a workshop's waiting list in the order people joined (admins)",
		Long: `waitlist lists the waiting list of a workshop in the order people joined it,
which is the order they are offered places in: each entry's position while
it waits (1 is next), who, how many places, its state now (waiting,
offered, reserved, left, expired), the hold offered and the offer's
deadline, and when it joined (times in UTC). --status keeps one state
(default all).

Places freed in the workshop (a cancellation, a released or expired hold,
a raised capacity) are offered to the entries waiting, first come first
served, each offer a hold of the places the entry asked for, which lasts
the workshop's offer time ("admin workshop set --offer-ttl"; a day unless
set). An entry asking for more places than are free keeps its place while
the next ones are served. A workshop with people waiting cannot be deleted.

Without --limit the whole list is shown. With --limit N one page of N is
shown, and when there are more, the last line names the --cursor of the
next page. --json prints the list (or the page) as one JSON object.`,
		Example: `  reservectl admin waitlist go-intro
  reservectl admin waitlist go-intro --status waiting
  reservectl --json admin waitlist go-intro`,
		Args: exactArgs(1, "the workshop ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			if err := engine.ValidateWorkshopID(id); err != nil {
				return flagError("the workshop ID", err)
			}
			if err := checkWaitFilter(cmd, f); err != nil {
				return err
			}
			given := cmd.Flags().Changed
			if given("cursor") && !given("limit") {
				return usageErrorf("nothing sent: --cursor continues a page of --limit: give the --limit of that page too")
			}
			ctx, cancel := env.callContext(cmd.Context())
			defer cancel()
			c := env.client()
			page, err := c.WorkshopWaitlist(ctx, id, f)
			if err == nil && !given("limit") {
				page.Entries, page.NextCursor, err = restOfPages(page.Entries, page.NextCursor, func(cursor string) ([]engine.WaitEntry, string, error) {
					more, err := c.WorkshopWaitlist(ctx, id, engine.ListFilter{Status: f.Status, Limit: engine.MaxListLimit, Cursor: cursor})
					return more.Entries, more.NextCursor, err
				})
			}
			if err != nil {
				return fmt.Errorf("waiting list of %s: %w", id, err)
			}
			if env.json {
				return env.printJSON(page)
			}
			tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "POSITION\tENTRY\tACTOR\tQTY\tSTATE\tHOLD\tOFFER UNTIL\tJOINED")
			waiting := 0
			for _, e := range page.Entries {
				if e.State == engine.WaitWaiting {
					waiting++
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", position(e), e.ID, e.Actor, e.Quantity, e.State, orDash(e.HoldID), offerDeadline(e), e.CreatedAt.UTC().Format(time.RFC3339))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if page.NextCursor != "" {
				return env.morePage("waitlist", id, f.Status, f.Limit, page.NextCursor)
			}
			entries := fmt.Sprintf("%d entries", len(page.Entries))
			if len(page.Entries) == 1 {
				entries = "1 entry"
			}
			_, err = fmt.Fprintf(env.stdout, "%s, %d waiting\n", entries, waiting)
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Status, "status", "", "only entries in this state now: "+strings.Join(engine.WaitStatuses, ", ")+" (default all)")
	fl.IntVar(&f.Limit, "limit", 0, fmt.Sprintf("show one page of this many (1 to %d) instead of the whole list", engine.MaxListLimit))
	fl.StringVar(&f.Cursor, "cursor", "", "continue after the page that printed this cursor")
	return cmd
}
