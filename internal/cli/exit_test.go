package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/api"
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
		{"unavailable", (outcome{status: engine.StatusUnavailable}).err(), ExitUnavailable},
		{"rejected", (outcome{status: intent.StatusRejected, res: client.Result{Problem: &engine.Error{Code: engine.CodeOperationConflict}}}).err(), ExitRejected},
		{"unknown outcome", (outcome{status: intent.StatusOpen}).err(), ExitUnknown},
		{"answer expired", expiredAnswer().err(), ExitAnswerExpired},
		{"connect", fmt.Errorf("whoami: %w", &client.ConnectError{Where: "/s"}), ExitUnknown},
		{"timeout", fmt.Errorf("list: %w", context.DeadlineExceeded), ExitUnknown},
		{"garbled", &client.UnexpectedResponseError{Status: 200}, ExitUnknown},
		{"internal", problem(engine.CodeInternal), ExitUnknown},
		{"store unavailable", fmt.Errorf("whoami: %w", problem(engine.CodeStoreUnavailable)), ExitUnknown},
		{"identity unavailable", fmt.Errorf("whoami: %w", problem(engine.CodeIdentityUnavailable)), ExitUnknown},
		{"body incomplete", problem(api.CodeBodyIncomplete), ExitUnknown},
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

// classify is what the CLI makes of one answer to a reservation of testReq
// under testKey: a reply with status, Content-Type and body, or no reply
// but err.
func classify(status int, contentType string, body []byte, replayed bool, err error, timeout time.Duration) outcome {
	op := client.Reserving(testReq)
	var res client.Result
	if err == nil {
		res = client.Classify(op, client.Reply{Status: status, ContentType: contentType, Replayed: replayed, Body: body})
	}
	return outcomeOf(op, testKey, res, err, timeout)
}

// problemBody is a problem detail with code.
func problemBody(code string) []byte {
	return []byte(`{"type":"about:blank","code":"` + code + `","detail":"m"}`)
}

func TestClassify(t *testing.T) {
	const js, pj = "application/json", "application/problem+json"
	reserved := []byte(`{"status":"reserved","reservation_id":"` + testID + `","workshop":"workshop-demo","quantity":1}`)
	unavailable := []byte(`{"status":"unavailable","workshop":"workshop-demo","quantity":1}`)
	for _, tc := range []struct {
		name   string
		status int
		ct     string
		body   []byte
		err    error
		want   intent.Status
	}{
		{"reserved", http.StatusCreated, js, reserved, nil, engine.StatusReserved},
		{"unavailable", http.StatusConflict, js, unavailable, nil, engine.StatusUnavailable},
		{"reserved body with 200", http.StatusOK, js, reserved, nil, intent.StatusOpen},
		{"unavailable body with 201", http.StatusCreated, js, unavailable, nil, intent.StatusOpen},
		{"other workshop", http.StatusCreated, js, []byte(`{"status":"reserved","reservation_id":"` + testID + `","workshop":"other","quantity":1}`), nil, intent.StatusOpen},
		{"other quantity", http.StatusConflict, js, []byte(`{"status":"unavailable","workshop":"workshop-demo","quantity":2}`), nil, intent.StatusOpen},
		{"short id", http.StatusCreated, js, []byte(`{"status":"reserved","reservation_id":"abc","workshop":"workshop-demo","quantity":1}`), nil, intent.StatusOpen},
		{"extra member", http.StatusCreated, js, []byte(`{"status":"reserved","reservation_id":"` + testID + `","workshop":"workshop-demo","quantity":1,"x":1}`), nil, intent.StatusOpen},
		{"trailing data", http.StatusCreated, js, append(reserved, "{}"...), nil, intent.StatusOpen},
		{"conflict", http.StatusConflict, pj, problemBody(engine.CodeOperationConflict), nil, intent.StatusRejected},
		{"contract", http.StatusUnprocessableEntity, pj, problemBody(engine.CodeRequestContract), nil, intent.StatusRejected},
		{"unauthenticated", http.StatusUnauthorized, pj, problemBody(engine.CodeUnauthenticated), nil, intent.StatusRejected},
		{"too many requests", http.StatusTooManyRequests, pj, problemBody("rate_limited"), nil, intent.StatusOpen},
		{"internal", http.StatusInternalServerError, pj, problemBody(engine.CodeInternal), nil, intent.StatusOpen},
		{"store unavailable", http.StatusServiceUnavailable, pj, problemBody(engine.CodeStoreUnavailable), nil, intent.StatusOpen},
		{"identity unavailable", http.StatusServiceUnavailable, pj, problemBody(engine.CodeIdentityUnavailable), nil, intent.StatusOpen},
		{"body incomplete", http.StatusRequestTimeout, pj, problemBody(api.CodeBodyIncomplete), nil, intent.StatusOpen},
		{"bad gateway problem", http.StatusBadGateway, pj, problemBody("upstream"), nil, intent.StatusOpen},
		{"garbled", http.StatusOK, js, []byte("{"), nil, intent.StatusOpen},
		{"timeout", 0, "", nil, context.DeadlineExceeded, intent.StatusOpen},
		{"connect", 0, "", nil, &client.ConnectError{Where: "/s"}, intent.StatusOpen},
	} {
		o := classify(tc.status, tc.ct, tc.body, false, tc.err, time.Second)
		if o.status != tc.want {
			t.Errorf("%s: classify = %s (%s), want %s", tc.name, o.status, o.why, tc.want)
		}
		if o.authoritative() != (tc.want != intent.StatusOpen) {
			t.Errorf("%s: authoritative = %v", tc.name, o.authoritative())
		}
		if (o.err() == nil) != (tc.want == engine.StatusReserved) {
			t.Errorf("%s: err = %v", tc.name, o.err())
		}
	}
}

