package daemon

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/seed"
)

// seedOptions are the flags of the hidden `reserved seed`.
type seedOptions struct {
	db          string
	workshops   []string
	perWorkshop int
	batch       int
}

// newSeedCmd returns `reserved seed`, a hidden developer command that fills
// a database with many reservations through the engine (package seed), so
// benchmarks can start from a large database that passes `reserved check`.
func newSeedCmd(stdout io.Writer) *cobra.Command {
	o := &seedOptions{}
	cmd := &cobra.Command{
		Use:    "seed --db PATH [--workshop ID]... [--per-workshop N]",
		Short:  "Fill a database with many reservations (for benchmarks)",
		Hidden: true,
		Long: `seed opens (or creates) a database while no reserved runs on it and makes
--per-workshop reservations of one place in each --workshop, each with its
receipt, through the same engine decision as the daemon, many per
transaction. Workshops that do not exist are created with a capacity of
1,000,000,000 and a maximum of 10 places per reservation.

The database of docs/benchmarks.md with 1,000,000 reservations, 500,000 of
them in the target workshop "bench", is:

  reserved seed --db big.db --workshop bench --workshop other --per-workshop 500000`,
		Example: `  reserved seed --db /tmp/big.db --workshop bench --workshop other --per-workshop 500000`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.db == "" || len(o.workshops) == 0 || o.perWorkshop < 1 {
				return &exitError{code: ExitUsage, err: fmt.Errorf("seed needs --db, at least one --workshop and a positive --per-workshop")}
			}
			for _, id := range o.workshops {
				if err := engine.ValidateWorkshopID(id); err != nil {
					return &exitError{code: ExitUsage, err: fmt.Errorf("--workshop: %w", err)}
				}
			}
			store, err := boltstore.Open(o.db, boltstore.Options{})
			if err != nil {
				return err
			}
			defer store.Close()
			start := time.Now()
			total := o.perWorkshop * len(o.workshops)
			plan := seed.Plan{Workshops: o.workshops, PerWorkshop: o.perWorkshop, Batch: o.batch, Progress: func(done int) {
				fmt.Fprintf(stdout, "seeded %d of %d reservations\n", done, total)
			}}
			if err := seed.Run(cmd.Context(), engine.New(store), plan); err != nil {
				return err
			}
			if err := store.Close(); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "seeded %d reservations into %s in %v\n", total, o.db, time.Since(start).Round(time.Second))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.db, "db", "", "database file, created if missing (no reserved may be running on it)")
	f.StringSliceVar(&o.workshops, "workshop", nil, "workshop to fill (repeatable)")
	f.IntVar(&o.perWorkshop, "per-workshop", 0, "reservations to make in each workshop")
	f.IntVar(&o.batch, "batch", 0, "intents per transaction (default 10,000)")
	return cmd
}
