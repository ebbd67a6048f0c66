package cli

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/reserve/reserve/internal/api"
)

// newWorkshopsCmd returns "workshops".
func newWorkshopsCmd(env *commandEnv) *cobra.Command {
	return &cobra.Command{
		Use:   "workshops",
		Short: "List the workshops with their capacity and free places",
		Long: `workshops lists every workshop: its capacity, the places reserved, held (by
holds whose deadline has not passed) and still available, the most places
one reservation may take, and its version (for "reservectl admin workshop
set --if-match").`,
		Example: `  reservectl workshops
  reservectl --json workshops`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := env.callContext(cmd.Context())
			defer cancel()
			list, err := env.client().Workshops(ctx)
			if err != nil {
				return fmt.Errorf("list workshops: %w", err)
			}
			return env.print(api.WorkshopList{Workshops: list}, func(out io.Writer) error {
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tCAPACITY\tRESERVED\tHELD\tAVAILABLE\tMAX\tVERSION\tTITLE")
				for _, w := range list {
					fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", w.ID, w.Capacity, w.Reserved, w.Held, w.Available, w.MaxQuantity, w.Version, w.Title)
				}
				return tw.Flush()
			})
		},
	}
}
