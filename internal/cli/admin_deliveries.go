package cli

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// defaultDeliveryPage is how many deliveries "admin deliveries" shows
// without --limit.
const defaultDeliveryPage = 100

// maxLastError bounds the last error a row of the delivery table shows;
// --json shows it whole.
const maxLastError = 60

// deliveryStates are the states "admin deliveries --state" takes.
func deliveryStates() []string {
	states := make([]string, len(engine.DeliveryStates))
	for i, s := range engine.DeliveryStates {
		states[i] = string(s)
	}
	return states
}

// newAdminDeliveriesCmd returns "admin deliveries".
func newAdminDeliveriesCmd(env *commandEnv) *cobra.Command {
	var (
		f      engine.DeliveryFilter
		state  string
		failed bool
	)
	cmd := &cobra.Command{
		Use:   "deliveries [--failed | --state S] [--channel C] [--endpoint ID] [--limit N] [--after CURSOR]",
		Short: "List the deliveries of events to webhooks and mailboxes (admins)",
		Long: `deliveries lists the deliveries in one state, oldest first: each event goes to
every webhook endpoint that wants it, and by mail to the person it is
about, as one delivery each. A delivery is pending until it is delivered,
fails for good (the receiver refused it, or its retries ran out) or is
skipped; none is ever removed.

The table shows each delivery's id (for "reservectl admin delivery retry"
and "skip"), its event's type (as the webhook's body names it), the
channel, the endpoint's id or the mail's recipient, the state, the
attempts, the last attempt's status and error (cut short; --json shows it
whole) and, for a pending one, when it is due next (times in UTC).

By default the pending deliveries; --failed (--state failed) those that
failed for good, which need an operator: send one again with
"reservectl admin delivery retry ID" once its receiver is fixed, or give
it up with "reservectl admin delivery skip ID". --state is one of
` + strings.Join(deliveryStates(), ", ") + `; --channel is ` + strings.Join(engine.DeliveryChannels, ", ") + ` (a
reminder is the mail sent shortly before a hold's deadline; one not
needed, its hold settled by then, is skipped, saying why); --endpoint
names a webhook endpoint (see "reservectl admin webhook list").

At most --limit deliveries are shown (default ` + strconv.Itoa(defaultDeliveryPage) + `, at most ` + strconv.Itoa(engine.MaxDeliveryPage) + `); when there
are more, the last line names the --after of the next page. --json prints
the page as one JSON object.`,
		Example: `  reservectl admin deliveries --failed
  reservectl admin deliveries --state pending --channel mail
  reservectl admin deliveries --state skipped --channel reminder
  reservectl admin deliveries --failed --endpoint 0195c1d2e3f4a5b6c7d8e9f0a1b2c3d4
  reservectl --json admin deliveries --state delivered --limit 500`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			given := cmd.Flags().Changed
			switch {
			case failed && given("state"):
				return usageErrorf("nothing sent: --failed and --state contradict each other: --failed is --state failed")
			case failed:
				f.State = engine.DeliveryFailed
			case state != "" && !slices.Contains(deliveryStates(), state):
				return usageErrorf("nothing sent: --state %q is not a state: use one of %s", state, strings.Join(deliveryStates(), ", "))
			default:
				f.State = engine.DeliveryState(state)
			}
			switch {
			case f.Channel != "" && !slices.Contains(engine.DeliveryChannels, f.Channel):
				return usageErrorf("nothing sent: --channel %q is not a channel: use one of %s", f.Channel, strings.Join(engine.DeliveryChannels, ", "))
			case f.Endpoint != "" && f.Channel != "" && f.Channel != engine.ChannelWebhook:
				return usageErrorf("nothing sent: --endpoint selects webhook deliveries, which --channel %s has none of: leave one of them out", f.Channel)
			case f.Limit < 1 || f.Limit > engine.MaxDeliveryPage:
				return usageErrorf("nothing sent: --limit must be from 1 to %d, not %d", engine.MaxDeliveryPage, f.Limit)
			}
			ctx, cancel := env.callContext(cmd.Context())
			defer cancel()
			page, err := env.client().Deliveries(ctx, f)
			if err != nil {
				return fmt.Errorf("list deliveries: %w", err)
			}
			return env.print(page, func(out io.Writer) error { return printDeliveries(out, f, page) })
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&failed, "failed", false, "list the deliveries that failed for good (--state failed)")
	fl.StringVar(&state, "state", "", "which deliveries: "+strings.Join(deliveryStates(), ", ")+" (default pending)")
	fl.StringVar(&f.Channel, "channel", "", "only the deliveries through this channel: "+strings.Join(engine.DeliveryChannels, ", "))
	fl.StringVar(&f.Endpoint, "endpoint", "", "only the deliveries to this webhook endpoint (its id)")
	fl.IntVar(&f.Limit, "limit", defaultDeliveryPage, fmt.Sprintf("at most this many deliveries (1 to %d)", engine.MaxDeliveryPage))
	fl.StringVar(&f.After, "after", "", "continue after the page that printed this cursor")
	return cmd
}

// printDeliveries writes the table of a page of deliveries that f asked
// for, and the command of the next page or how many were listed.
func printDeliveries(out io.Writer, f engine.DeliveryFilter, page api.DeliveryPage) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tEVENT\tCHANNEL\tTO\tSTATE\tATTEMPTS\tLAST\tNEXT ATTEMPT")
	for _, d := range page.Deliveries {
		event, to := d.EventType, d.Recipient
		if d.Channel == engine.ChannelWebhook {
			event, to = engine.WebhookType(d.EventType), d.Endpoint
		}
		var last []string
		if d.LastStatus != 0 {
			last = append(last, strconv.Itoa(d.LastStatus))
		}
		if d.LastError != "" {
			last = append(last, oneLine(engine.Truncate(d.LastError, maxLastError)))
		}
		if len(last) == 0 {
			last = []string{"-"}
		}
		next := "-"
		if d.State == engine.DeliveryPending && !d.NextAttemptAt.IsZero() {
			next = stamp(d.NextAttemptAt)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", d.ID, event, d.Channel, to, d.State, d.Attempts, strings.Join(last, " "), next)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	state := f.State
	if state == "" {
		state = engine.DeliveryPending
	}
	if page.NextCursor == "" {
		noun := "deliveries"
		if len(page.Deliveries) == 1 {
			noun = "delivery"
		}
		_, err := fmt.Fprintf(out, "%d %s %s\n", len(page.Deliveries), state, noun)
		return err
	}
	next := f
	next.After = page.NextCursor
	_, err := fmt.Fprintf(out, "more: %s\n", nextDeliveriesCommand(next))
	return err
}

// oneLine returns s with its line breaks and tabs as spaces, for a table
// cell.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == '\t' {
			return ' '
		}
		return r
	}, s)
}

// nextDeliveriesCommand returns the command line that lists the page f
// asks for.
func nextDeliveriesCommand(f engine.DeliveryFilter) string {
	args := []string{"reservectl", "admin", "deliveries"}
	if f.State != "" {
		args = append(args, "--state", string(f.State))
	}
	if f.Channel != "" {
		args = append(args, "--channel", f.Channel)
	}
	if f.Endpoint != "" {
		args = append(args, "--endpoint", f.Endpoint)
	}
	if f.Limit != defaultDeliveryPage {
		args = append(args, "--limit", strconv.Itoa(f.Limit))
	}
	return strings.Join(append(args, "--after", f.After), " ")
}
