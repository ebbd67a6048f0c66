package client_test

import (
	"testing"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
)

// TestClassifyEveryKind runs Classify over answers of every kind of
// operation: an answer settles its operation only with its kind's HTTP
// status, exactly its own members, and about the operation's own request,
// reservation or hold.
func TestClassifyEveryKind(t *testing.T) {
	const (
		res   = "0190a1b2c3d4e5f60718293a4b5c6d7e"
		hold  = "0190a1b2c3d4e5f60718293a4b5c6d7f"
		other = "0190a1b2c3d4e5f60718293a4b5c6d70"
		exp   = `"expires_at":"2026-12-01T10:10:00Z"`
	)
	req := engine.Request{Workshop: "w-1", Quantity: 2}
	holding := client.Holding(engine.HoldRequest{Workshop: "w-1", Quantity: 2, TTLSeconds: 600})
	const dlv = res + "-" + hold
	retrying, skipping := client.RetryingDelivery(dlv), client.SkippingDelivery(dlv)
	const entry = "0190a1b2c3d4e5f60718293a4b5c6d71"
	joining, leaving := client.Reserving(engine.Request{Workshop: "w-1", Quantity: 2, Waitlist: true}), client.LeavingWaitlist(entry)
	for _, tc := range []struct {
		name   string
		op     client.Operation
		status int
		body   string
		want   string // The settled status, "" for undecided.
	}{
		{"reserved", client.Reserving(req), 201, `{"status":"reserved","reservation_id":"` + res + `","workshop":"w-1","quantity":2}`, "reserved"},
		{"reserved with a hold id", client.Reserving(req), 201, `{"status":"reserved","reservation_id":"` + res + `","hold_id":"` + hold + `","workshop":"w-1","quantity":2}`, ""},
		{"unavailable with an empty reservation id", client.Reserving(req), 409, `{"status":"unavailable","reservation_id":"","workshop":"w-1","quantity":2}`, ""},
		{"cancelled with a deadline", client.Cancelling(res), 200, `{"status":"cancelled","reservation_id":"` + res + `","workshop":"w-1","quantity":2,` + exp + `}`, ""},
		{"cancelled", client.Cancelling(res), 200, `{"status":"cancelled","reservation_id":"` + res + `","workshop":"w-1","quantity":2}`, "cancelled"},

		{"held", holding, 201, `{"status":"held","hold_id":"` + hold + `","workshop":"w-1","quantity":2,` + exp + `}`, "held"},
		{"held in any member order", holding, 201, `{"quantity":2,` + exp + `,"workshop":"w-1","hold_id":"` + hold + `","status":"held"}`, "held"},
		{"held without a deadline", holding, 201, `{"status":"held","hold_id":"` + hold + `","workshop":"w-1","quantity":2}`, ""},
		{"held without a hold id", holding, 201, `{"status":"held","workshop":"w-1","quantity":2,` + exp + `}`, ""},
		{"held with a short hold id", holding, 201, `{"status":"held","hold_id":"abc","workshop":"w-1","quantity":2,` + exp + `}`, ""},
		{"held with 200", holding, 200, `{"status":"held","hold_id":"` + hold + `","workshop":"w-1","quantity":2,` + exp + `}`, ""},
		{"held elsewhere", holding, 201, `{"status":"held","hold_id":"` + hold + `","workshop":"w-2","quantity":2,` + exp + `}`, ""},
		{"held, other quantity", holding, 201, `{"status":"held","hold_id":"` + hold + `","workshop":"w-1","quantity":1,` + exp + `}`, ""},
		{"held, not a time", holding, 201, `{"status":"held","hold_id":"` + hold + `","workshop":"w-1","quantity":2,"expires_at":"soon"}`, ""},
		{"hold unavailable", holding, 409, `{"status":"unavailable","workshop":"w-1","quantity":2}`, "unavailable"},
		{"hold unavailable with a hold id", holding, 409, `{"status":"unavailable","hold_id":"` + hold + `","workshop":"w-1","quantity":2}`, ""},
		{"a reservation's answer to a hold", holding, 201, `{"status":"reserved","reservation_id":"` + res + `","workshop":"w-1","quantity":2}`, ""},

		{"confirmed", client.Confirming(hold), 201, `{"status":"reserved","reservation_id":"` + res + `","hold_id":"` + hold + `","workshop":"w-9","quantity":1}`, "reserved"},
		{"confirmed without the reservation", client.Confirming(hold), 201, `{"status":"reserved","hold_id":"` + hold + `","workshop":"w-9","quantity":1}`, ""},
		{"confirmed, other hold", client.Confirming(hold), 201, `{"status":"reserved","reservation_id":"` + res + `","hold_id":"` + other + `","workshop":"w-9","quantity":1}`, ""},
		{"confirm expired", client.Confirming(hold), 409, `{"status":"expired","hold_id":"` + hold + `","workshop":"w-9","quantity":1}`, "expired"},
		{"confirm released", client.Confirming(hold), 409, `{"status":"released","hold_id":"` + hold + `","workshop":"w-9","quantity":1}`, "released"},
		{"confirm released with 200", client.Confirming(hold), 200, `{"status":"released","hold_id":"` + hold + `","workshop":"w-9","quantity":1}`, ""},
		{"already confirmed", client.Confirming(hold), 409, `{"status":"already_confirmed","hold_id":"` + hold + `","workshop":"w-9","quantity":1}`, "already_confirmed"},
		{"confirm already released", client.Confirming(hold), 409, `{"status":"already_released","hold_id":"` + hold + `","workshop":"w-9","quantity":1}`, ""},
		{"confirm expired, other hold", client.Confirming(hold), 409, `{"status":"expired","hold_id":"` + other + `","workshop":"w-9","quantity":1}`, ""},

		{"released", client.Releasing(hold), 200, `{"status":"released","hold_id":"` + hold + `","workshop":"w-9","quantity":1}`, "released"},
		{"released with 409", client.Releasing(hold), 409, `{"status":"released","hold_id":"` + hold + `","workshop":"w-9","quantity":1}`, ""},
		{"already released", client.Releasing(hold), 409, `{"status":"already_released","hold_id":"` + hold + `","workshop":"w-9","quantity":1}`, "already_released"},
		{"release expired", client.Releasing(hold), 409, `{"status":"expired","hold_id":"` + hold + `","workshop":"w-9","quantity":1}`, "expired"},
		{"release already confirmed", client.Releasing(hold), 409, `{"status":"already_confirmed","hold_id":"` + hold + `","workshop":"w-9","quantity":1}`, "already_confirmed"},
		{"released with a reservation", client.Releasing(hold), 200, `{"status":"released","reservation_id":"` + res + `","hold_id":"` + hold + `","workshop":"w-9","quantity":1}`, ""},
		{"a confirmation's answer to a release", client.Releasing(hold), 201, `{"status":"reserved","reservation_id":"` + res + `","hold_id":"` + hold + `","workshop":"w-9","quantity":1}`, ""},

		{"requeued", retrying, 200, `{"status":"requeued","delivery_id":"` + dlv + `","workshop":"w-9","quantity":1}`, "requeued"},
		{"requeued with 201", retrying, 201, `{"status":"requeued","delivery_id":"` + dlv + `","workshop":"w-9","quantity":1}`, ""},
		{"requeued, other delivery", retrying, 200, `{"status":"requeued","delivery_id":"` + res + `-mail","workshop":"w-9","quantity":1}`, ""},
		{"requeued without the delivery", retrying, 200, `{"status":"requeued","workshop":"w-9","quantity":1}`, ""},
		{"requeued with a hold id", retrying, 200, `{"status":"requeued","delivery_id":"` + dlv + `","hold_id":"` + hold + `","workshop":"w-9","quantity":1}`, ""},
		{"requeued in a bad workshop", retrying, 200, `{"status":"requeued","delivery_id":"` + dlv + `","workshop":"W_9","quantity":1}`, ""},
		{"a skip's answer to a retry", retrying, 200, `{"status":"skipped","delivery_id":"` + dlv + `","workshop":"w-9","quantity":1}`, ""},
		{"skipped", skipping, 200, `{"status":"skipped","delivery_id":"` + dlv + `","workshop":"w-9","quantity":1}`, "skipped"},
		{"already delivered", skipping, 409, `{"status":"already_delivered","delivery_id":"` + dlv + `","workshop":"w-9","quantity":1}`, "already_delivered"},
		{"already skipped", skipping, 409, `{"status":"already_skipped","delivery_id":"` + dlv + `","workshop":"w-9","quantity":1}`, "already_skipped"},
		{"already skipped with 200", skipping, 200, `{"status":"already_skipped","delivery_id":"` + dlv + `","workshop":"w-9","quantity":1}`, ""},
		{"skipped, empty delivery", client.SkippingDelivery(""), 200, `{"status":"skipped","delivery_id":"","workshop":"w-9","quantity":1}`, ""},
		{"a retry's answer to a skip", skipping, 200, `{"status":"requeued","delivery_id":"` + dlv + `","workshop":"w-9","quantity":1}`, ""},

		{"waiting", joining, 202, `{"status":"waiting","entry_id":"` + entry + `","workshop":"w-1","quantity":2,"position":3}`, "waiting"},
		{"waiting with 201", joining, 201, `{"status":"waiting","entry_id":"` + entry + `","workshop":"w-1","quantity":2,"position":3}`, ""},
		{"waiting without a position", joining, 202, `{"status":"waiting","entry_id":"` + entry + `","workshop":"w-1","quantity":2}`, ""},
		{"waiting at position 0", joining, 202, `{"status":"waiting","entry_id":"` + entry + `","workshop":"w-1","quantity":2,"position":0}`, ""},
		{"waiting without an entry", joining, 202, `{"status":"waiting","workshop":"w-1","quantity":2,"position":3}`, ""},
		{"waiting with a short entry", joining, 202, `{"status":"waiting","entry_id":"abc","workshop":"w-1","quantity":2,"position":3}`, ""},
		{"waiting elsewhere", joining, 202, `{"status":"waiting","entry_id":"` + entry + `","workshop":"w-2","quantity":2,"position":3}`, ""},
		{"waiting for a request that did not ask to wait", client.Reserving(req), 202, `{"status":"waiting","entry_id":"` + entry + `","workshop":"w-1","quantity":2,"position":3}`, ""},
		{"reserved, asked to wait", joining, 201, `{"status":"reserved","reservation_id":"` + res + `","workshop":"w-1","quantity":2}`, "reserved"},
		{"unavailable, asked to wait", joining, 409, `{"status":"unavailable","workshop":"w-1","quantity":2}`, "unavailable"},
		{"left", leaving, 200, `{"status":"left","entry_id":"` + entry + `","workshop":"w-1","quantity":2}`, "left"},
		{"left with 409", leaving, 409, `{"status":"left","entry_id":"` + entry + `","workshop":"w-1","quantity":2}`, ""},
		{"left, other entry", leaving, 200, `{"status":"left","entry_id":"` + res + `","workshop":"w-1","quantity":2}`, ""},
		{"left with a position", leaving, 200, `{"status":"left","entry_id":"` + entry + `","workshop":"w-1","quantity":2,"position":1}`, ""},
		{"leave expired", leaving, 409, `{"status":"expired","entry_id":"` + entry + `","workshop":"w-1","quantity":2}`, "expired"},
		{"leave expired with a hold id", leaving, 409, `{"status":"expired","hold_id":"` + hold + `","workshop":"w-1","quantity":2}`, ""},
		{"already left", leaving, 409, `{"status":"already_left","entry_id":"` + entry + `","workshop":"w-1","quantity":2}`, "already_left"},
		{"already reserved", leaving, 409, `{"status":"already_reserved","entry_id":"` + entry + `","workshop":"w-1","quantity":2}`, "already_reserved"},
		{"a release's answer to leaving", leaving, 200, `{"status":"released","hold_id":"` + hold + `","workshop":"w-1","quantity":2}`, ""},
	} {
		r := client.Classify(tc.op, client.Reply{Status: tc.status, ContentType: api.MediaJSON, Body: []byte(tc.body)})
		got := ""
		if r.Decided {
			got = r.Answer.Status
		}
		if got != tc.want {
			t.Errorf("%s: %s answered %d %s settles on %q, want %q", tc.name, tc.op.Kind, tc.status, tc.body, got, tc.want)
		}
	}
}
