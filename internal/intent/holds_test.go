package intent_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/intent"
)

const testHoldID = "0190a1b2c3d4e5f60718293a4b5c6d7f"

var testHold = engine.HoldRequest{Workshop: "workshop-demo", Quantity: 2, TTLSeconds: 600}

// heldOutcome is the outcome of a hold request answered "held".
func heldOutcome() intent.Outcome {
	return intent.Outcome{Status: engine.StatusHeld, HTTPStatus: 201,
		Body: []byte(`{"status":"held","hold_id":"` + testHoldID + `","workshop":"workshop-demo","quantity":2,"expires_at":"2026-12-01T10:10:00Z"}`)}
}

// mustSettled records one attempt of in in j and settles it on o.
func mustSettled(t *testing.T, j *intent.Journal, in *intent.Intent, o intent.Outcome) {
	t.Helper()
	if err := j.RecordAttempt(in); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Settle(in, o); err != nil {
		t.Fatalf("Settle %s as %s: %v", in.Kind, o.Status, err)
	}
}

// TestHoldIntents makes, saves and reads back the intents of the hold
// kinds with their typed payloads.
func TestHoldIntents(t *testing.T) {
	j := mustOpen(t, statePath(t))
	in, err := intent.NewHold(testHold, testServer, testActor)
	if err != nil {
		t.Fatal(err)
	}
	mustSettled(t, j, in, heldOutcome())
	back := reloaded(t, j)
	if req, err := back.HoldRequest(); err != nil || req != testHold || string(back.Payload) != `{"workshop":"workshop-demo","quantity":2,"ttl_seconds":600}` {
		t.Errorf("HoldRequest() = %+v, %v (payload %s)", req, err, back.Payload)
	}
	if id, ok := back.HeldHold(); !ok || id != testHoldID {
		t.Errorf("HeldHold() = %q, %v", id, ok)
	}
	if _, err := back.HoldRef(); err == nil {
		t.Error("HoldRef() of a hold intent succeeded")
	}
	for _, kind := range []engine.OperationKind{intent.KindConfirm, intent.KindRelease} {
		j := mustOpen(t, statePath(t))
		in, err := intent.NewSettleHold(kind, testHoldID, testServer, testActor)
		if err != nil {
			t.Fatal(err)
		}
		if err := j.RecordAttempt(in); err != nil {
			t.Fatal(err)
		}
		back := reloaded(t, j)
		if ref, err := back.HoldRef(); err != nil || ref.HoldID != testHoldID || back.Kind != kind || string(back.Payload) != `{"hold_id":"`+testHoldID+`"}` {
			t.Errorf("%s: HoldRef() = %+v, %v (payload %s)", kind, ref, err, back.Payload)
		}
		if _, ok := back.HeldHold(); ok {
			t.Errorf("%s: HeldHold() of an open intent reports a hold", kind)
		}
	}
	for _, bad := range []struct {
		name string
		make func() (*intent.Intent, error)
	}{
		{"ttl too short", func() (*intent.Intent, error) {
			return intent.NewHold(engine.HoldRequest{Workshop: "w-1", Quantity: 1, TTLSeconds: 29}, testServer, testActor)
		}},
		{"not a hold id", func() (*intent.Intent, error) {
			return intent.NewSettleHold(intent.KindConfirm, "abc", testServer, testActor)
		}},
		{"not a settling kind", func() (*intent.Intent, error) {
			return intent.NewSettleHold(intent.KindCancel, testHoldID, testServer, testActor)
		}},
	} {
		if _, err := bad.make(); err == nil {
			t.Errorf("%s: made an intent", bad.name)
		}
	}
}

