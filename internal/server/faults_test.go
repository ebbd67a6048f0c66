package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/faults"
	"github.com/reserve/reserve/internal/server/servertest"
)

var demoRequest = engine.Request{Workshop: servertest.Workshop, Quantity: 1}

func TestFaultRoute(t *testing.T) {
	h := servertest.Start(t, servertest.Options{FaultInjection: true})
	arm := func(via, body string) (*http.Response, []byte) {
		return send(t, h, call{via: via, method: http.MethodPost, path: api.PathFaults, body: body})
	}
	resp, body := arm(h.Alice, `{"fault":"garble_response"}`)
	wantProblem(t, resp, body, http.StatusForbidden, engine.CodeForbidden)
	for _, bad := range []string{`{"fault":"explode"}`, `{"fault":"delay_response"}`, `{"fault":"garble_response","delay_ms":5}`, `{"fault":"garble_response","count":0}`, `{"count":1}`} {
		resp, body = arm(viaSocket, bad)
		wantProblem(t, resp, body, http.StatusUnprocessableEntity, engine.CodeRequestContract)
	}
	resp, body = arm(h.Admin, `{"fault":"delay_response","delay_ms":1,"count":2}`)
	if resp.StatusCode != http.StatusOK || string(body) != `{"fault":"delay_response","count":2,"delay_ms":1}`+"\n" {
		t.Errorf("arm = %d %s", resp.StatusCode, body)
	}
}

func TestFaultFailReceiptWrite(t *testing.T) {
	h := servertest.Start(t, servertest.Options{FaultInjection: true})
	ctx := context.Background()
	if err := h.SocketClient().ArmFault(ctx, api.Fault{Fault: api.FaultFailReceiptWrite}); err != nil {
		t.Fatal(err)
	}
	alice := h.TCPClient(h.Alice)
	key := engine.OperationKey(uuid.NewString())
	status, _, _, err := alice.Reserve(ctx, key, demoRequest)
	var e *engine.Error
	if status != http.StatusInternalServerError || !errors.As(err, &e) || e.Code != engine.CodeInternal {
		t.Fatalf("reserve with a failing receipt write = %d %v", status, err)
	}
	if reservations, receipts := h.Counts(t); reservations != 0 || receipts != 0 {
		t.Fatalf("after the failed write: %d reservations, %d receipts; want none", reservations, receipts)
	}
	if _, err := alice.Operation(ctx, key); engine.ErrorCode(err) != engine.CodeUnknownOperation {
		t.Errorf("operation after the failed write: %v", err)
	}
	status, _, replayed, err := alice.Reserve(ctx, key, demoRequest)
	if err != nil || status != http.StatusCreated || replayed {
		t.Errorf("retry = %d replayed=%v %v, want a first 201", status, replayed, err)
	}
	h.MustCheckClean(t)
}

func TestFaultGarbleResponse(t *testing.T) {
	h := servertest.Start(t, servertest.Options{FaultInjection: true})
	ctx := context.Background()
	if err := h.SocketClient().ArmFault(ctx, api.Fault{Fault: api.FaultGarbleResponse}); err != nil {
		t.Fatal(err)
	}
	alice := h.TCPClient(h.Alice)
	key := engine.OperationKey(uuid.NewString())
	status, body, _, err := alice.Reserve(ctx, key, demoRequest)
	var ue *client.UnexpectedResponseError
	if status != http.StatusOK || json.Valid(body) || !errors.As(err, &ue) {
		t.Fatalf("garbled answer = %d %q %v, want 200 with invalid JSON", status, body, err)
	}
	op, err := alice.Operation(ctx, key)
	if err != nil || op.HTTPStatus != http.StatusCreated {
		t.Fatalf("receipt after the garbled answer = %+v %v", op, err)
	}
	status, body, replayed, err := alice.Reserve(ctx, key, demoRequest)
	if err != nil || status != http.StatusCreated || !replayed || !bytes.Equal(body, op.Response) {
		t.Errorf("retry = %d %s replayed=%v %v, want the stored %s replayed", status, body, replayed, err, op.Response)
	}
	if reservations, receipts := h.Counts(t); reservations != 1 || receipts != 1 {
		t.Errorf("%d reservations, %d receipts; want 1 each", reservations, receipts)
	}
}

func TestFaultDelayResponse(t *testing.T) {
	h := servertest.Start(t, servertest.Options{FaultInjection: true})
	ctx := context.Background()
	alice := h.TCPClient(h.Alice)

	// Held for ten minutes: the receipt must be readable on another
	// connection while the answer is still held, which proves the answer is
	// delayed after the commit, not before it.
	if err := h.SocketClient().ArmFault(ctx, api.Fault{Fault: api.FaultDelayResponse, DelayMS: api.MaxFaultDelayMS}); err != nil {
		t.Fatal(err)
	}
	key := engine.OperationKey(uuid.NewString())
	reqCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		status int
		err    error
	}
	held := make(chan answer, 1)
	go func() {
		status, _, _, err := alice.Reserve(reqCtx, key, demoRequest)
		held <- answer{status, err}
	}()
	op := pollOperation(t, h.TCPClient(h.Alice), key)
	// The receipt is visible as soon as the commit is; wait until this
	// request's answer is the one being held.
	servertest.Eventually(t, 10*time.Second, "answer held", func() bool {
		return h.Logs.Find(faults.HoldingMessage, "operation", string(key)) != nil
	})
	select {
	case a := <-held:
		t.Fatalf("the answer came before it was released: %+v", a)
	default:
	}
	cancel() // The client gives up, as one with a timeout would.
	if a := <-held; !errors.Is(a.err, context.Canceled) {
		t.Fatalf("held request = %+v, want it cancelled", a)
	}
	status, body, replayed, err := alice.Reserve(ctx, key, demoRequest)
	if err != nil || status != http.StatusCreated || !replayed || !bytes.Equal(body, op.Response) {
		t.Errorf("retry after the timeout = %d %s replayed=%v %v", status, body, replayed, err)
	}

	// A short delay is answered in full once it has passed.
	if err := h.SocketClient().ArmFault(ctx, api.Fault{Fault: api.FaultDelayResponse, DelayMS: 1}); err != nil {
		t.Fatal(err)
	}
	status, _, replayed, err = alice.Reserve(ctx, engine.OperationKey(uuid.NewString()), demoRequest)
	if err != nil || status != http.StatusCreated || replayed {
		t.Errorf("delayed answer = %d replayed=%v %v", status, replayed, err)
	}
	h.MustCheckClean(t)
}

// pollOperation reads the receipt of key until it exists.
func pollOperation(t *testing.T, c *client.Client, key engine.OperationKey) api.OperationView {
	t.Helper()
	var op api.OperationView
	servertest.Eventually(t, 10*time.Second, "receipt of "+string(key), func() bool {
		var err error
		op, err = c.Operation(context.Background(), key)
		if err != nil && engine.ErrorCode(err) != engine.CodeUnknownOperation {
			t.Fatal(err)
		}
		return err == nil
	})
	return op
}
