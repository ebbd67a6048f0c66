package client

import (
	"context"
	"net/http"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// AddWebhook adds a webhook endpoint (admin only) and returns it with its
// signing secret, which no later answer shows. A URL that has an
// endpoint already is refused with webhook_exists.
func (c *Client) AddWebhook(ctx context.Context, req api.WebhookRequest) (engine.WebhookEndpoint, error) {
	var w engine.WebhookEndpoint
	_, err := c.call(ctx, http.MethodPost, api.PathWebhooks, nil, req, &w, http.StatusCreated)
	return w, err
}

// Webhooks lists the webhook endpoints, oldest first, without their
// secrets (admin only).
func (c *Client) Webhooks(ctx context.Context) ([]engine.WebhookEndpoint, error) {
	var l api.WebhookList
	_, err := c.call(ctx, http.MethodGet, api.PathWebhooks, nil, nil, &l, http.StatusOK)
	if l.Webhooks == nil {
		l.Webhooks = []engine.WebhookEndpoint{}
	}
	return l.Webhooks, err
}

// RemoveWebhook removes the webhook endpoint id (admin only); an id that
// names none, also one removed already, is unknown_webhook.
func (c *Client) RemoveWebhook(ctx context.Context, id string) error {
	_, err := c.call(ctx, http.MethodDelete, api.WebhookPath(id), nil, nil, nil, http.StatusNoContent)
	return err
}

// Deliveries returns one page of the delivery view that f selects (admin
// only): the deliveries in one state, oldest first, and the cursor of the
// next page, which f.After takes.
func (c *Client) Deliveries(ctx context.Context, f engine.DeliveryFilter) (api.DeliveryPage, error) {
	var page api.DeliveryPage
	_, err := c.call(ctx, http.MethodGet, api.DeliveriesQuery(f), nil, nil, &page, http.StatusOK)
	if page.Deliveries == nil {
		page.Deliveries = []engine.Delivery{}
	}
	return page, err
}