// TestOutcomesOfHoldKinds settles intents of every kind on outcomes that
// answer it and on outcomes of other kinds, which the journal refuses.
func TestOutcomesOfHoldKinds(t *testing.T) {
	const resID = testResID
	settled := func(kind engine.OperationKind) *intent.Intent {
		t.Helper()
		var in *intent.Intent
		var err error
		switch kind {
		case intent.KindHold:
			in, err = intent.NewHold(testHold, testServer, testActor)
		case intent.KindReserve:
			in, err = intent.NewReserve(testRequest, testServer, testActor)
		default:
			in, err = intent.NewSettleHold(kind, testHoldID, testServer, testActor)
		}
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	body := func(status string, members string) []byte {
		return []byte(`{"status":"` + status + `"` + members + `,"workshop":"workshop-demo","quantity":2}`)
	}
	hold := `,"hold_id":"` + testHoldID + `"`
	for _, tc := range []struct {
		kind engine.OperationKind
		o    intent.Outcome
		why  string // "" for an outcome the journal accepts.
	}{
		{intent.KindHold, heldOutcome(), ""},
		{intent.KindHold, intent.Outcome{Status: engine.StatusUnavailable, HTTPStatus: 409, Body: body("unavailable", "")}, ""},
		{intent.KindHold, intent.Outcome{Status: engine.StatusHeld, HTTPStatus: 201, Body: body("held", "")}, "body of the hold made"},
		{intent.KindHold, intent.Outcome{Status: engine.StatusHeld, HTTPStatus: 200, Body: heldOutcome().Body}, "201"},
		{intent.KindHold, intent.Outcome{Status: engine.StatusReserved, HTTPStatus: 201, Body: body("reserved", ""), ReservationID: resID}, `is not one of "unavailable"`},
		{intent.KindReserve, heldOutcome(), `is not one of "reserved", "unavailable"`},
		{intent.KindReserve, intent.Outcome{Status: engine.StatusCancelled, HTTPStatus: 200, Body: body("cancelled", `,"reservation_id":"`+resID+`"`), ReservationID: resID}, `is not one of "reserved", "unavailable"`},
		{intent.KindConfirm, intent.Outcome{Status: engine.StatusReserved, HTTPStatus: 201, Body: body("reserved", `,"reservation_id":"`+resID+`"`+hold), ReservationID: resID}, ""},
		{intent.KindConfirm, intent.Outcome{Status: engine.StatusReserved, HTTPStatus: 201, Body: body("reserved", hold)}, "reservation id"},
		{intent.KindConfirm, intent.Outcome{Status: engine.StatusExpired, HTTPStatus: 409, Body: body("expired", hold)}, ""},
		{intent.KindConfirm, intent.Outcome{Status: engine.StatusReleased, HTTPStatus: 409, Body: body("released", hold)}, ""},
		{intent.KindConfirm, intent.Outcome{Status: engine.StatusReleased, HTTPStatus: 200, Body: body("released", hold)}, "409"},
		{intent.KindConfirm, intent.Outcome{Status: engine.StatusAlreadyConfirmed, HTTPStatus: 409, Body: body("already_confirmed", hold)}, ""},
		{intent.KindConfirm, intent.Outcome{Status: engine.StatusAlreadyReleased, HTTPStatus: 409, Body: body("already_released", hold)}, "is not one of"},
		{intent.KindConfirm, intent.Outcome{Status: engine.StatusExpired, HTTPStatus: 409, Body: body("expired", hold), ReservationID: resID}, "has no reservation id"},
		{intent.KindRelease, intent.Outcome{Status: engine.StatusReleased, HTTPStatus: 200, Body: body("released", hold)}, ""},
		{intent.KindRelease, intent.Outcome{Status: engine.StatusAlreadyReleased, HTTPStatus: 409, Body: body("already_released", hold)}, ""},
		{intent.KindRelease, intent.Outcome{Status: engine.StatusAlreadyConfirmed, HTTPStatus: 409, Body: body("already_confirmed", hold)}, ""},
		{intent.KindRelease, intent.Outcome{Status: engine.StatusReleased, HTTPStatus: 409, Body: body("released", hold)}, "200"},
		{intent.KindRelease, intent.Outcome{Status: intent.StatusRejected, HTTPStatus: 404, Body: []byte(`{"code":"unknown_hold"}`)}, ""},
	} {
		checkSettleSent(t, settled(tc.kind), tc.o, tc.why)
	}
}

// checkSettle settles in, which j holds, on o and checks that the journal
// refuses it with an error about why, or for an empty why accepts it and
// reads it back settled on o.
func checkSettle(t *testing.T, j *intent.Journal, in *intent.Intent, o intent.Outcome, why string) {
	t.Helper()
	_, err := j.Settle(in, o)
	switch {
	case why == "" && err != nil:
		t.Errorf("%s settled on %s %d: %v", in.Kind, o.Status, o.HTTPStatus, err)
	case why != "" && (err == nil || !strings.Contains(err.Error(), why)):
		t.Errorf("%s settled on %s %d = %v, want an error about %s", in.Kind, o.Status, o.HTTPStatus, err, why)
	case why == "":
		if got := reloaded(t, j); got.Outcome == nil || got.Outcome.Status != o.Status {
			t.Errorf("%s settled on %s reads back as %+v", in.Kind, o.Status, got.Outcome)
		}
	}
}

// TestSupersede replaces a settled hold intent with a confirmation of its
// hold in one write, and refuses to replace an open intent or another one.
func TestSupersede(t *testing.T) {
	path := statePath(t)
	j := mustOpen(t, path)
	held, err := intent.NewHold(testHold, testServer, testActor)
	if err != nil {
		t.Fatal(err)
	}
	confirm, err := intent.NewSettleHold(intent.KindConfirm, testHoldID, testServer, testActor)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.RecordAttempt(held); err != nil {
		t.Fatal(err)
	}
	before := mustRead(t, path)
	if err := j.Supersede(held, confirm); !errors.Is(err, intent.ErrOtherIntent) {
		t.Fatalf("Supersede of an open intent = %v, want ErrOtherIntent", err)
	}
	if _, err := j.Settle(held, heldOutcome()); err != nil {
		t.Fatal(err)
	}
	stranger := mustNewReserve(t)
	stranger.Outcome = held.Outcome
	if err := j.Supersede(stranger, confirm); !errors.Is(err, intent.ErrOtherIntent) {
		t.Fatalf("Supersede of an intent the file does not hold = %v, want ErrOtherIntent", err)
	}
	j = mustOpenAgain(t, j)
	if held = mustLoad(t, j); held.Kind != intent.KindHold || !held.Settled() || bytes.Equal(mustRead(t, path), before) {
		t.Fatalf("after refused supersedes the file holds %+v", held)
	}
	if err := j.Supersede(held, confirm); err != nil {
		t.Fatal(err)
	}
	if err := j.RecordAttempt(confirm); err != nil {
		t.Fatalf("RecordAttempt after Supersede: %v", err)
	}
	got := reloaded(t, j)
	if got.Key != confirm.Key || got.Kind != intent.KindConfirm || !got.IsOpen() || got.Attempts != 1 {
		t.Errorf("after Supersede the file holds %+v", got)
	}
}

// mustOpenAgain closes j and opens its state file again.
func mustOpenAgain(t *testing.T, j *intent.Journal) *intent.Journal {
	t.Helper()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	return mustOpen(t, j.Path())
}
