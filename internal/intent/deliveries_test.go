package intent_test

import (
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/intent"
)

const testDeliveryID = testResID + "-" + testHoldID

// TestDeliveryIntents makes, saves and reads back the intents of an
// admin's corrections of a delivery, settles them on the answers of their
// kind only, and refuses what cannot name a delivery.
func TestDeliveryIntents(t *testing.T) {
	body := func(status string) []byte {
		return []byte(`{"status":"` + status + `","delivery_id":"` + testDeliveryID + `","workshop":"workshop-demo","quantity":2}`)
	}
	for _, tc := range []struct {
		kind engine.OperationKind
		o    intent.Outcome
		why  string // "" for an outcome the journal accepts.
	}{
		{intent.KindRetryDelivery, intent.Outcome{Status: engine.StatusRequeued, HTTPStatus: 200, Body: body("requeued")}, ""},
		{intent.KindRetryDelivery, intent.Outcome{Status: engine.StatusRequeued, HTTPStatus: 201, Body: body("requeued")}, "200"},
		{intent.KindRetryDelivery, intent.Outcome{Status: engine.StatusSkipped, HTTPStatus: 200, Body: body("skipped")}, `is not one of "requeued"`},
		{intent.KindRetryDelivery, intent.Outcome{Status: intent.StatusRejected, HTTPStatus: 404, Body: []byte(`{"code":"unknown_delivery"}`)}, ""},
		{intent.KindSkipDelivery, intent.Outcome{Status: engine.StatusSkipped, HTTPStatus: 200, Body: body("skipped")}, ""},
		{intent.KindSkipDelivery, intent.Outcome{Status: engine.StatusAlreadyDelivered, HTTPStatus: 409, Body: body("already_delivered")}, ""},
		{intent.KindSkipDelivery, intent.Outcome{Status: engine.StatusAlreadySkipped, HTTPStatus: 409, Body: body("already_skipped")}, ""},
		{intent.KindSkipDelivery, intent.Outcome{Status: engine.StatusRequeued, HTTPStatus: 200, Body: body("requeued")}, `is not one of "skipped", "already_delivered", "already_skipped"`},
		{intent.KindSkipDelivery, intent.Outcome{Status: engine.StatusSkipped, HTTPStatus: 200, Body: body("skipped"), ReservationID: testResID}, "has no reservation id"},
	} {
		in, err := intent.NewDeliveryCorrection(tc.kind, testDeliveryID, testServer, testActor)
		if err != nil {
			t.Fatal(err)
		}
		j := mustOpen(t, statePath(t))
		if err := j.RecordAttempt(in); err != nil {
			t.Fatal(err)
		}
		back := reloaded(t, j)
		if ref, err := back.DeliveryRef(); err != nil || ref.DeliveryID != testDeliveryID || back.Kind != tc.kind || string(back.Payload) != `{"delivery_id":"`+testDeliveryID+`"}` {
			t.Fatalf("%s: DeliveryRef() = %+v, %v (payload %s)", tc.kind, ref, err, back.Payload)
		}
		if _, err := back.HoldRef(); err == nil {
			t.Errorf("%s: HoldRef() succeeded", tc.kind)
		}
		j = mustOpen(t, j.Path())
		checkSettle(t, j, back, tc.o, tc.why)
	}
	for _, bad := range []struct {
		kind engine.OperationKind
		id   string
	}{
		{intent.KindRetryDelivery, ""},
		{intent.KindRetryDelivery, strings.Repeat("a", intent.MaxDeliveryIDLen+1)},
		{intent.KindSkipDelivery, "a/b"},
		{intent.KindSkipDelivery, "a b"},
		{intent.KindSkipDelivery, "ä"},
		{intent.KindConfirm, testDeliveryID},
	} {
		if _, err := intent.NewDeliveryCorrection(bad.kind, bad.id, testServer, testActor); err == nil {
			t.Errorf("%s of delivery %q: made an intent", bad.kind, bad.id)
		}
	}
	if _, err := intent.NewDeliveryCorrection(intent.KindSkipDelivery, strings.Repeat("a", intent.MaxDeliveryIDLen), testServer, testActor); err != nil {
		t.Errorf("the longest delivery id: %v", err)
	}
}
