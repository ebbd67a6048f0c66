package cli

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/reserve/reserve/internal/engine"
)

// newAdminAttendeesCmd returns "admin attendees".
func newAdminAttendeesCmd(env *commandEnv) *cobra.Command {
	var (
		f        engine.AttendeeFilter
		all      bool
		asCSV    bool
		statuses = engine.ReservationStatuses
	)
	cmd := &cobra.Command{
		Use:   "attendees WORKSHOP [--csv] [--all | --status S] [--limit N] [--cursor C]",
		Short: "List who has places in a workshop (admins)",
		Long: `attendees lists the reservations of a workshop by actor: who, how many places,
the status, when they reserved and, for a cancelled one, when they cancelled
(times in UTC). By default the active reservations, so the places taken add
up to the workshop's reserved count; --status cancelled lists the
cancelled ones, --all (--status all) both.

Without --limit the whole list is shown. With --limit N one page of N is
shown, and when there are more, the last line names the --cursor of the
next page. --json prints the list (or the page) as one JSON object.

--csv writes the whole list as the daemon's CSV to stdout (RFC 4180, a
header row, CRLF line ends): reservation_id, actor, display_name, email,
quantity, status, created_at, cancelled_at. It is streamed as it comes; an
answer cut short is reported (exit 1), so a partial file never passes as
complete.`,
		Example: `  reservectl admin attendees go-intro
  reservectl admin attendees go-intro --all
  reservectl admin attendees go-intro --csv > go-intro.csv
  reservectl admin attendees go-intro --limit 100
  reservectl --json admin attendees go-intro`,
		Args: exactArgs(1, "the workshop ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			if err := engine.ValidateWorkshopID(id); err != nil {
				return flagError("the workshop ID", err)
			}
			given := cmd.Flags().Changed
			switch {
			case all && given("status"):
				return usageErrorf("nothing sent: --all and --status contradict each other: --all is --status all")
			case all:
				f.Status = engine.ListAll
			case f.Status != "" && !slices.Contains(statuses, f.Status):
				return usageErrorf("nothing sent: --status %q is not a status: use one of %s", f.Status, strings.Join(statuses, ", "))
			}
			if given("limit") && (f.Limit < 1 || f.Limit > engine.MaxListLimit) {
				return usageErrorf("nothing sent: --limit must be from 1 to %d, not %d", engine.MaxListLimit, f.Limit)
			}
			if given("cursor") && !given("limit") {
				return usageErrorf("nothing sent: --cursor continues a page of --limit: give the --limit of that page too")
			}
			ctx, cancel := env.callContext(cmd.Context())
			defer cancel()
			if asCSV {
				switch {
				case env.json:
					return usageErrorf("nothing sent: --csv and --json each choose the output: give one of them")
				case given("limit") || given("cursor"):
					return usageErrorf("nothing sent: --csv writes the whole list: leave out --limit and --cursor")
				}
				if _, err := env.client().AttendeesCSV(ctx, id, f.Status, env.stdout); err != nil {
					return fmt.Errorf("attendees of %s: %w", id, err)
				}
				return nil
			}
			c := env.client()
			page, err := c.Attendees(ctx, id, f)
			if err == nil && !given("limit") {
				page.Attendees, page.NextCursor, err = restOfPages(page.Attendees, page.NextCursor, func(cursor string) ([]engine.Attendee, string, error) {
					more, err := c.Attendees(ctx, id, engine.AttendeeFilter{Status: f.Status, Limit: engine.MaxListLimit, Cursor: cursor})
					return more.Attendees, more.NextCursor, err
				})
			}
			if err != nil {
				return fmt.Errorf("attendees of %s: %w", id, err)
			}
			if env.json {
				return env.printJSON(page)
			}
			tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ACTOR\tQTY\tSTATUS\tRESERVED AT\tCANCELLED AT")
			places := 0
			for _, a := range page.Attendees {
				cancelled := ""
				if !a.CancelledAt.IsZero() {
					cancelled = a.CancelledAt.UTC().Format(time.RFC3339)
				}
				if a.Status == engine.AttendeeActive {
					places += a.Quantity
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", a.Actor, a.Quantity, a.Status, a.CreatedAt.UTC().Format(time.RFC3339), cancelled)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if page.NextCursor != "" {
				return env.morePage("attendees", id, f.Status, f.Limit, page.NextCursor)
			}
			_, err = fmt.Fprintf(env.stdout, "%d reservations, %d active places\n", len(page.Attendees), places)
			return err
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&asCSV, "csv", false, "write the whole list as CSV to stdout")
	fl.BoolVar(&all, "all", false, "list the cancelled reservations too (--status all)")
	fl.StringVar(&f.Status, "status", "", "which reservations: "+strings.Join(statuses, ", ")+" (default active)")
	fl.IntVar(&f.Limit, "limit", 0, fmt.Sprintf("show one page of this many (1 to %d) instead of the whole list", engine.MaxListLimit))
	fl.StringVar(&f.Cursor, "cursor", "", "continue after the page that printed this cursor")
	return cmd
}
