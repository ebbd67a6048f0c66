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
		hidden  bool
	)
	set := &cobra.Command{
		Use:   "set ID --capacity N [--max-quantity M] [--title T] [--hidden[=false]] [--if-match V]",
		Short: "Create a workshop or change its capacity, limit, title and listing",
		Long: `set creates the workshop ID or updates it. Capacity cannot go below the places
already reserved. Raising it never turns an earlier "unavailable" intent into
a reservation: only a new intent can use the new places. --if-match applies
the change only if the workshop still has that version (see "reservectl
workshops"). --hidden leaves the workshop out of the workshop list (the
browser's and "reservectl workshops"); it can still be read, reserved and
held by its id, and every stored answer replays as stored. --hidden=false
lists it again; without the flag it stays as it is.`,
		Example: `  reservectl admin workshop set workshop-demo --capacity 20
  reservectl admin workshop set go-intro --capacity 12 --max-quantity 2 --title "Intro to Go"
  reservectl admin workshop set go-intro --capacity 16 --if-match 3
  reservectl admin workshop set old-course --capacity 10 --hidden`,
		Args: exactArgs(1, "the workshop ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "capacity"); err != nil {
				return err
			}
			id := args[0]
			if err := engine.ValidateWorkshopID(id); err != nil {
				return flagError("the workshop ID", err)
			}
			var match *uint64
			if cmd.Flags().Changed("if-match") {
				match = &ifMatch
			}
			if cmd.Flags().Changed("hidden") {
				spec.Hidden = &hidden
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
				listing := ""
				if w.Hidden {
					listing = ", hidden from the list"
				}
				_, err := fmt.Fprintf(out, "%s workshop %s: capacity %d, %d reserved, %d available, at most %d per reservation, version %d%s\n",
					verb, w.ID, w.Capacity, w.Reserved, w.Available, w.MaxQuantity, w.Version, listing)
				return err
			})
		},
	}
	f := set.Flags()
	f.IntVar(&spec.Capacity, "capacity", 0, "total places")
	f.IntVar(&spec.MaxQuantity, "max-quantity", 0, "most places one reservation may take (default: unchanged, or the capacity for a new workshop)")
	f.StringVar(&spec.Title, "title", "", "title (default: unchanged, or the id for a new workshop)")
	f.BoolVar(&hidden, "hidden", false, "leave the workshop out of the workshop list (--hidden=false lists it again)")
	f.Uint64Var(&ifMatch, "if-match", 0, "change only if the workshop has this version")
	workshop.AddCommand(set)
	return workshop
}
