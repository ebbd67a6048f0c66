package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/reserve/reserve/internal/api"
)

// newWorkshopsCmd returns "workshops".
func newWorkshopsCmd(env *commandEnv) *cobra.Command {
	var withHidden bool
	cmd := &cobra.Command{
		Use:   "workshops",
		Short: "List the workshops with their capacity and free places",
		Long: `workshops lists the workshops: each one's capacity, the places reserved, held (by
holds whose deadline has not passed) and still available, the most places
one reservation may take, and its version (for "reservectl admin workshop
set --if-match"). Hidden workshops (see "reservectl admin workshop set
--hidden") are left out unless --hidden is given; they are marked so.`,
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
				fmt.Fprintln(tw, "ID\tCAPACITY\tRESERVED\tHELD\tAVAILABLE\tMAX\tVERSION\tTITLE")
				for _, w := range list {
					title := w.Title
					if w.Hidden {
						title += " (hidden)"
					}
					fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", w.ID, w.Capacity, w.Reserved, w.Held, w.Available, w.MaxQuantity, w.Version, title)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&withHidden, "hidden", false, "also list the hidden workshops")
	return cmd
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
