package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/reserve/reserve/internal/engine"
)

// newAdminWorkshopCmd returns "admin workshop" with "set".
func newAdminWorkshopCmd(env *commandEnv) *cobra.Command {
	workshop := groupCmd("workshop", "Create or change workshops", "",
		"  reservectl admin workshop set workshop-demo --capacity 20 --max-quantity 4")
	var (
		spec    engine.WorkshopSpec
		ifMatch uint64
	)
	set := &cobra.Command{
		Use:   "set ID --capacity N [--max-quantity M] [--title T] [--if-match V]",
		Short: "Create a workshop or change its capacity, limit and title",
		Long: `set creates the workshop ID or updates it. Capacity cannot go below the places
already reserved. Raising it never turns an earlier "unavailable" intent into
a reservation: only a new intent can use the new places. --if-match applies
the change only if the workshop still has that version (see "reservectl
workshops").`,
		Example: `  reservectl admin workshop set workshop-demo --capacity 20
  reservectl admin workshop set go-intro --capacity 12 --max-quantity 2 --title "Intro to Go"
  reservectl admin workshop set go-intro --capacity 16 --if-match 3`,
		Args: exactArgs(1, "the workshop ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "capacity"); err != nil {
				return err
			}
			id := args[0]
			if err := engine.ValidateWorkshopID(id); err != nil {
				return usageErrorf("workshop id: %v", err)
			}
			var match *uint64
			if cmd.Flags().Changed("if-match") {
				match = &ifMatch
			}
			ctx, cancel := env.callContext(cmd.Context())
			defer cancel()
			w, created, err := env.client().PutWorkshop(ctx, id, spec, match)
			if err != nil {
				return fmt.Errorf("set workshop %s: %w", id, err)
			}
			return env.print(w, func(out io.Writer) error {
				verb := "updated"
				if created {
					verb = "created"
				}
				_, err := fmt.Fprintf(out, "%s workshop %s: capacity %d, %d reserved, %d available, at most %d per reservation, version %d\n",
					verb, w.ID, w.Capacity, w.Reserved, w.Available, w.MaxQuantity, w.Version)
				return err
			})
		},
	}
	f := set.Flags()
	f.IntVar(&spec.Capacity, "capacity", 0, "total places")
	f.IntVar(&spec.MaxQuantity, "max-quantity", 0, "most places one reservation may take (default: unchanged, or the capacity for a new workshop)")
	f.StringVar(&spec.Title, "title", "", "title (default: unchanged, or the id for a new workshop)")
	f.Uint64Var(&ifMatch, "if-match", 0, "change only if the workshop has this version")
	workshop.AddCommand(set)
	return workshop
}
