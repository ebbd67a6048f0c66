package api

import (
	"net/url"
	"strconv"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/strictjson"
)

// WebhookPath returns the path of webhook endpoint id.
func WebhookPath(id string) string { return PathWebhooks + "/" + url.PathEscape(id) }

// DeliveryRetryPath returns the path that sends delivery id again.
func DeliveryRetryPath(id string) string { return deliveryPath(id) + "/retry" }

// DeliverySkipPath returns the path that gives delivery id up.
func DeliverySkipPath(id string) string { return deliveryPath(id) + "/skip" }

func deliveryPath(id string) string { return PathDeliveries + "/" + url.PathEscape(id) }

// WebhookRequest is the body of POST /api/v1/admin/webhooks: the URL the
// endpoint's deliveries go to, and the event types it gets (every type
// when empty).
type WebhookRequest struct {
	URL        string   `json:"url"`
	EventTypes []string `json:"event_types,omitempty"`
}

// DecodeWebhookRequest decodes a WebhookRequest with the strict rules:
// "url" is a required string, "event_types" an optional array of
// strings. The engine checks the values (engine.ValidateWebhookURL,
// engine.ValidateWebhookEventTypes).
func DecodeWebhookRequest(body []byte) (WebhookRequest, error) {
	var r WebhookRequest
	err := DecodeStrict(body, []strictjson.Member{
		strictjson.StringMember("url", true, nil, &r.URL),
		strictjson.StringsMember("event_types", false, nil, &r.EventTypes),
	})
	return r, err
}

// WebhookList is the answer to GET /api/v1/admin/webhooks: every
// endpoint, oldest first, without its secret.
type WebhookList struct {
	Webhooks []engine.WebhookEndpoint `json:"webhooks"`
}

// The query parameters of GET /api/v1/admin/deliveries.
const (
	QueryState    = "state"
	QueryChannel  = "channel"
	QueryEndpoint = "endpoint"
	QueryAfter    = "after"
	QueryLimit    = "limit"
)

// DeliveryPage is the answer to GET /api/v1/admin/deliveries: one page of
// the deliveries in one state, oldest first, and the cursor of the next
// page ("" on the last), which the next request passes as "after".
type DeliveryPage struct {
	Deliveries []engine.Delivery `json:"deliveries"`
	NextCursor string            `json:"next_cursor,omitempty"`
}

// DeliveriesQuery returns the query of GET /api/v1/admin/deliveries that
// asks for the page f selects (its zero members left out).
func DeliveriesQuery(f engine.DeliveryFilter) string {
	q := url.Values{}
	set := func(name, v string) {
		if v != "" {
			q.Set(name, v)
		}
	}
	set(QueryState, string(f.State))
	set(QueryChannel, f.Channel)
	set(QueryEndpoint, f.Endpoint)
	set(QueryAfter, f.After)
	if f.Limit != 0 {
		q.Set(QueryLimit, strconv.Itoa(f.Limit))
	}
	if len(q) == 0 {
		return PathDeliveries
	}
	return PathDeliveries + "?" + q.Encode()
}
