package delivery_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/reserve/reserve/internal/delivery"
	"github.com/reserve/reserve/internal/engine"
)

// TestWebhookBodyFromStoredPayload proves that an event read with its
// payload as bytes (and without the members built from it) gets the body
// of the event as it was written, and that a hold's expiry, which nobody
// asked for, names no operation.
func TestWebhookBodyFromStoredPayload(t *testing.T) {
	at := time.Date(2026, 12, 2, 9, 30, 0, 123456000, time.UTC)
	for _, ev := range []engine.Event{
		{ID: "e1", Type: engine.EventReserved, ReservationID: "r1", Actor: "root", OperationKey: "k1", CreatedAt: at, Owner: "alice", Workshop: "kiln", Quantity: 2},
		{ID: "e2", Type: engine.EventHoldExpired, HoldID: "h1", CreatedAt: at, Owner: "bob", Workshop: "kiln", Quantity: 1},
	} {
		want, err := delivery.WebhookBody(ev)
		if err != nil {
			t.Fatal(err)
		}
		payload, err := ev.Payload()
		if err != nil {
			t.Fatal(err)
		}
		stored := engine.Event{ID: ev.ID, Type: ev.Type, CreatedAt: ev.CreatedAt}.WithStoredPayload(payload)
		got, err := delivery.WebhookBody(stored)
		if err != nil || string(got) != string(want) {
			t.Errorf("from the stored payload: %s, %v; want %s", got, err, want)
		}
		var body struct {
			Type, Timestamp string
			Data            map[string]any
		}
		if err := json.Unmarshal(want, &body); err != nil {
			t.Fatal(err)
		}
		if body.Type != engine.WebhookType(ev.Type) || body.Timestamp != "2026-12-02T09:30:00.123456Z" || body.Data["actor"] != ev.Owner {
			t.Errorf("body %s", want)
		}
		if _, named := body.Data["operation"]; named != (ev.OperationKey != "") {
			t.Errorf("body %s names the operation: %v", want, named)
		}
	}
}

// TestSignMatchesTheReferenceLibrary signs with a secret of the form the
// engine makes and compares with the reference library's signature.
func TestSignMatchesTheReferenceLibrary(t *testing.T) {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := []byte(`{"type":"hold.created"}`)
	ts := time.Unix(1764667800, 0)
	got, err := delivery.Sign(secret, "msg_1", ts.Unix(), body)
	if err != nil {
		t.Fatal(err)
	}
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	want, err := wh.Sign("msg_1", ts, body)
	if err != nil || got != want {
		t.Fatalf("Sign = %s, the reference library signs %s (%v)", got, want, err)
	}
	h := http.Header{}
	h.Set(delivery.HeaderWebhookID, "msg_1")
	h.Set(delivery.HeaderWebhookTimestamp, "1764667800")
	h.Set(delivery.HeaderWebhookSignature, got)
	if err := wh.VerifyIgnoringTimestamp(body, h); err != nil {
		t.Fatal(err)
	}
	if _, err := delivery.Sign("whsec_not base64!", "msg_1", ts.Unix(), body); err == nil {
		t.Error("a secret that is not base64 signs")
	}
}
