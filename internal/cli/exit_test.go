package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/intent"
	"github.com/reserve/reserve/internal/safefile"
)

const (
	testKey = engine.OperationKey("6f1c1a52-8c4a-4d8e-9b5e-0a1b2c3d4e5f")
	testID  = "0190a1b2c3d4e5f60718293a4b5c6d7e"
)

var testReq = engine.Request{Workshop: "workshop-demo", Quantity: 1}

func TestExitCode(t *testing.T) {
	problem := func(code string) error { return &engine.Error{Code: code, Message: "m"} }
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, ExitReserved},
		{"usage", usageErrorf("bad flag"), ExitUsage},
		{"busy", fmt.Errorf("/x: %w", intent.ErrBusy), ExitUsage},
		{"corrupt", &intent.CorruptError{Path: "/x", Err: errors.New("bad")}, ExitUsage},
		{"mismatch", &intent.MismatchError{Actor: "a", RecordedActor: "b"}, ExitUsage},
		{"planted file", fmt.Errorf("refusing the state file: %w", &safefile.OwnerError{Path: "/tmp/x/intent.json", Owner: 65534}), ExitUsage},
		{"lock file not regular", fmt.Errorf("open intent journal: %w", &safefile.NotRegularError{Path: "/x.lock", Mode: fs.ModeSymlink}), ExitUsage},
		{"unavailable", (outcome{kind: kindUnavailable}).err(), ExitUnavailable},
		{"rejected", (outcome{kind: kindRejected, problem: &engine.Error{Code: engine.CodeOperationConflict}}).err(), ExitRejected},
		{"unknown outcome", (outcome{kind: kindUnknown}).err(), ExitUnknown},
		{"connect", fmt.Errorf("whoami: %w", &client.ConnectError{Where: "/s"}), ExitUnknown},
		{"timeout", fmt.Errorf("list: %w", context.DeadlineExceeded), ExitUnknown},
		{"garbled", &client.UnexpectedResponseError{Status: 200}, ExitUnknown},
		{"internal", problem(engine.CodeInternal), ExitUnknown},
		{"store unavailable", fmt.Errorf("whoami: %w", problem(engine.CodeStoreUnavailable)), ExitUnknown},
		{"body incomplete", problem(engine.CodeBodyIncomplete), ExitUnknown},
		{"unauthenticated", problem(engine.CodeUnauthenticated), ExitRejected},
		{"forbidden", problem(engine.CodeForbidden), ExitRejected},
		{"version mismatch", problem(engine.CodeVersionMismatch), ExitRejected},
		{"already settled", fmt.Errorf("x: %w", intent.ErrAlreadySettled), ExitFailure},
		{"other", errors.New("disk full"), ExitFailure},
	} {
		if got := exitCode(tc.err); got != tc.want {
			t.Errorf("%s: exitCode(%v) = %d, want %d", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestClassify(t *testing.T) {
	reserved := []byte(`{"status":"reserved","reservation_id":"` + testID + `","workshop":"workshop-demo","quantity":1}`)
	unavailable := []byte(`{"status":"unavailable","workshop":"workshop-demo","quantity":1}`)
	for _, tc := range []struct {
		name   string
		status int
		body   []byte
		err    error
		want   string
	}{
		{"reserved", http.StatusCreated, reserved, nil, kindReserved},
		{"unavailable", http.StatusConflict, unavailable, nil, kindUnavailable},
		{"reserved body with 200", http.StatusOK, reserved, nil, kindUnknown},
		{"unavailable body with 201", http.StatusCreated, unavailable, nil, kindUnknown},
		{"other workshop", http.StatusCreated, []byte(`{"status":"reserved","reservation_id":"` + testID + `","workshop":"other","quantity":1}`), nil, kindUnknown},
		{"other quantity", http.StatusConflict, []byte(`{"status":"unavailable","workshop":"workshop-demo","quantity":2}`), nil, kindUnknown},
		{"short id", http.StatusCreated, []byte(`{"status":"reserved","reservation_id":"abc","workshop":"workshop-demo","quantity":1}`), nil, kindUnknown},
		{"extra member", http.StatusCreated, []byte(`{"status":"reserved","reservation_id":"` + testID + `","workshop":"workshop-demo","quantity":1,"x":1}`), nil, kindUnknown},
		{"trailing data", http.StatusCreated, append(reserved, "{}"...), nil, kindUnknown},
		{"conflict", http.StatusConflict, nil, &engine.Error{Code: engine.CodeOperationConflict}, kindRejected},
		{"contract", http.StatusUnprocessableEntity, nil, &engine.Error{Code: engine.CodeRequestContract}, kindRejected},
		{"unauthenticated", http.StatusUnauthorized, nil, &engine.Error{Code: engine.CodeUnauthenticated}, kindRejected},
		{"too many requests", http.StatusTooManyRequests, nil, &engine.Error{Code: "rate_limited"}, kindUnknown},
		{"internal", http.StatusInternalServerError, nil, &engine.Error{Code: engine.CodeInternal}, kindUnknown},
		{"store unavailable", http.StatusServiceUnavailable, nil, &engine.Error{Code: engine.CodeStoreUnavailable}, kindUnknown},
		{"bad gateway problem", http.StatusBadGateway, nil, &engine.Error{Code: "upstream"}, kindUnknown},
		{"garbled", http.StatusOK, []byte("{"), &client.UnexpectedResponseError{Status: 200}, kindUnknown},
		{"timeout", 0, nil, context.DeadlineExceeded, kindUnknown},
		{"connect", 0, nil, &client.ConnectError{Where: "/s"}, kindUnknown},
	} {
		o := classify(testKey, testReq, tc.status, tc.body, false, tc.err, time.Second)
		if o.kind != tc.want {
			t.Errorf("%s: classify = %s (%s), want %s", tc.name, o.kind, o.why, tc.want)
		}
		if o.authoritative() != (tc.want != kindUnknown) {
			t.Errorf("%s: authoritative = %v", tc.name, o.authoritative())
		}
		if (o.err() == nil) != (tc.want == kindReserved) {
			t.Errorf("%s: err = %v", tc.name, o.err())
		}
	}
}

func TestOutcomeLines(t *testing.T) {
	reserved := classify(testKey, testReq, http.StatusCreated,
		[]byte(`{"status":"reserved","reservation_id":"`+testID+`","workshop":"workshop-demo","quantity":1}`), true, nil, time.Second)
	if got, want := reserved.line(), "replayed: reserved 1 place in workshop-demo (reservation "+testID+")"; got != want {
		t.Errorf("line = %q, want %q", got, want)
	}
	unknown := classify(testKey, testReq, 0, nil, false, context.DeadlineExceeded, 1500*time.Millisecond)
	if got, want := unknown.line(), "outcome unknown: no answer within 1.5s; your intent is kept — run: reservectl reserve --retry"; got != want {
		t.Errorf("line = %q, want %q", got, want)
	}
	down := classify(testKey, testReq, http.StatusServiceUnavailable, nil, false, &engine.Error{Code: engine.CodeStoreUnavailable, Message: "m"}, time.Second)
	if got, want := down.line(), "outcome unknown: reserved's store is unavailable (unreachable or restarting): 503 Service Unavailable; your intent is kept — run: reservectl reserve --retry"; got != want {
		t.Errorf("line = %q, want %q", got, want)
	}
}

// TestSettlementRoundTrip proves that every authoritative outcome is one the
// journal accepts, and that the settled intent reads back as that outcome.
func TestSettlementRoundTrip(t *testing.T) {
	for _, o := range []outcome{
		classify(testKey, testReq, http.StatusCreated, []byte(`{"status":"reserved","reservation_id":"`+testID+`","workshop":"workshop-demo","quantity":1}`), false, nil, time.Second),
		classify(testKey, testReq, http.StatusConflict, []byte(`{"status":"unavailable","workshop":"workshop-demo","quantity":1}`), false, nil, time.Second),
		classify(testKey, testReq, http.StatusNotFound, []byte(`{"type":"about:blank","title":"Not Found","status":404,"code":"unknown_workshop","detail":"no such workshop"}`), false,
			&engine.Error{Code: engine.CodeUnknownWorkshop, Message: "no such workshop"}, time.Second),
	} {
		j, err := intent.Open(t.TempDir() + "/intent.json")
		if err != nil {
			t.Fatal(err)
		}
		in, err := intent.NewReserve(testReq, "unix:/run/reserved.sock", "alice")
		if err != nil {
			t.Fatal(err)
		}
		if err := j.RecordAttempt(in); err != nil {
			t.Fatal(err)
		}
		if err := j.Settle(in, o.settlement()); err != nil {
			t.Fatalf("%s: Settle: %v", o.kind, err)
		}
		back := settledOutcome(in)
		if back.kind != o.kind || back.line() != (outcome{kind: o.kind, key: in.Key, status: o.status, answer: o.answer, problem: o.problem}).line() {
			t.Errorf("%s: settled outcome reads back as %q", o.kind, back.line())
		}
		j.Close()
	}
}