func TestOutcomeLines(t *testing.T) {
	reserved := classify(http.StatusCreated, "application/json",
		[]byte(`{"status":"reserved","reservation_id":"`+testID+`","workshop":"workshop-demo","quantity":1}`), true, nil, time.Second)
	if got, want := reserved.line(), "replayed: reserved 1 place in workshop-demo (reservation "+testID+")"; got != want {
		t.Errorf("line = %q, want %q", got, want)
	}
	unknown := classify(0, "", nil, false, context.DeadlineExceeded, 1500*time.Millisecond)
	if got, want := unknown.line(), "outcome unknown: no answer within 1.5s; your intent is kept — run: reservectl reserve --retry"; got != want {
		t.Errorf("line = %q, want %q", got, want)
	}
	down := classify(http.StatusServiceUnavailable, "application/problem+json", problemBody(engine.CodeStoreUnavailable), false, nil, time.Second)
	if got, want := down.line(), "outcome unknown: reserved's store is unavailable (unreachable or restarting): 503 Service Unavailable; your intent is kept — run: reservectl reserve --retry"; got != want {
		t.Errorf("line = %q, want %q", got, want)
	}
}

// TestNotReadAtTheCap: a reservation, or the whoami before it, that the
// daemon did not read because it was at a connection cap, is reported as
// not sent (the intent kept, exit 75), whether the daemon answered 503
// too_many_connections or closed the connection before the request was
// written; only the whoami question is said to have been sent when it
// was.
func TestNotReadAtTheCap(t *testing.T) {
	const refused = "uid 1000 holds its share of 4 socket connections, each busy with a request: reserved closed this connection without reading a request from it, so nothing was done; retry"
	atCap := classify(http.StatusServiceUnavailable, "application/problem+json",
		[]byte(`{"type":"about:blank","status":503,"code":"too_many_connections","detail":"`+refused+`"}`), false, nil, time.Second)
	if got, want := atCap.line(), "outcome unknown: too_many_connections: "+refused+"; your intent is kept — run: reservectl reserve --retry"; got != want {
		t.Errorf("line = %q, want %q", got, want)
	}
	if atCap.exitCode() != ExitUnknown {
		t.Errorf("exit code = %d, want %d", atCap.exitCode(), ExitUnknown)
	}

	env := &commandEnv{timeout: time.Second}
	in, err := intent.NewReserve(testReq, "unix:/s", "unix-alice")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"answered", fmt.Errorf("whoami: %w", &engine.Error{Code: api.CodeTooManyConnections, Message: refused}),
			"outcome unknown: nothing was sent: too_many_connections: " + refused + "; your intent is kept — run: reservectl reserve --retry"},
		{"closed", fmt.Errorf("whoami: %w", &client.ConnectError{Where: "/s", HungUp: true}),
			"outcome unknown: nothing was sent: cannot connect to reserved at /s: it closed the connection before the request was sent (restarting, or at its connection cap?); your intent is kept — run: reservectl reserve --retry"},
		{"broken", fmt.Errorf("whoami: %w", &client.SentError{Where: "/s", Method: http.MethodGet, Path: "/api/v1/whoami", Err: errors.New("EOF")}),
			"outcome unknown: the intent was not sent, only the question who you are: the connection to reserved at /s broke after GET /api/v1/whoami was sent, so it may have arrived (EOF); your intent is kept — run: reservectl reserve --retry"},
	} {
		o := env.notSent(in, tc.err)
		if got := o.line(); got != tc.want {
			t.Errorf("%s: line = %q, want %q", tc.name, got, tc.want)
		}
		if o.exitCode() != ExitUnknown {
			t.Errorf("%s: exit code = %d, want %d", tc.name, o.exitCode(), ExitUnknown)
		}
	}
}

