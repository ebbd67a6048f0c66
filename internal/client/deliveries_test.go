package client_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server/servertest"
)

// TestDeliveryCalls drives the webhook endpoints, the delivery view and
// the corrections of a delivery against the real server.
func TestDeliveryCalls(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	ctx := context.Background()
	c := h.SocketClient()
	w, err := c.AddWebhook(ctx, api.WebhookRequest{URL: "https://hooks.example/in", EventTypes: []string{engine.WebhookReservationCreated}})
	if err != nil || !strings.HasPrefix(w.Secret, engine.WebhookSecretPrefix) || w.URL != "https://hooks.example/in" {
		t.Fatalf("AddWebhook = %+v, %v", w, err)
	}
	if _, err := c.AddWebhook(ctx, api.WebhookRequest{URL: "https://hooks.example/in"}); engine.ErrorCode(err) != engine.CodeWebhookExists {
		t.Errorf("AddWebhook of the same URL: %v, want %s", err, engine.CodeWebhookExists)
	}
	if _, err := h.TCPClient(h.Alice).Webhooks(ctx); engine.ErrorCode(err) != engine.CodeForbidden {
		t.Errorf("Webhooks as alice: %v, want %s", err, engine.CodeForbidden)
	}
	for range 2 {
		if _, _, _, err := h.TCPClient(h.Alice).Reserve(ctx, engine.OperationKey(uuid.NewString()), engine.Request{Workshop: servertest.Workshop, Quantity: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := h.Engine.RouteEvents(ctx, 100, engine.RouteOptions{}); err != nil {
		t.Fatal(err)
	}
	jobs, err := h.Engine.ClaimDueDeliveries(ctx, 1, time.Minute)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("ClaimDueDeliveries = %d, %v", len(jobs), err)
	}
	if err := h.Engine.FinishDelivery(ctx, jobs[0].Delivery, engine.Attempt{State: engine.DeliveryFailed, Status: 400, Error: "400 Bad Request"}); err != nil {
		t.Fatal(err)
	}

	page, err := c.Deliveries(ctx, engine.DeliveryFilter{Limit: 1})
	if err != nil || len(page.Deliveries) != 1 || page.NextCursor != "" {
		t.Fatalf("Deliveries (pending) = %+v, %v", page, err)
	}
	page, err = c.Deliveries(ctx, engine.DeliveryFilter{State: engine.DeliveryFailed, Channel: engine.ChannelWebhook, Endpoint: w.ID})
	if err != nil || len(page.Deliveries) != 1 || page.Deliveries[0].ID != jobs[0].Delivery.ID || page.Deliveries[0].LastStatus != 400 {
		t.Fatalf("Deliveries (failed) = %+v, %v", page, err)
	}
	if _, err := c.Deliveries(ctx, engine.DeliveryFilter{State: "gone"}); engine.ErrorCode(err) != engine.CodeRequestContract {
		t.Errorf("Deliveries in no state: %v, want %s", err, engine.CodeRequestContract)
	}

	id, key := jobs[0].Delivery.ID, engine.OperationKey(uuid.NewString())
	for i, replayed := range []bool{false, true} {
		r, err := c.Send(ctx, key, client.RetryingDelivery(id))
		if err != nil || !r.Decided || r.Answer.Status != engine.StatusRequeued || r.Answer.DeliveryID != id || r.Replayed != replayed {
			t.Fatalf("retry %d = %+v, %v", i, r, err)
		}
	}
	r, err := c.Send(ctx, engine.OperationKey(uuid.NewString()), client.SkippingDelivery(id))
	if err != nil || r.Answer.Status != engine.StatusSkipped || r.Status != 200 {
		t.Fatalf("skip = %+v, %v", r, err)
	}
	r, err = c.Send(ctx, engine.OperationKey(uuid.NewString()), client.SkippingDelivery("no-such"))
	if err != nil || !r.Decided || r.Problem == nil || r.Problem.Code != engine.CodeUnknownDelivery {
		t.Errorf("skip of an unknown delivery = %+v, %v", r, err)
	}

	if err := c.RemoveWebhook(ctx, w.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveWebhook(ctx, w.ID); engine.ErrorCode(err) != engine.CodeUnknownWebhook {
		t.Errorf("RemoveWebhook again: %v, want %s", err, engine.CodeUnknownWebhook)
	}
	if list, err := c.Webhooks(ctx); err != nil || len(list) != 0 {
		t.Errorf("Webhooks after the removal = %+v, %v", list, err)
	}
}
