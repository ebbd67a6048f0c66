package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
)

// newAdminOperationsCmd returns "admin operations".
func newAdminOperationsCmd(env *commandEnv) *cobra.Command {
	var (
		q     client.OperationsQuery
		since string
	)
	cmd := &cobra.Command{
		Use:   "operations [--actor NAME] [--since T] [--outcome O] [--limit N] [--cursor C]",
		Short: "List the stored operations of every actor, newest first (admins)",
		Long: `operations lists the operations reserved has stored an answer for (receipts,
and the tombstones of expired ones), newest first: when, who, the operation
key, the kind of operation, the outcome, the HTTP status, workshop, quantity and
reservation. Conflicts and refusals store nothing, so they are not listed;
their rates are on /metrics.

--since takes an RFC 3339 time or a duration back from now (15m, 24h).
--outcome is one of ` + strings.Join(engine.OperationOutcomes, ", ") + `.
At most --limit operations are shown (default 50, at most 1000); when there
are more, the last line names the --cursor of the next page.`,
		Example: `  reservectl admin operations
  reservectl admin operations --actor alice --since 24h
  reservectl admin operations --outcome unavailable --limit 200
  reservectl --json admin operations --since 2026-11-29T10:00:00Z`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if since != "" {
				t, err := parseSince(since, time.Now())
				if err != nil {
					return &usageError{err: err}
				}
				q.Since = t
			}
			if q.Outcome != "" && !slices.Contains(engine.OperationOutcomes, q.Outcome) {
				return usageErrorf("--outcome %q is not an outcome; nothing sent: use one of %s", q.Outcome, strings.Join(engine.OperationOutcomes, ", "))
			}
			if q.Limit < 1 || q.Limit > engine.MaxOperationsLimit {
				return usageErrorf("--limit must be from 1 to %d, not %d; nothing sent", engine.MaxOperationsLimit, q.Limit)
			}
			ctx, cancel := env.callContext(cmd.Context())
			defer cancel()
			page, err := env.client().Operations(ctx, q)
			if err != nil {
				return fmt.Errorf("list operations: %w", err)
			}
			if env.json {
				return env.printJSON(page)
			}
			tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "CREATED\tACTOR\tOPERATION\tKIND\tOUTCOME\tSTATUS\tWORKSHOP\tQTY\tRESERVATION")
			for _, op := range page.Operations {
				outcome := op.Outcome
				if op.Expired {
					outcome += " (expired)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%d\t%s\n", op.CreatedAt.UTC().Format(time.RFC3339), op.Actor, op.Operation,
					op.Kind, outcome, op.HTTPStatus, op.Workshop, op.Quantity, op.ReservationID)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if page.NextCursor != "" {
				next := q
				next.Cursor = page.NextCursor
				_, err = fmt.Fprintf(env.stdout, "more: %s\n", nextPageCommand(next))
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&q.Actor, "actor", "", "only this actor's operations")
	f.StringVar(&since, "since", "", "only operations stored at or after this RFC 3339 time or this long ago (e.g. 1h)")
	f.StringVar(&q.Outcome, "outcome", "", "only this outcome: "+strings.Join(engine.OperationOutcomes, ", "))
	f.IntVar(&q.Limit, "limit", engine.DefaultOperationsLimit, fmt.Sprintf("at most this many operations (1 to %d)", engine.MaxOperationsLimit))
	f.StringVar(&q.Cursor, "cursor", "", "continue after the page that printed this cursor")
	return cmd
}

// parseSince reads --since: an RFC 3339 time, or a positive duration back
// from now.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return time.Time{}, fmt.Errorf("--since %q is neither an RFC 3339 time (2026-11-29T10:00:00Z) nor a positive duration (15m, 24h)", s)
	}
	return now.Add(-d), nil
}

// nextPageCommand returns the command line that lists the page q asks
// for: every filter of q, --since as the time it stood for, and the
// cursor.
func nextPageCommand(q client.OperationsQuery) string {
	args := []string{"reservectl", "admin", "operations"}
	if q.Actor != "" {
		args = append(args, "--actor", q.Actor)
	}
	if !q.Since.IsZero() {
		args = append(args, "--since", q.Since.UTC().Format(time.RFC3339Nano))
	}
	if q.Outcome != "" {
		args = append(args, "--outcome", q.Outcome)
	}
	if q.Limit != engine.DefaultOperationsLimit {
		args = append(args, "--limit", strconv.Itoa(q.Limit))
	}
	return strings.Join(append(args, "--cursor", q.Cursor), " ")
}
