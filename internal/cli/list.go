package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/reserve/reserve/internal/engine"
)

// newListCmd returns "list".
func newListCmd(env *commandEnv) *cobra.Command {
	var (
		f     engine.ListFilter
		all   bool
		holds bool
	)
	cmd := &cobra.Command{
		Use:   "list [--all] [--workshop W] [--holds]",
		Short: "List your own reservations (or holds), newest first",
		Long: `list shows your reservations, newest first: the active ones, or with --all
the cancelled ones too. --holds lists your holds instead, each with its state
now (the open ones, or with --all every one). --workshop keeps one workshop's.
At most --limit are shown (default 50, at most 1000); when there are more, the
last line is the command of the next page. An admin may add --actor to list
another actor's. It sends nothing that changes anything.`,
		Example: `  reservectl list
  reservectl list --all --workshop workshop-demo
  reservectl list --holds
  reservectl --json list --all`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.Limit < 1 || f.Limit > engine.MaxListLimit {
				return usageErrorf("--limit must be from 1 to %d, not %d; nothing sent", engine.MaxListLimit, f.Limit)
			}
			if f.Workshop != "" {
				if err := engine.ValidateWorkshopID(f.Workshop); err != nil {
					return flagError("--workshop", err)
				}
			}
			if all {
				f.Status = engine.ListAll
			}
			ctx, cancel := env.callContext(cmd.Context())
			defer cancel()
			if holds {
				page, err := env.client().Holds(ctx, f)
				if err != nil {
					return fmt.Errorf("list holds: %w", err)
				}
				return env.print(page, func(w io.Writer) error {
					tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "HOLD\tWORKSHOP\tQTY\tSTATE\tEXPIRES\tRESERVATION")
					for _, h := range page.Holds {
						fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", h.ID, h.Workshop, h.Quantity, h.State, h.ExpiresAt.UTC().Format(time.RFC3339), h.ReservationID)
					}
					return finishList(w, tw, len(page.Holds), "holds", nextListCommand(f, all, true, page.NextCursor))
				})
			}
			page, err := env.client().Reservations(ctx, f)
			if err != nil {
				return fmt.Errorf("list reservations: %w", err)
			}
			return env.print(page, func(w io.Writer) error {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "RESERVATION\tWORKSHOP\tQTY\tSTATUS\tCREATED")
				for _, r := range page.Reservations {
					fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", r.ID, r.Workshop, r.Quantity, r.Status, r.CreatedAt.UTC().Format(time.RFC3339))
				}
				return finishList(w, tw, len(page.Reservations), "reservations", nextListCommand(f, all, false, page.NextCursor))
			})
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&all, "all", false, "also the cancelled reservations (with --holds: every hold)")
	fl.BoolVar(&holds, "holds", false, "list your holds instead of your reservations")
	fl.StringVar(&f.Workshop, "workshop", "", "only this workshop's")
	cmd.RegisterFlagCompletionFunc("workshop", completeWorkshops(env))
	fl.StringVar(&f.Actor, "actor", "", "another actor's (admins only)")
	fl.IntVar(&f.Limit, "limit", engine.DefaultListLimit, fmt.Sprintf("at most this many (1 to %d)", engine.MaxListLimit))
	fl.StringVar(&f.Cursor, "cursor", "", "continue after the page that printed this cursor")
	return cmd
}

// finishList flushes the table of n things, says so when there are none,
// and prints the command of the next page, if there is one.
func finishList(w io.Writer, tw *tabwriter.Writer, n int, things, next string) error {
	if n == 0 {
		_, err := fmt.Fprintf(w, "no %s\n", things)
		return err
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if next != "" {
		_, err := fmt.Fprintf(w, "more: %s\n", next)
		return err
	}
	return nil
}

// nextListCommand returns the command line of the page after cursor, with
// every filter of f, or "" without a cursor.
func nextListCommand(f engine.ListFilter, all, holds bool, cursor string) string {
	if cursor == "" {
		return ""
	}
	args := []string{"reservectl", "list"}
	if all {
		args = append(args, "--all")
	}
	if holds {
		args = append(args, "--holds")
	}
	if f.Workshop != "" {
		args = append(args, "--workshop", f.Workshop)
	}
	if f.Actor != "" {
		args = append(args, "--actor", f.Actor)
	}
	if f.Limit != engine.DefaultListLimit {
		args = append(args, "--limit", fmt.Sprint(f.Limit))
	}
	return strings.Join(append(args, "--cursor", cursor), " ")
}
