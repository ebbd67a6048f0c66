package daemon

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/migrate"
)

// newMigrateCmd returns `reserved migrate`, which moves a bbolt database
// into a new PostgreSQL database.
func newMigrateCmd(stdout io.Writer) *cobra.Command {
	var from, to storeFlags
	cmd := &cobra.Command{
		Use:   "migrate --from-db FILE --to-dsn DSN",
		Short: "Copy a bbolt database into a new, empty PostgreSQL database",
		Long: `migrate copies everything in a bbolt database into a PostgreSQL database,
so that several daemons can share it: workshops with their counters,
reservations, receipts, tombstones, credentials (only their hashes),
confirmation events and the bindings of socket peers' uids to their actors.
Operation keys recorded before the move replay their original answers after
it, on every daemon.

The copy reads one snapshot of the file and writes in one PostgreSQL
transaction: it is complete or absent. It refuses a target that holds any
record, and a file that a running reserved holds: stop the daemon first, so
no reservation is made after the snapshot. Afterwards it checks the target
like "reserved check".

Exit status: 0 copied and consistent, 1 findings after the copy, 2 a
database cannot be opened or the target is not empty (nothing copied).`,
		Example: `  reserved migrate --from-db ~/.local/share/reserved/reserved.db --to-dsn postgres://reserve@db.example/reserve
  reserved serve --store postgres --dsn postgres://reserve@db.example/reserve`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if from.db == "" || to.dsn == "" {
				return &exitError{code: ExitUsage, err: errors.New("migrate needs --from-db and --to-dsn")}
			}
			from.kind, to.kind = storeBolt, storePostgres
			src, err := from.openForTool(ctx, storeOptions{readOnly: true})
			if err != nil {
				return err
			}
			defer src.Close()
			dst, err := to.openForTool(ctx, storeOptions{})
			if err != nil {
				return err
			}
			defer dst.Close()
			n, err := migrate.Copy(ctx, src, dst)
			if errors.Is(err, migrate.ErrNotEmpty) {
				return &exitError{code: ExitUsage, err: fmt.Errorf("%s: %w", dst, err)}
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "copied %s from %s to %s\n", n, src, dst)
			findings, err := engine.Check(ctx, dst)
			if err != nil {
				return err
			}
			for _, f := range findings {
				fmt.Fprintln(stdout, f)
			}
			if len(findings) > 0 {
				return &exitError{code: exitFindings, err: fmt.Errorf("%d findings in %s after the copy", len(findings), dst)}
			}
			fmt.Fprintf(stdout, "%s is consistent: no findings\n", dst)
			return nil
		},
	}
	cmd.Flags().StringVar(&from.db, "from-db", "", "the bbolt database file to copy (no reserved may be running on it)")
	cmd.Flags().StringVar(&to.dsn, "to-dsn", "", "the PostgreSQL database to copy into, which must be empty, as a postgres:// URL or key=value pairs")
	return cmd
}
