package daemon

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/paths"
)

func newCheckCmd(stdout, stderr io.Writer) *cobra.Command {
	var db string
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check a database's invariants offline",
		Long: `check opens a database read-only and reports every broken invariant: counters
that differ from their reservations, reservations above capacity, receipts
and reservations that do not name each other, and bbolt page errors.

Exit status: 0 no findings, 1 findings (printed one per line), 2 the
database cannot be opened (for example because a running reserved holds it).`,
		Example: `  reserved check --db ~/.local/share/reserved/reserved.db
  RESERVED_DB=/var/lib/reserved/reserved.db reserved check`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := os.Stat(db); errors.Is(err, fs.ErrNotExist) {
				return &exitError{code: ExitUsage, err: fmt.Errorf("database %s does not exist", db)}
			}
			store, err := boltstore.Open(db, boltstore.Options{ReadOnly: true, LockTimeout: time.Second})
			if err != nil {
				return &exitError{code: ExitUsage, err: err}
			}
			defer store.Close()
			findings, err := store.Check(cmd.Context())
			if err != nil {
				return &exitError{code: ExitUsage, err: err}
			}
			for _, f := range findings {
				fmt.Fprintln(stdout, f)
			}
			if len(findings) > 0 {
				fmt.Fprintf(stderr, "reserved: %d findings in %s\n", len(findings), db)
				return &exitError{code: exitFindings}
			}
			fmt.Fprintf(stdout, "database %s is consistent: no findings\n", db)
			return nil
		},
	}
	cmd.Flags().StringVar(&db, "db", paths.DB(), "database file (env "+paths.EnvDB+")")
	return cmd
}
