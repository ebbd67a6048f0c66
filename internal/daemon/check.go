package daemon

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

func newCheckCmd(stdout, stderr io.Writer) *cobra.Command {
	var sf storeFlags
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check a database's invariants offline",
		Long: `check opens a database read-only and reports every broken invariant: counters
that differ from their reservations, reservations above capacity, receipts
and reservations that do not name each other, and bindings of socket peers'
uids to actors that are not one to one. Before that it reads both of
bbolt's meta pages and walks every page of the file; a damaged page, a
damaged meta page (which bbolt would silently replace by the older one,
losing the newest transaction) or a file cut short is reported in one line
and nothing else is checked.

Exit status: 0 no findings, 1 findings (printed one per line), 2 the
database cannot be opened (for example because a running reserved holds it),
is not a reserved database, or is damaged.`,
		Example: `  reserved check --db ~/.local/share/reserved/reserved.db
  RESERVED_DB=/var/lib/reserved/reserved.db reserved check
  reserved check --store postgres --dsn postgres://reserve@db.example/reserve`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			store, err := sf.openForTool(cmd.Context(), storeOptions{readOnly: true})
			if err != nil {
				return err
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
				fmt.Fprintf(stderr, "reserved: %d findings in %s\n", len(findings), store)
				return &exitError{code: exitFindings}
			}
			fmt.Fprintf(stdout, "%s is consistent: no findings\n", store)
			return nil
		},
	}
	sf.registerReadOnly(cmd.Flags())
	return cmd
}
