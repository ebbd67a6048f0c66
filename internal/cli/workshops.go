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

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// newWorkshopsCmd returns "workshops".
func newWorkshopsCmd(env *commandEnv) *cobra.Command {
	var withHidden bool
	cmd := &cobra.Command{
		Use:   "workshops",
		Short: "List the workshops with their capacity and free places",
		Long: `workshops lists the workshops: each one's capacity, the places reserved, held (by
holds whose deadline has not passed, offers from the waiting list among
them) and still available, the most places one reservation may take, and
its version (for "reservectl admin workshop
set --if-match"). Hidden workshops (see "reservectl admin workshop set
--hidden") are left out unless --hidden is given; they are marked so.

When a workshop has a schedule, the list also shows when it takes place
(in the workshop's time zone, with the zone's abbreviation), where (cut to
30 characters), and whether registration is open: "open until" the time it
closes, "opens" at a later time, or "closed". A workshop without one shows
"-" there: it takes reservations at any time. When people wait on a
workshop's waiting list, the list shows how many (WAITING). --json shows
every member, the description, the limit per person and the time an offer
from the waiting list lasts too.`,
		Example: `  reservectl workshops
  reservectl workshops --hidden
  reservectl --json workshops`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := env.callContext(cmd.Context())
			defer cancel()
			list, err := env.client().Workshops(ctx, withHidden)
			if err != nil {
				return fmt.Errorf("list workshops: %w", err)
			}
			return env.print(api.WorkshopList{Workshops: list}, func(out io.Writer) error {
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				scheduled := slices.ContainsFunc(list, func(w engine.Workshop) bool { return !w.Schedule.IsZero() })
				waiting := slices.ContainsFunc(list, func(w engine.Workshop) bool { return w.Waiting > 0 })
				head := "ID\tCAPACITY\tRESERVED\tHELD\tAVAILABLE\t"
				if waiting {
					head += "WAITING\t"
				}
				head += "MAX\tVERSION\t"
				if scheduled {
					head += "WHEN\tWHERE\tREGISTRATION\t"
				}
				fmt.Fprintln(tw, head+"TITLE")
				for _, w := range list {
					title := w.Title
					if w.Hidden {
						title += " (hidden)"
					}
					fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t", w.ID, w.Capacity, w.Reserved, w.Held, w.Available)
					if waiting {
						fmt.Fprintf(tw, "%d\t", w.Waiting)
					}
					fmt.Fprintf(tw, "%d\t%d\t", w.MaxQuantity, w.Version)
					if scheduled {
						fmt.Fprintf(tw, "%s\t%s\t%s\t", orDash(workshopWhen(w)), orDash(engine.Truncate(w.Location, 30)), orDash(workshopRegistration(w)))
					}
					fmt.Fprintln(tw, title)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&withHidden, "hidden", false, "also list the hidden workshops")
	return cmd
}

// orDash is s, or "-" for an empty cell.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// completeWorkshops completes a --workshop flag with the ids of the
// daemon's workshops (their titles as descriptions), asking it for at most
// a second; without an answer it completes nothing.
func completeWorkshops(env *commandEnv) func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if env.resolve() != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), time.Second)
		defer cancel()
		ws, err := env.client().Workshops(ctx, false)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var ids []cobra.Completion
		for _, w := range ws {
			if strings.HasPrefix(w.ID, prefix) {
				ids = append(ids, cobra.CompletionWithDesc(w.ID, w.Title))
			}
		}
		return ids, cobra.ShellCompDirectiveNoFileComp
	}
}
