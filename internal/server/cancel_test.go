package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server/servertest"
)

// cancelCall is a cancellation of reservation id under key.
func cancelCall(via, key, id string) call {
	return call{via: via, method: http.MethodPost, path: api.CancelPath(id), header: http.Header{api.HeaderIdempotencyKey: {key}}}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, servertest.Options{})
	resp, body := send(t, h, reservationCall(h.Alice, uuid.NewString(), fmt.Sprintf(`{"workshop":%q,"quantity":1}`, servertest.Workshop)))
	var a engine.Answer
	if err := json.Unmarshal(body, &a); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("reserve: %d %s", resp.StatusCode, body)
	}
	id := a.ReservationID

	// Refusals that store nothing, in the documented order.
	resp, body = send(t, h, call{via: h.Alice, method: http.MethodPost, path: api.CancelPath(id)})
	wantProblem(t, resp, body, http.StatusBadRequest, api.CodeMissingIdempotencyKey)
	resp, body = send(t, h, cancelCall(h.Alice, "nope", id))
	wantProblem(t, resp, body, http.StatusBadRequest, engine.CodeInvalidIdempotencyKey)
	bobKey := uuid.NewString()
	resp, body = send(t, h, cancelCall(h.Bob, bobKey, id))
	wantProblem(t, resp, body, http.StatusNotFound, engine.CodeUnknownReservation)
	resp, body = send(t, h, cancelCall(h.Alice, bobKey, "not-an-id"))
	wantProblem(t, resp, body, http.StatusNotFound, engine.CodeUnknownReservation)
	resp, body = send(t, h, cancelCall(viaNoToken, bobKey, id))
	wantProblem(t, resp, body, http.StatusUnauthorized, engine.CodeUnauthenticated)
	resp, body = send(t, h, call{via: h.Alice, method: http.MethodGet, path: api.CancelPath(id)})
	wantProblem(t, resp, body, http.StatusMethodNotAllowed, api.CodeMethodNotAllowed)

	// The first cancellation, its byte-identical replay, and a conflict.
	key := uuid.NewString()
	want := fmt.Sprintf(`{"status":"cancelled","reservation_id":%q,"workshop":%q,"quantity":1}`, id, servertest.Workshop)
	resp, body = send(t, h, cancelCall(h.Alice, key, id))
	if resp.StatusCode != http.StatusOK || string(body) != want || resp.Header.Get(api.HeaderReplayed) != "false" || resp.Header.Get("Content-Type") != api.MediaJSON {
		t.Fatalf("cancel = %d %s (replayed %q), want 200 %s", resp.StatusCode, body, resp.Header.Get(api.HeaderReplayed), want)
	}
	resp, body = send(t, h, cancelCall(h.Alice, key, id))
	if resp.StatusCode != http.StatusOK || string(body) != want || resp.Header.Get(api.HeaderReplayed) != "true" {
		t.Fatalf("replay = %d %s (replayed %q)", resp.StatusCode, body, resp.Header.Get(api.HeaderReplayed))
	}
	resp, body = send(t, h, reservationCall(h.Alice, key, fmt.Sprintf(`{"workshop":%q,"quantity":1}`, servertest.Workshop)))
	wantProblem(t, resp, body, http.StatusConflict, engine.CodeOperationConflict)

	// An admin's later cancellation under a new key: stored 409.
	adminKey := uuid.NewString()
	resp, body = send(t, h, cancelCall(h.Admin, adminKey, id))
	wantAlready := fmt.Sprintf(`{"status":"already_cancelled","reservation_id":%q,"workshop":%q,"quantity":1}`, id, servertest.Workshop)
	if resp.StatusCode != http.StatusConflict || string(body) != wantAlready {
		t.Fatalf("admin cancel = %d %s, want 409 %s", resp.StatusCode, body, wantAlready)
	}

	// The typed client, and the reservation and operation views.
	c := h.TCPClient(h.Alice)
	ctx := context.Background()
	status, got, replayed, err := c.Cancel(ctx, engine.OperationKey(key), id)
	if err != nil || status != http.StatusOK || string(got) != want || !replayed {
		t.Fatalf("client.Cancel = %d %s %v %v", status, got, replayed, err)
	}
	if _, _, _, err := h.TCPClient(h.Bob).Cancel(ctx, engine.OperationKey(uuid.NewString()), id); engine.ErrorCode(err) != engine.CodeUnknownReservation {
		t.Fatalf("bob's client.Cancel: %v", err)
	}
	res, err := c.Reservation(ctx, id)
	if err != nil || !res.Cancelled() || res.CancelledBy != "alice" || string(res.CancelOperation) != key {
		t.Fatalf("reservation after cancel = %+v, %v", res, err)
	}
	view, err := c.Operation(ctx, engine.OperationKey(key))
	if err != nil || view.HTTPStatus != http.StatusOK || string(view.Response) != want {
		t.Fatalf("operation view = %+v, %v", view, err)
	}
	if _, err := h.TCPClient(h.Bob).Operation(ctx, engine.OperationKey(bobKey)); engine.ErrorCode(err) != engine.CodeUnknownOperation {
		t.Fatalf("bob's refused cancel stored something: %v", err)
	}
	w, err := c.Workshop(ctx, servertest.Workshop)
	if err != nil || w.Reserved != 0 {
		t.Fatalf("workshop after cancel = %+v, %v", w, err)
	}
	h.MustCheckClean(t)
}
