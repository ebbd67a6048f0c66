package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server/servertest"
)

// testClock is an engine clock that moves only when a test moves it.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newTestClock() *testClock {
	return &testClock{now: time.Date(2026, 12, 1, 10, 0, 0, 250_000_000, time.UTC)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// holdCall is a hold request with a key and a body.
func holdCall(via, key, body string) call {
	return call{via: via, method: http.MethodPost, path: api.PathHolds,
		header: http.Header{api.HeaderIdempotencyKey: {key}, "Content-Type": {api.MediaJSON}}, body: body}
}

// settleCall is a confirmation or release (path) under key with the body {}.
func settleCall(via, key, path string) call {
	return call{via: via, method: http.MethodPost, path: path,
		header: http.Header{api.HeaderIdempotencyKey: {key}, "Content-Type": {api.MediaJSON}}, body: "{}"}
}

// holdBody is the body of a hold request for the demo workshop.
func holdBody(quantity, ttl int) string {
	return fmt.Sprintf(`{"workshop":%q,"quantity":%d,"ttl_seconds":%d}`, servertest.Workshop, quantity, ttl)
}

// wantAnswer checks an answer's status, exact body and replay marker.
func wantAnswer(t *testing.T, what string, resp *http.Response, body []byte, status int, want string, replayed bool) {
	t.Helper()
	if resp.StatusCode != status || string(body) != want || resp.Header.Get(api.HeaderReplayed) != fmt.Sprint(replayed) || resp.Header.Get("Content-Type") != api.MediaJSON {
		t.Fatalf("%s = %d %s (replayed %q, %q), want %d %s (replayed %v)", what, resp.StatusCode, body, resp.Header.Get(api.HeaderReplayed), resp.Header.Get("Content-Type"), status, want, replayed)
	}
}

// holdCounts returns how many holds the store keeps and how many receipts.
func holdCounts(t *testing.T, h *servertest.Harness) (holds, receipts int) {
	t.Helper()
	_, receipts = h.Counts(t)
	err := h.Store.View(context.Background(), func(tx engine.Tx) error {
		return tx.ForEachHold(func(engine.Hold) error { holds++; return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	return holds, receipts
}

// mustHold makes a hold of quantity places for ttl seconds as alice and
// returns its id and its answer's body.
func mustHold(t *testing.T, h *servertest.Harness, quantity, ttl int) (string, string) {
	t.Helper()
	resp, body := send(t, h, holdCall(h.Alice, uuid.NewString(), holdBody(quantity, ttl)))
	var a engine.Answer
	if err := json.Unmarshal(body, &a); err != nil || resp.StatusCode != http.StatusCreated || a.Status != engine.StatusHeld {
		t.Fatalf("hold = %d %s", resp.StatusCode, body)
	}
	return a.HoldID, string(body)
}

func TestHoldRequest(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	h := servertest.Start(t, servertest.Options{Clock: clock.Now})
	key := uuid.NewString()

	// Refusals that store nothing, in the documented order: key, media
	// type, size, body, then the engine's refusals of the request.
	resp, body := send(t, h, call{via: h.Alice, method: http.MethodPost, path: api.PathHolds, header: http.Header{"Content-Type": {api.MediaJSON}}, body: holdBody(1, 60)})
	wantProblem(t, resp, body, http.StatusBadRequest, api.CodeMissingIdempotencyKey)
	resp, body = send(t, h, holdCall(h.Alice, "nope", `{`))
	wantProblem(t, resp, body, http.StatusBadRequest, engine.CodeInvalidIdempotencyKey)
	resp, body = send(t, h, call{via: h.Alice, method: http.MethodPost, path: api.PathHolds, header: http.Header{api.HeaderIdempotencyKey: {key}, "Content-Type": {"text/plain"}}, body: holdBody(1, 60)})
	wantProblem(t, resp, body, http.StatusUnsupportedMediaType, api.CodeUnsupportedMediaType)
	resp, body = send(t, h, holdCall(h.Alice, key, `{"workshop":"`+strings.Repeat("a", api.MaxBodyBytes)+`"}`))
	wantProblem(t, resp, body, http.StatusRequestEntityTooLarge, api.CodeBodyTooLarge)
	for _, bad := range []string{
		``, `[]`, `{`,
		fmt.Sprintf(`{"workshop":%q,"quantity":1}`, servertest.Workshop),
		holdBody(1, engine.MinHoldTTLSeconds-1),
		holdBody(1, engine.MaxHoldTTLSeconds+1),
		holdBody(0, 60),
		fmt.Sprintf(`{"workshop":%q,"quantity":1,"ttl_seconds":"60"}`, servertest.Workshop),
		fmt.Sprintf(`{"workshop":%q,"quantity":1,"ttl_seconds":60.0}`, servertest.Workshop),
		fmt.Sprintf(`{"workshop":%q,"quantity":1,"ttl_seconds":60,"ttl_seconds":61}`, servertest.Workshop),
		fmt.Sprintf(`{"workshop":%q,"quantity":1,"ttl_seconds":60,"x":1}`, servertest.Workshop),
		holdBody(1, 60) + `{}`,
		holdBody(servertest.WorkshopMaxQuantity+1, 60),
	} {
		resp, body = send(t, h, holdCall(h.Alice, key, bad))
		wantProblem(t, resp, body, http.StatusUnprocessableEntity, engine.CodeRequestContract)
	}
	resp, body = send(t, h, holdCall(h.Alice, key, `{"workshop":"no-such","quantity":1,"ttl_seconds":60}`))
	wantProblem(t, resp, body, http.StatusNotFound, engine.CodeUnknownWorkshop)
	resp, body = send(t, h, holdCall(viaNoToken, key, holdBody(1, 60)))
	wantProblem(t, resp, body, http.StatusUnauthorized, engine.CodeUnauthenticated)
	if holds, receipts := holdCounts(t, h); holds != 0 || receipts != 0 {
		t.Fatalf("refusals stored %d holds and %d receipts", holds, receipts)
	}

	// The first hold, its byte-identical replay, and conflicts.
	resp, body = send(t, h, holdCall(h.Alice, key, holdBody(2, 600)))
	var a engine.Answer
	if err := json.Unmarshal(body, &a); err != nil || !engine.IsHoldID(a.HoldID) {
		t.Fatalf("hold = %d %s", resp.StatusCode, body)
	}
	want := fmt.Sprintf(`{"status":"held","hold_id":%q,"workshop":%q,"quantity":2,"expires_at":"2026-12-01T10:10:00Z"}`, a.HoldID, servertest.Workshop)
	wantAnswer(t, "hold", resp, body, http.StatusCreated, want, false)
	if loc := resp.Header.Get("Location"); loc != "/api/v1/holds/"+a.HoldID {
		t.Errorf("Location = %q", loc)
	}
	resp, body = send(t, h, holdCall(h.Alice, key, ` { "ttl_seconds":600, "quantity":2, "workshop":"workshop-demo" } `))
	wantAnswer(t, "replay", resp, body, http.StatusCreated, want, true)
	if loc := resp.Header.Get("Location"); loc != "/api/v1/holds/"+a.HoldID {
		t.Errorf("Location of the replay = %q", loc)
	}
	resp, body = send(t, h, holdCall(h.Alice, key, holdBody(2, 601)))
	wantProblem(t, resp, body, http.StatusConflict, engine.CodeOperationConflict)
	resp, body = send(t, h, reservationCall(h.Alice, key, fmt.Sprintf(`{"workshop":%q,"quantity":2}`, servertest.Workshop)))
	wantProblem(t, resp, body, http.StatusConflict, engine.CodeOperationConflict)
	resp, body = send(t, h, settleCall(h.Alice, key, api.ConfirmPath(a.HoldID)))
	wantProblem(t, resp, body, http.StatusConflict, engine.CodeOperationConflict)

	// The held places count against capacity.
	w, err := h.TCPClient(h.Alice).Workshop(context.Background(), servertest.Workshop)
	if err != nil || w.Held != 2 || w.Reserved != 0 || w.Available != servertest.WorkshopCapacity-2 {
		t.Fatalf("workshop while held = %+v, %v", w, err)
	}
	other := uuid.NewString()
	resp, body = send(t, h, holdCall(h.Bob, other, holdBody(2, 60)))
	wantUnavailable := fmt.Sprintf(`{"status":"unavailable","workshop":%q,"quantity":2}`, servertest.Workshop)
	wantAnswer(t, "hold beyond capacity", resp, body, http.StatusConflict, wantUnavailable, false)
	resp, body = send(t, h, holdCall(h.Bob, other, holdBody(2, 60)))
	wantAnswer(t, "replay of unavailable", resp, body, http.StatusConflict, wantUnavailable, true)
	resp, body = send(t, h, reservationCall(h.Bob, uuid.NewString(), fmt.Sprintf(`{"workshop":%q,"quantity":2}`, servertest.Workshop)))
	if resp.StatusCode != http.StatusConflict || !bytes.Contains(body, []byte(`"unavailable"`)) {
		t.Fatalf("reservation beyond the held places = %d %s", resp.StatusCode, body)
	}

	// The hold as its owner and an admin see it; to bob it does not exist.
	c := h.TCPClient(h.Alice)
	got, err := c.Hold(context.Background(), a.HoldID)
	if err != nil || got.State != engine.HoldHeld || got.Actor != "alice" || got.Quantity != 2 || !got.ExpiresAt.Equal(a.ExpiresAt) || string(got.OperationKey) != key {
		t.Fatalf("alice's GET hold = %+v, %v", got, err)
	}
	if got, err := h.TCPClient(h.Admin).Hold(context.Background(), a.HoldID); err != nil || got.ID != a.HoldID {
		t.Fatalf("admin's GET hold = %+v, %v", got, err)
	}
	resp, body = send(t, h, call{via: h.Bob, method: http.MethodGet, path: api.HoldPath(a.HoldID)})
	wantProblem(t, resp, body, http.StatusNotFound, engine.CodeUnknownHold)
	resp, body = send(t, h, call{via: h.Alice, method: http.MethodGet, path: api.HoldPath("not-a-hold")})
	wantProblem(t, resp, body, http.StatusNotFound, engine.CodeUnknownHold)

	// The operation view answers with the stored answer.
	view, err := c.Operation(context.Background(), engine.OperationKey(key))
	if err != nil || view.HTTPStatus != http.StatusCreated || string(view.Response) != want {
		t.Fatalf("operation view = %+v, %v", view, err)
	}
	h.MustCheckClean(t)
}

func TestConfirmAndRelease(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	h := servertest.Start(t, servertest.Options{Clock: clock.Now})
	id, _ := mustHold(t, h, 2, 600)
	confirm := api.ConfirmPath(id)

	// Refusals that store nothing, in the documented order.
	key := uuid.NewString()
	resp, body := send(t, h, call{via: h.Alice, method: http.MethodPost, path: confirm, header: http.Header{"Content-Type": {api.MediaJSON}}, body: "{}"})
	wantProblem(t, resp, body, http.StatusBadRequest, api.CodeMissingIdempotencyKey)
	resp, body = send(t, h, call{via: h.Alice, method: http.MethodPost, path: confirm, header: http.Header{api.HeaderIdempotencyKey: {"nope"}, "Content-Type": {api.MediaJSON}}, body: "{}"})
	wantProblem(t, resp, body, http.StatusBadRequest, engine.CodeInvalidIdempotencyKey)
	resp, body = send(t, h, call{via: h.Alice, method: http.MethodPost, path: confirm, header: http.Header{api.HeaderIdempotencyKey: {key}, "Content-Type": {"application/x-www-form-urlencoded"}}, body: "{}"})
	wantProblem(t, resp, body, http.StatusUnsupportedMediaType, api.CodeUnsupportedMediaType)
	resp, body = send(t, h, call{via: h.Alice, method: http.MethodPost, path: api.ReleasePath(id), header: http.Header{api.HeaderIdempotencyKey: {key}, "Content-Type": {api.MediaJSON}}, body: "{" + strings.Repeat(" ", api.MaxBodyBytes) + "}"})
	wantProblem(t, resp, body, http.StatusRequestEntityTooLarge, api.CodeBodyTooLarge)
	for _, path := range []string{confirm, api.ReleasePath(id)} {
		for _, bad := range []string{``, `[]`, `null`, `{`, `{"x":1}`, `{"hold_id":"` + id + `"}`, `{}{}`, `""`} {
			c := settleCall(h.Alice, key, path)
			c.body = bad
			resp, body = send(t, h, c)
			wantProblem(t, resp, body, http.StatusUnprocessableEntity, engine.CodeRequestContract)
		}
	}
	resp, body = send(t, h, settleCall(h.Bob, key, confirm))
	wantProblem(t, resp, body, http.StatusNotFound, engine.CodeUnknownHold)
	resp, body = send(t, h, settleCall(h.Bob, key, api.ReleasePath(id)))
	wantProblem(t, resp, body, http.StatusNotFound, engine.CodeUnknownHold)
	resp, body = send(t, h, settleCall(h.Admin, key, confirm))
	wantProblem(t, resp, body, http.StatusNotFound, engine.CodeUnknownHold)
	resp, body = send(t, h, settleCall(h.Alice, key, api.ConfirmPath("0123")))
	wantProblem(t, resp, body, http.StatusNotFound, engine.CodeUnknownHold)
	resp, body = send(t, h, settleCall(h.Alice, key, api.ConfirmPath("0190a1b2c3d4e5f60718293a4b5c6d7e")))
	wantProblem(t, resp, body, http.StatusNotFound, engine.CodeUnknownHold)
	resp, body = send(t, h, call{via: h.Alice, method: http.MethodGet, path: confirm})
	wantProblem(t, resp, body, http.StatusMethodNotAllowed, api.CodeMethodNotAllowed)
	if holds, receipts := holdCounts(t, h); holds != 1 || receipts != 1 {
		t.Fatalf("refusals left %d holds and %d receipts, want the hold's 1 and 1", holds, receipts)
	}
	if _, err := h.TCPClient(h.Bob).Operation(context.Background(), engine.OperationKey(key)); engine.ErrorCode(err) != engine.CodeUnknownOperation {
		t.Fatalf("bob's refused confirmation stored something: %v", err)
	}

	// The confirmation, its byte-identical replay, and conflicts.
	resp, body = send(t, h, settleCall(h.Alice, key, confirm))
	var a engine.Answer
	if err := json.Unmarshal(body, &a); err != nil || !engine.IsReservationID(a.ReservationID) {
		t.Fatalf("confirm = %d %s", resp.StatusCode, body)
	}
	want := fmt.Sprintf(`{"status":"reserved","reservation_id":%q,"hold_id":%q,"workshop":%q,"quantity":2}`, a.ReservationID, id, servertest.Workshop)
	wantAnswer(t, "confirm", resp, body, http.StatusCreated, want, false)
	if loc := resp.Header.Get("Location"); loc != api.ReservationPath(a.ReservationID) {
		t.Errorf("Location = %q", loc)
	}
	clock.Advance(time.Hour) // A replay does not decide again: the hold's deadline no longer matters.
	resp, body = send(t, h, settleCall(h.Alice, key, confirm))
	wantAnswer(t, "replay", resp, body, http.StatusCreated, want, true)
	resp, body = send(t, h, settleCall(h.Alice, key, api.ReleasePath(id)))
	wantProblem(t, resp, body, http.StatusConflict, engine.CodeOperationConflict)
	other, _ := mustHold(t, h, 1, 600)
	resp, body = send(t, h, settleCall(h.Alice, key, api.ConfirmPath(other)))
	wantProblem(t, resp, body, http.StatusConflict, engine.CodeOperationConflict)

	c := h.TCPClient(h.Alice)
	ctx := context.Background()
	got, err := c.Hold(ctx, id)
	if err != nil || got.State != engine.HoldConfirmed || got.ReservationID != a.ReservationID || string(got.SettleOperation) != key {
		t.Fatalf("hold after confirm = %+v, %v", got, err)
	}
	res, err := c.Reservation(ctx, a.ReservationID)
	if err != nil || res.Quantity != 2 || res.Actor != "alice" || string(res.OperationKey) != key {
		t.Fatalf("reservation of the confirmed hold = %+v, %v", res, err)
	}
	w, err := c.Workshop(ctx, servertest.Workshop)
	if err != nil || w.Reserved != 2 || w.Held != 1 || w.Available != 0 {
		t.Fatalf("workshop after confirm = %+v, %v", w, err)
	}

	// Later decisions on the confirmed hold are stored 409s.
	alreadyConfirmed := fmt.Sprintf(`{"status":"already_confirmed","hold_id":%q,"workshop":%q,"quantity":2}`, id, servertest.Workshop)
	for _, path := range []string{confirm, api.ReleasePath(id)} {
		k := uuid.NewString()
		resp, body = send(t, h, settleCall(h.Alice, k, path))
		wantAnswer(t, "settle a confirmed hold", resp, body, http.StatusConflict, alreadyConfirmed, false)
		resp, body = send(t, h, settleCall(h.Alice, k, path))
		wantAnswer(t, "replay", resp, body, http.StatusConflict, alreadyConfirmed, true)
	}

	// A release, its replay, and what comes after it.
	releaseKey := uuid.NewString()
	resp, body = send(t, h, settleCall(h.Alice, releaseKey, api.ReleasePath(other)))
	wantReleased := fmt.Sprintf(`{"status":"released","hold_id":%q,"workshop":%q,"quantity":1}`, other, servertest.Workshop)
	wantAnswer(t, "release", resp, body, http.StatusOK, wantReleased, false)
	if loc := resp.Header.Get("Location"); loc != "" {
		t.Errorf("Location of a release = %q", loc)
	}
	resp, body = send(t, h, settleCall(h.Alice, releaseKey, api.ReleasePath(other)))
	wantAnswer(t, "replay of the release", resp, body, http.StatusOK, wantReleased, true)
	resp, body = send(t, h, settleCall(h.Alice, uuid.NewString(), api.ReleasePath(other)))
	wantAnswer(t, "second release", resp, body, http.StatusConflict, strings.Replace(wantReleased, `"released"`, `"already_released"`, 1), false)
	resp, body = send(t, h, settleCall(h.Alice, uuid.NewString(), api.ConfirmPath(other)))
	wantAnswer(t, "confirm after release", resp, body, http.StatusConflict, wantReleased, false)
	if got, err := c.Hold(ctx, other); err != nil || got.State != engine.HoldReleased {
		t.Fatalf("released hold = %+v, %v", got, err)
	}
	if w, err := c.Workshop(ctx, servertest.Workshop); err != nil || w.Reserved != 2 || w.Held != 0 || w.Available != 1 {
		t.Fatalf("workshop after release = %+v, %v", w, err)
	}
	if n, _ := h.Counts(t); n != 1 {
		t.Fatalf("%d reservations, want the confirmed hold's 1", n)
	}

	// The confirmed hold's reservation is cancelled like any other.
	resp, body = send(t, h, cancelCall(h.Alice, uuid.NewString(), a.ReservationID))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("cancel of the confirmed hold's reservation = %d %s", resp.StatusCode, body)
	}
	h.MustCheckClean(t)

	// The typed client classifies every answer as the one to its operation.
	r, err := c.Send(ctx, engine.OperationKey(key), client.Confirming(id))
	if err != nil || !r.Decided || r.Answer.Status != engine.StatusReserved || !r.Replayed || string(r.Body) != want {
		t.Fatalf("client.Send(confirm) = %+v, %v", r, err)
	}
	r, err = c.Send(ctx, engine.OperationKey(key), client.Confirming(other))
	if err != nil || !r.Decided || engine.ErrorCode(r.Err()) != engine.CodeOperationConflict {
		t.Fatalf("client.Send(confirm other) = %+v, %v", r, err)
	}
}

// TestConfirmExpiredHold moves the engine's clock past a hold's deadline,
// with no cleanup run: the confirmation is a stored 409 expired, replayed
// as such however the clock moves on, and the places are free again.
func TestConfirmExpiredHold(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	h := servertest.Start(t, servertest.Options{Clock: clock.Now})
	id, _ := mustHold(t, h, 2, engine.MinHoldTTLSeconds)
	released, _ := mustHold(t, h, 1, engine.MinHoldTTLSeconds)
	c := h.TCPClient(h.Alice)
	ctx := context.Background()
	if w, err := c.Workshop(ctx, servertest.Workshop); err != nil || w.Held != 3 || w.Available != 0 {
		t.Fatalf("workshop while held = %+v, %v", w, err)
	}

	// The deadline is the hold's time to the second plus its ttl: the
	// clock's 250 ms past 10:00:00 do not extend it.
	clock.Advance(time.Duration(engine.MinHoldTTLSeconds)*time.Second - 250*time.Millisecond)
	if got, err := c.Hold(ctx, id); err != nil || got.State != engine.HoldExpired {
		t.Fatalf("hold at its deadline = %+v, %v", got, err)
	}
	if w, err := c.Workshop(ctx, servertest.Workshop); err != nil || w.Held != 0 || w.Available != servertest.WorkshopCapacity {
		t.Fatalf("workshop at the deadline = %+v, %v", w, err)
	}
	key := uuid.NewString()
	resp, body := send(t, h, settleCall(h.Alice, key, api.ConfirmPath(id)))
	want := fmt.Sprintf(`{"status":"expired","hold_id":%q,"workshop":%q,"quantity":2}`, id, servertest.Workshop)
	wantAnswer(t, "confirm of an expired hold", resp, body, http.StatusConflict, want, false)
	clock.Advance(24 * time.Hour)
	resp, body = send(t, h, settleCall(h.Alice, key, api.ConfirmPath(id)))
	wantAnswer(t, "replay", resp, body, http.StatusConflict, want, true)
	resp, body = send(t, h, settleCall(h.Alice, uuid.NewString(), api.ReleasePath(released)))
	wantAnswer(t, "release of an expired hold", resp, body, http.StatusConflict, fmt.Sprintf(`{"status":"expired","hold_id":%q,"workshop":%q,"quantity":1}`, released, servertest.Workshop), false)
	if n, _ := h.Counts(t); n != 0 {
		t.Fatalf("%d reservations after confirming an expired hold", n)
	}
	if got, err := c.Hold(ctx, id); err != nil || got.State != engine.HoldExpired {
		t.Fatalf("hold after the confirmation = %+v, %v", got, err)
	}

	// The metrics count each expired hold once: the confirmation and the
	// release gave their places back, the replay counts nothing.
	resp, body = send(t, h, call{via: viaSocket, method: http.MethodGet, path: api.PathMetrics})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("metrics = %d", resp.StatusCode)
	}
	for _, m := range []string{
		`reserved_holds_total{event="held"} 2`,
		`reserved_holds_total{event="expired"} 2`,
		`reserved_holds_total{event="confirmed"} 0`,
		`reserved_holds_total{event="released"} 0`,
		`reserved_http_requests_total{outcome="expired",route="POST /api/v1/holds/{id}/confirm"} 1`,
		`reserved_http_requests_total{outcome="replayed",route="POST /api/v1/holds/{id}/confirm"} 1`,
		`reserved_http_requests_total{outcome="held",route="POST /api/v1/holds"} 2`,
	} {
		if !bytes.Contains(body, []byte(m)) {
			t.Errorf("metrics lack %s", m)
		}
	}
	h.MustCheckClean(t)
}

// TestReserveCleansExpiredHolds: a reservation that needs the places of
// holds past their deadline, with no cleanup run, cleans up as many as it
// needs, and the metrics count each of them expired once; a batch item
// does the same.
func TestReserveCleansExpiredHolds(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	h := servertest.Start(t, servertest.Options{Clock: clock.Now})
	for range servertest.WorkshopCapacity {
		mustHold(t, h, 1, engine.MinHoldTTLSeconds)
	}
	clock.Advance(engine.MinHoldTTLSeconds * time.Second)
	c := h.TCPClient(h.Alice)
	ctx := context.Background()
	if status, body, _, err := c.Reserve(ctx, engine.OperationKey(uuid.NewString()), engine.Request{Workshop: servertest.Workshop, Quantity: 2}); err != nil || status != http.StatusCreated {
		t.Fatalf("reserve of 2 places of expired holds = %d %s, %v", status, body, err)
	}
	reply, err := c.ReserveBatch(ctx, []client.BatchItem{{Key: engine.OperationKey(uuid.NewString()), Request: engine.Request{Workshop: servertest.Workshop, Quantity: 1}}}, false)
	if err != nil || len(reply.Items) != 1 || reply.Items[0].Answer.Status != engine.StatusReserved {
		t.Fatalf("batch of the last place = %+v, %v", reply, err)
	}
	resp, body := send(t, h, call{via: viaSocket, method: http.MethodGet, path: api.PathMetrics})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("metrics = %d", resp.StatusCode)
	}
	if m := fmt.Sprintf(`reserved_holds_total{event="expired"} %d`, servertest.WorkshopCapacity); !bytes.Contains(body, []byte(m)) {
		t.Errorf("metrics lack %s", m)
	}
	h.MustCheckClean(t)
}

// TestConcurrentConfirms sends 64 confirmations of one hold at once, each
// under its own key: exactly one makes the reservation, every other is a
// stored already_confirmed, and the workshop's counters agree.
func TestConcurrentConfirms(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, servertest.Options{})
	id, _ := mustHold(t, h, 2, 600)
	const n = 64
	results := make([]client.Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	c := h.TCPClient(h.Alice)
	for i := range n {
		wg.Go(func() {
			results[i], errs[i] = c.Send(context.Background(), engine.OperationKey(uuid.NewString()), client.Confirming(id))
		})
	}
	wg.Wait()
	counts := map[string]int{}
	for i, r := range results {
		if errs[i] != nil || !r.Decided {
			t.Fatalf("confirmation %d: %+v, %v", i, r, errs[i])
		}
		counts[r.Answer.Status]++
	}
	if counts[engine.StatusReserved] != 1 || counts[engine.StatusAlreadyConfirmed] != n-1 {
		t.Fatalf("answers = %v, want 1 reserved and %d already_confirmed", counts, n-1)
	}
	if reservations, _ := h.Counts(t); reservations != 1 {
		t.Fatalf("%d reservations, want 1", reservations)
	}
	w, err := c.Workshop(context.Background(), servertest.Workshop)
	if err != nil || w.Reserved != 2 || w.Held != 0 {
		t.Fatalf("workshop = %+v, %v", w, err)
	}
	h.MustCheckClean(t)
}

// TestLostConfirmAnswer garbles the answer of a committed confirmation:
// the client cannot tell what happened, and the retry with the same key
// gets the stored answer, with exactly one reservation made.
func TestLostConfirmAnswer(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, servertest.Options{FaultInjection: true})
	ctx := context.Background()
	c := h.TCPClient(h.Alice)
	for _, op := range []func(id string) client.Operation{client.Confirming, client.Releasing} {
		id, _ := mustHold(t, h, 1, 600)
		if err := h.SocketClient().ArmFault(ctx, api.Fault{Fault: api.FaultGarbleResponse}); err != nil {
			t.Fatal(err)
		}
		key := engine.OperationKey(uuid.NewString())
		r, err := c.Send(ctx, key, op(id))
		var ue *client.UnexpectedResponseError
		if err != nil || r.Decided || r.Status != http.StatusOK || !errors.As(r.Err(), &ue) {
			t.Fatalf("%s with a garbled answer = %+v, %v", op(id).Kind, r, err)
		}
		r, err = c.Send(ctx, key, op(id))
		if err != nil || !r.Decided || !r.Replayed || (r.Answer.Status != engine.StatusReserved && r.Answer.Status != engine.StatusReleased) {
			t.Fatalf("%s retry = %+v, %v", op(id).Kind, r, err)
		}
	}
	if reservations, _ := h.Counts(t); reservations != 1 {
		t.Fatalf("%d reservations, want the one confirmation's", reservations)
	}
	h.MustCheckClean(t)
}
