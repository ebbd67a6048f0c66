package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/intent"
)

const testHoldID = "0190a1b2c3d4e5f60718293a4b5c6d7f"

var testHoldReq = engine.HoldRequest{Workshop: "workshop-demo", Quantity: 2, TTLSeconds: 600}

// holdAnswer is what the CLI makes of the answer status with body to an
// operation op: a problem detail when the body has a code, else JSON.
func holdAnswer(op client.Operation, status int, body string) outcome {
	ct := "application/json"
	if strings.Contains(body, `"code"`) {
		ct = "application/problem+json"
	}
	res := client.Classify(op, client.Reply{Status: status, ContentType: ct, Body: []byte(body)})
	return outcomeOf(op, testKey, res, nil, time.Second)
}

// TestHoldOutcomes classifies every answer of the hold kinds and checks
// the exit code and line the CLI ends with, and that the journal accepts
// the outcome and reads it back as the same.
func TestHoldOutcomes(t *testing.T) {
	hold := `"hold_id":"` + testHoldID + `"`
	for _, tc := range []struct {
		op     client.Operation
		status int
		body   string
		exit   int
		line   string
	}{
		{client.Holding(testHoldReq), 201, `{"status":"held",` + hold + `,"workshop":"workshop-demo","quantity":2,"expires_at":"2026-12-01T10:10:00Z"}`, ExitReserved,
			"held 2 places in workshop-demo until 2026-12-01T10:10:00Z (hold " + testHoldID + "); run 'reservectl confirm' to reserve them or 'reservectl release' to give them back"},
		{client.Holding(testHoldReq), 409, `{"status":"unavailable","workshop":"workshop-demo","quantity":2}`, ExitUnavailable, "unavailable: not enough free places in workshop-demo for 2 places"},
		{client.Confirming(testHoldID), 201, `{"status":"reserved","reservation_id":"` + testID + `",` + hold + `,"workshop":"workshop-demo","quantity":2}`, ExitReserved,
			"reserved 2 places in workshop-demo (reservation " + testID + ") from hold " + testHoldID},
		{client.Confirming(testHoldID), 409, `{"status":"expired",` + hold + `,"workshop":"workshop-demo","quantity":2}`, ExitUnavailable,
			"expired: hold " + testHoldID + " (2 places in workshop-demo) passed its deadline before this confirmation"},
		{client.Confirming(testHoldID), 409, `{"status":"released",` + hold + `,"workshop":"workshop-demo","quantity":2}`, ExitRejected,
			"released before: hold " + testHoldID + " (2 places in workshop-demo) was released, so nothing was reserved"},
		{client.Confirming(testHoldID), 409, `{"status":"already_confirmed",` + hold + `,"workshop":"workshop-demo","quantity":2}`, ExitRejected,
			"already confirmed: hold " + testHoldID + " (2 places in workshop-demo) was confirmed before"},
		{client.Releasing(testHoldID), 200, `{"status":"released",` + hold + `,"workshop":"workshop-demo","quantity":2}`, ExitReserved,
			"released hold " + testHoldID + " (2 places in workshop-demo); its places are free again"},
		{client.Releasing(testHoldID), 409, `{"status":"expired",` + hold + `,"workshop":"workshop-demo","quantity":2}`, ExitUnavailable,
			"expired: hold " + testHoldID + " (2 places in workshop-demo) passed its deadline before this release"},
		{client.Releasing(testHoldID), 409, `{"status":"already_confirmed",` + hold + `,"workshop":"workshop-demo","quantity":2}`, ExitRejected, "already confirmed: hold " + testHoldID},
		{client.Releasing(testHoldID), 409, `{"status":"already_released",` + hold + `,"workshop":"workshop-demo","quantity":2}`, ExitRejected,
			"already released: hold " + testHoldID + " (2 places in workshop-demo) was released before"},
		{client.Releasing(testHoldID), 404, "", ExitUnknown, "outcome unknown: unparseable answer"},
	} {
		o := holdAnswer(tc.op, tc.status, tc.body)
		if got := exitCode(o.err()); got != tc.exit || !strings.HasPrefix(o.line(), tc.line) {
			t.Errorf("%s answered %d %s: exit %d, line %q; want exit %d, a line starting %q", tc.op.Kind, tc.status, tc.body, got, o.line(), tc.exit, tc.line)
		}
		if !o.authoritative() {
			continue
		}
		var in *intent.Intent
		var err error
		switch tc.op.Kind {
		case intent.KindHold:
			in, err = intent.NewHold(testHoldReq, "unix:/run/reserved.sock", "alice")
		default:
			in, err = intent.NewSettleHold(tc.op.Kind, testHoldID, "unix:/run/reserved.sock", "alice")
		}
		if err != nil {
			t.Fatal(err)
		}
		checkJournaled(t, in, o, tc.exit)
	}
	if got := exitCode((outcome{status: engine.StatusExpired, op: intent.KindConfirm}).err()); got != ExitUnavailable {
		t.Errorf("expired exits %d", got)
	}
	if got := exitCode((outcome{status: engine.StatusReleased, op: intent.KindConfirm}).err()); got != ExitRejected {
		t.Errorf("a confirmation answered released exits %d", got)
	}
	if (outcome{status: engine.StatusReleased, op: intent.KindRelease}).err() != nil {
		t.Error("a release answered released fails")
	}
}

// checkJournaled records an attempt of in, settles it on the
// authoritative outcome o (whose key becomes in's) and checks that the
// settled intent reads back as the same line and exit code, exit.
func checkJournaled(t *testing.T, in *intent.Intent, o outcome, exit int) {
	t.Helper()
	j, err := intent.Open(t.TempDir() + "/intent.json")
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if err := j.RecordAttempt(in); err != nil {
		t.Fatal(err)
	}
	o.key = in.Key
	if _, err := j.Settle(in, o.settlement()); err != nil {
		t.Errorf("%s %s: Settle: %v", in.Kind, o.status, err)
	} else if back := settledOutcome(in); back.line() != o.line() || exitCode(back.err()) != exit {
		t.Errorf("%s %s: settled outcome reads back as %q (exit %d)", in.Kind, o.status, back.line(), exitCode(back.err()))
	}
}

func TestHoldTTL(t *testing.T) {
	for _, tc := range []struct {
		ttl  time.Duration
		want int
	}{
		{30 * time.Second, 30}, {10 * time.Minute, 600}, {24 * time.Hour, 86400},
		{29 * time.Second, 0}, {24*time.Hour + time.Second, 0}, {1500 * time.Millisecond, 0}, {90*time.Second + time.Nanosecond, 0}, {-time.Minute, 0},
	} {
		got, err := holdTTLSeconds(tc.ttl)
		if got != tc.want || (err == nil) != (tc.want != 0) {
			t.Errorf("holdTTLSeconds(%s) = %d, %v; want %d", tc.ttl, got, err, tc.want)
		}
		if err != nil && (exitCode(err) != ExitUsage || !strings.Contains(err.Error(), "from 30s to 24h")) {
			t.Errorf("holdTTLSeconds(%s): %v (exit %d)", tc.ttl, err, exitCode(err))
		}
	}
}
