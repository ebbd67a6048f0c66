package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// newAdminWebhookCmd returns "admin webhook" with "add", "list" and
// "remove".
func newAdminWebhookCmd(env *commandEnv) *cobra.Command {
	webhook := groupCmd("webhook", "Add, list and remove the endpoints that get webhooks", "",
		`  reservectl admin webhook add https://crm.example.com/hooks/reserve --event-type reservation.created
  reservectl admin webhook list
  reservectl admin webhook remove 0195c1d2e3f4a5b6c7d8e9f0a1b2c3d4`)
	webhook.AddCommand(newWebhookAddCmd(env), newWebhookListCmd(env), newWebhookRemoveCmd(env))
	return webhook
}

func newWebhookAddCmd(env *commandEnv) *cobra.Command {
	var types []string
	add := &cobra.Command{
		Use:   "add URL [--event-type T ...]",
		Short: "Add a webhook endpoint and print its signing secret, once",
		Long: `add makes URL a webhook endpoint: every event of the types it names (every
type without --event-type) is delivered to it as a signed POST, as the
Standard Webhooks specification describes, from now on. The event types
are ` + strings.Join(engine.WebhookEventTypes, ", ") + `.

URL must be an absolute https URL (plain http only to a loopback address)
without user information or a fragment.

add prints the endpoint's id and its signing secret (whsec_…): the
receiver verifies every delivery's webhook-signature with it. reserved
shows the secret this once and never again, so store it now. With --json
it prints the whole answer.

A URL that has an endpoint already is refused (webhook_exists, exit 4),
also when you repeat add after a lost answer: no URL gets two endpoints
and every event twice. If the secret was lost, remove the endpoint and add
it again, which makes a new secret.`,
		Example: `  reservectl admin webhook add https://crm.example.com/hooks/reserve
  reservectl admin webhook add https://crm.example.com/hooks/reserve --event-type reservation.created --event-type reservation.cancelled
  reservectl --json admin webhook add http://127.0.0.1:9000/hook`,
		Args: exactArgs(1, "the endpoint's URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := api.WebhookRequest{URL: args[0], EventTypes: types}
			for _, err := range []error{engine.ValidateWebhookURL(req.URL), engine.ValidateWebhookEventTypes(req.EventTypes)} {
				if err != nil {
					return usageErrorf("nothing sent: %s", inFlagWords(engine.ErrorMessage(err)))
				}
			}
			ctx, cancel := env.callContext(cmd.Context())
			defer cancel()
			w, err := env.client().AddWebhook(ctx, req)
			if err != nil {
				return fmt.Errorf("add webhook endpoint %s: %w", engine.Truncate(req.URL, 200), err)
			}
			return env.print(w, func(out io.Writer) error {
				_, err := fmt.Fprintf(out, "webhook endpoint %s added: %s gets %s\nsecret: %s\n"+
					"Store this secret now, where the receiver can read it: reserved never shows it again.\n",
					w.ID, w.URL, eventTypesText(w.EventTypes), w.Secret)
				return err
			})
		},
	}
	add.Flags().StringSliceVar(&types, "event-type", nil, "an event type the endpoint gets (repeat, or separate with commas; default every type)")
	return add
}

// eventTypesText says which event types an endpoint gets.
func eventTypesText(types []string) string {
	if len(types) == 0 {
		return "every event type"
	}
	return strings.Join(types, ", ")
}

func newWebhookListCmd(env *commandEnv) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the webhook endpoints: id, URL, event types, added when and by whom",
		Long: `list shows the webhook endpoints, oldest first: each one's id (for "remove"
and "reservectl admin deliveries --endpoint"), URL, the event types it gets
("all" for every type), when it was added and by whom. It never shows a
secret.`,
		Example: `  reservectl admin webhook list
  reservectl --json admin webhook list`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := env.callContext(cmd.Context())
			defer cancel()
			list, err := env.client().Webhooks(ctx)
			if err != nil {
				return fmt.Errorf("list webhook endpoints: %w", err)
			}
			return env.print(api.WebhookList{Webhooks: list}, func(out io.Writer) error {
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tURL\tEVENT TYPES\tADDED\tBY")
				for _, w := range list {
					types := "all"
					if len(w.EventTypes) > 0 {
						types = strings.Join(w.EventTypes, ",")
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", w.ID, w.URL, types, stamp(w.CreatedAt), w.CreatedBy)
				}
				return tw.Flush()
			})
		},
	}
}

// webhookRemoved is what "admin webhook remove --json" prints.
type webhookRemoved struct {
	ID      string `json:"id"`
	Removed bool   `json:"removed"`
}

func newWebhookRemoveCmd(env *commandEnv) *cobra.Command {
	return &cobra.Command{
		Use:   "remove ID",
		Short: "Remove a webhook endpoint: no event is routed to it from now on",
		Long: `remove deletes the webhook endpoint with the id ID (see "list"). No event is
routed to it from now on; its deliveries stay in "reservectl admin
deliveries", and those still pending fail at their next attempt. An id
that names no endpoint, also one removed already, is refused with
unknown_webhook (exit 4).`,
		Example: `  reservectl admin webhook list
  reservectl admin webhook remove 0195c1d2e3f4a5b6c7d8e9f0a1b2c3d4`,
		Args: exactArgs(1, "the endpoint's ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			ctx, cancel := env.callContext(cmd.Context())
			defer cancel()
			if err := env.client().RemoveWebhook(ctx, id); err != nil {
				return fmt.Errorf("remove webhook endpoint %s: %w", engine.Truncate(id, 80), err)
			}
			return env.print(webhookRemoved{ID: id, Removed: true}, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "webhook endpoint %s removed\n", id)
				return err
			})
		},
	}
}