// TestSettlementRoundTrip proves that every authoritative outcome is one the
// journal accepts, and that the settled intent reads back as that outcome.
func TestSettlementRoundTrip(t *testing.T) {
	for _, o := range []outcome{
		classify(http.StatusCreated, "application/json", []byte(`{"status":"reserved","reservation_id":"`+testID+`","workshop":"workshop-demo","quantity":1}`), false, nil, time.Second),
		classify(http.StatusConflict, "application/json", []byte(`{"status":"unavailable","workshop":"workshop-demo","quantity":1}`), false, nil, time.Second),
		classify(http.StatusNotFound, "application/problem+json", []byte(`{"type":"about:blank","title":"Not Found","status":404,"code":"unknown_workshop","detail":"no such workshop"}`), false, nil, time.Second),
		classify(http.StatusGone, "application/problem+json", []byte(`{"type":"about:blank","title":"Gone","status":410,"code":"operation_expired","detail":"operation key expired"}`), false, nil, time.Second),
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
		if _, err := j.Settle(in, o.settlement()); err != nil {
			t.Fatalf("%s: Settle: %v", o.status, err)
		}
		back := settledOutcome(in)
		if back.status != o.status || back.line() != (outcome{status: o.status, op: in.Kind, key: in.Key, res: client.Result{Reply: client.Reply{Status: o.res.Status}, Answer: o.res.Answer, Problem: o.res.Problem}}).line() {
			t.Errorf("%s: settled outcome reads back as %q", o.status, back.line())
		}
		j.Close()
	}
}

// expiredAnswer is what a send of a reserve intent makes of reserved's 410
// operation_expired.
func expiredAnswer() outcome {
	op := client.Reserving(engine.Request{Workshop: "workshop-demo", Quantity: 1})
	body := `{"type":"about:blank","title":"Gone","status":410,"code":"operation_expired","detail":"operation key expired"}`
	res := client.Classify(op, client.Reply{Status: 410, ContentType: api.MediaProblem, Body: []byte(body)})
	return outcomeOf(op, "", res, nil, 0)
}

// TestExpiredAnswerIsNotARejection settles an intent refused with
// operation_expired as decided earlier, not as rejected: reserved decided
// it, and only its answer is gone.
func TestExpiredAnswerIsNotARejection(t *testing.T) {
	o := expiredAnswer()
	if o.status != intent.StatusAnswerExpired || !o.authoritative() {
		t.Fatalf("status %q (authoritative %v), want %q, authoritative", o.status, o.authoritative(), intent.StatusAnswerExpired)
	}
	if line := o.line(); !strings.HasPrefix(line, "decided earlier: ") || strings.Contains(line, "rejected") || !strings.Contains(line, "'reservectl list'") {
		t.Errorf("line %q, want it to say decided earlier and point to 'reservectl list'", line)
	}
}
