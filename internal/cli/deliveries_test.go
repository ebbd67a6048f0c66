package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/intent"
)

const testDeliveryID = testID + "-" + testHoldID

// TestDeliveryOutcomes classifies every answer of the corrections of a
// delivery and checks the exit code and line the CLI ends with, and that
// the journal accepts the outcome and reads it back as the same.
func TestDeliveryOutcomes(t *testing.T) {
	body := func(status string) string {
		return `{"status":"` + status + `","delivery_id":"` + testDeliveryID + `","workshop":"workshop-demo","quantity":2}`
	}
	what := "delivery " + testDeliveryID + " (an event of 2 places in workshop-demo)"
	retrying, skipping := client.RetryingDelivery(testDeliveryID), client.SkippingDelivery(testDeliveryID)
	for _, tc := range []struct {
		op     client.Operation
		status int
		body   string
		exit   int
		line   string
	}{
		{retrying, 200, body("requeued"), ExitReserved, "requeued " + what + ": it is sent again now, under the same id as before"},
		{skipping, 200, body("skipped"), ExitReserved, "skipped " + what + ": it is not sent again unless 'reservectl admin delivery retry " + testDeliveryID + "' asks"},
		{skipping, 409, body("already_delivered"), ExitRejected, "already delivered: " + what + " was delivered before, so it stays delivered; this intent changed nothing; " +
			"intent " + string(testKey) + " is settled and had no effect: 'reservectl admin delivery skip DELIVERY-ID' starts a new one"},
		{skipping, 409, body("already_skipped"), ExitRejected, "already skipped: " + what + " was skipped before; this intent changed nothing"},
		{retrying, 409, body("requeued"), ExitUnknown, "outcome unknown: unparseable answer: 409 Conflict with 143 bytes of \"application/json\"; your intent is kept — run: reservectl admin delivery retry --retry"},
		{skipping, 404, `{"type":"about:blank","title":"Not Found","status":404,"code":"unknown_delivery","detail":"no delivery has id \"x\""}`, ExitRejected, "rejected: unknown_delivery: no delivery has id"},
	} {
		o := holdAnswer(tc.op, tc.status, tc.body)
		res := o.res
		if got := exitCode(o.err()); got != tc.exit || !strings.HasPrefix(o.line(), tc.line) {
			t.Errorf("%s answered %d %s: exit %d, line %q; want exit %d, a line starting %q", tc.op.Kind, tc.status, tc.body, got, o.line(), tc.exit, tc.line)
		}
		if o.json().DeliveryID != res.Answer.DeliveryID {
			t.Errorf("%s answered %d: --json names delivery %q", tc.op.Kind, tc.status, o.json().DeliveryID)
		}
		if !o.authoritative() {
			continue
		}
		in, err := intent.NewDeliveryCorrection(tc.op.Kind, testDeliveryID, "unix:/run/reserved.sock", "root")
		if err != nil {
			t.Fatal(err)
		}
		if got := operation(in); got != tc.op {
			t.Errorf("the %s intent sends %+v, want %+v", tc.op.Kind, got, tc.op)
		}
		checkJournaled(t, in, o, tc.exit)
	}
}

// TestEveryKindHasItsWords checks that every kind of operation of the
// table of answers has the words the CLI says about its intents, and
// every answer of it an exit code and a line of its own.
func TestEveryKindHasItsWords(t *testing.T) {
	var kinds []engine.OperationKind
	for _, a := range engine.Answers {
		if !slices.Contains(kinds, a.Kind) {
			kinds = append(kinds, a.Kind)
		}
		o := outcome{status: intent.Status(a.Status), op: a.Kind, key: testKey}
		if o.exitCode() == ExitFailure || strings.HasPrefix(o.line(), "outcome unknown") {
			t.Errorf("%s answered %s: exit %d, line %q", a.Kind, a.Status, o.exitCode(), o.line())
		}
	}
	for _, kind := range kinds {
		for name, words := range map[string]map[engine.OperationKind]string{
			"kindCommand": kindCommand, "startCommand": startCommand, "listCommand": listCommand, "doneWord": doneWord,
		} {
			if words[kind] == "" {
				t.Errorf("%s has no words for kind %s", name, kind)
			}
		}
	}
}
