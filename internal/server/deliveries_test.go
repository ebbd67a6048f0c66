package server_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/engine/memstore"
	"github.com/reserve/reserve/internal/server"
	"github.com/reserve/reserve/internal/server/servertest"
)

// memHarness serves an engine on a memory store on a Unix socket (whose
// peer, the test's own uid, is an admin) and on loopback TCP, with tokens
// for an admin and for alice, and the demo workshop. Its harness has no
// bbolt store: it carries the engine, the listeners and the tokens that
// send and the other helpers use.
func memHarness(t *testing.T, clock *testClock) (*servertest.Harness, *memstore.Store) {
	t.Helper()
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	eng := engine.New(store, engine.WithClock(clock.Now))
	if _, _, err := eng.PutWorkshop(ctx, servertest.Workshop, engine.WorkshopSpec{Capacity: servertest.WorkshopCapacity, MaxQuantity: servertest.WorkshopMaxQuantity}, nil); err != nil {
		t.Fatal(err)
	}
	h := &servertest.Harness{Engine: eng, Socket: filepath.Join(servertest.ShortTempDir(t), "s.sock")}
	var err error
	if h.Admin, err = eng.CreateToken(ctx, "root-admin", true); err != nil {
		t.Fatal(err)
	}
	if h.Alice, err = eng.CreateToken(ctx, "alice", false); err != nil {
		t.Fatal(err)
	}
	srv := server.New(server.Config{Engine: eng, DaemonUID: os.Getuid()})
	sock, err := net.Listen("unix", h.Socket)
	if err != nil {
		t.Fatal(err)
	}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.URL = "http://" + tcp.Addr().String()
	go srv.ServeUnix(sock)
	go srv.ServeTCP(tcp)
	t.Cleanup(func() {
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		srv.Shutdown(context.Background())
	})
	return h, store
}

// receiptCount returns how many receipts store keeps.
func receiptCount(t *testing.T, store engine.Store) int {
	t.Helper()
	n := 0
	err := store.View(context.Background(), func(tx engine.Tx) error {
		n = 0
		return tx.ForEachReceipt(func(engine.Receipt) error { n++; return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// wantDetail checks that the problem detail body says want.
func wantDetail(t *testing.T, body []byte, want string) {
	t.Helper()
	var p api.Problem
	if err := json.Unmarshal(body, &p); err != nil || !strings.Contains(p.Detail, want) {
		t.Errorf("the problem %s does not say %s", body, want)
	}
}

// webhookCall is a request to the webhook endpoints with a JSON body.
func webhookCall(via, method, path, body string) call {
	c := call{via: via, method: method, path: path}
	if body != "" {
		c.header = http.Header{"Content-Type": {api.MediaJSON}}
		c.body = body
	}
	return c
}

func TestWebhookEndpoints(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	h, _ := memHarness(t, clock)
	add := func(via, body string) (*http.Response, []byte) {
		return send(t, h, webhookCall(via, http.MethodPost, api.PathWebhooks, body))
	}
	resp, body := add(h.Admin, `{"url":"https://hooks.example/a","event_types":["hold.created","reservation.created"]}`)
	var w engine.WebhookEndpoint
	if err := json.Unmarshal(body, &w); err != nil || resp.StatusCode != http.StatusCreated || !strings.HasPrefix(w.Secret, engine.WebhookSecretPrefix) ||
		w.URL != "https://hooks.example/a" || strings.Join(w.EventTypes, ",") != "hold.created,reservation.created" || w.ID == "" || w.CreatedAt.IsZero() {
		t.Fatalf("add = %d %s", resp.StatusCode, body)
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("the answer with the secret has Cache-Control %q, want no-store", cc)
	}
	// No event types: every type, answered as an empty list. (Ids of
	// different milliseconds sort as they were made.)
	clock.Advance(time.Second)
	resp, body = add(viaSocket, `{"url":"http://127.0.0.1:9/b"}`)
	if resp.StatusCode != http.StatusCreated || !strings.Contains(string(body), `"event_types":[]`) {
		t.Fatalf("add without event types = %d %s", resp.StatusCode, body)
	}

	// A URL that has an endpoint is refused, so a repeat makes no second.
	resp, body = add(h.Admin, `{"url":"https://hooks.example/a"}`)
	wantProblem(t, resp, body, http.StatusConflict, engine.CodeWebhookExists)
	for bad, member := range map[string]string{
		`{}`:                              `"url"`,
		`{"url":1}`:                       `"url"`,
		`{"url":"ftp://hooks.example/"}`:  `"url"`,
		`{"url":"http://hooks.example/"}`: `"url"`,
		`{"url":"https://hooks.example/c","event_types":"hold.created"}`:                  `"event_types"`,
		`{"url":"https://hooks.example/c","event_types":[1]}`:                             `"event_types"`,
		`{"url":"https://hooks.example/c","event_types":["nope"]}`:                        `"event_types"`,
		`{"url":"https://hooks.example/c","event_types":["hold.created","hold.created"]}`: `"event_types"`,
		`{"url":"https://hooks.example/c","secret":"x"}`:                                  `"secret"`,
	} {
		resp, body = add(h.Admin, bad)
		wantProblem(t, resp, body, http.StatusUnprocessableEntity, engine.CodeRequestContract)
		wantDetail(t, body, "member "+member)
	}
	resp, body = add(h.Alice, `{"url":"https://hooks.example/c"}`)
	wantProblem(t, resp, body, http.StatusForbidden, engine.CodeForbidden)

	// The list never shows a secret.
	resp, body = send(t, h, call{via: h.Admin, method: http.MethodGet, path: api.PathWebhooks})
	var list api.WebhookList
	if err := json.Unmarshal(body, &list); err != nil || resp.StatusCode != http.StatusOK || len(list.Webhooks) != 2 || list.Webhooks[0].ID != w.ID {
		t.Fatalf("list = %d %s", resp.StatusCode, body)
	}
	if strings.Contains(string(body), "secret") || strings.Contains(string(body), engine.WebhookSecretPrefix) {
		t.Errorf("the list shows a secret: %s", body)
	}
	resp, body = send(t, h, call{via: h.Alice, method: http.MethodGet, path: api.PathWebhooks})
	wantProblem(t, resp, body, http.StatusForbidden, engine.CodeForbidden)

	// Removed once; then it is unknown.
	resp, body = send(t, h, call{via: h.Alice, method: http.MethodDelete, path: api.WebhookPath(w.ID)})
	wantProblem(t, resp, body, http.StatusForbidden, engine.CodeForbidden)
	resp, body = send(t, h, call{via: h.Admin, method: http.MethodDelete, path: api.WebhookPath(w.ID)})
	if resp.StatusCode != http.StatusNoContent || len(body) != 0 {
		t.Fatalf("remove = %d %s", resp.StatusCode, body)
	}
	resp, body = send(t, h, call{via: viaSocket, method: http.MethodDelete, path: api.WebhookPath(w.ID)})
	wantProblem(t, resp, body, http.StatusNotFound, engine.CodeUnknownWebhook)
	_, body = send(t, h, call{via: h.Admin, method: http.MethodGet, path: api.PathWebhooks})
	if err := json.Unmarshal(body, &list); err != nil || len(list.Webhooks) != 1 || list.Webhooks[0].ID == w.ID {
		t.Errorf("list after the removal = %s", body)
	}
	// The URL can be added anew, with a new secret.
	resp, body = add(h.Admin, `{"url":"https://hooks.example/a"}`)
	var again engine.WebhookEndpoint
	if err := json.Unmarshal(body, &again); err != nil || resp.StatusCode != http.StatusCreated || again.ID == w.ID || again.Secret == w.Secret {
		t.Errorf("add after the removal = %d %s", resp.StatusCode, body)
	}
}

// deliveryFixture adds a webhook endpoint, makes two reservations as
// alice (two events), routes them and fails the first delivery for good.
// It returns the failed delivery and the pending one.
func deliveryFixture(t *testing.T, h *servertest.Harness) (failed, pending engine.Delivery) {
	t.Helper()
	ctx := context.Background()
	admin := engine.Principal{Actor: "root-admin", Admin: true}
	if _, err := h.Engine.AddWebhook(ctx, admin, "https://hooks.example/in", nil); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := h.Engine.Reserve(ctx, "alice", engine.OperationKey(uuid.NewString()), engine.Request{Workshop: servertest.Workshop, Quantity: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if n, _, err := h.Engine.RouteEvents(ctx, 100, engine.RouteOptions{}); err != nil || n != 2 {
		t.Fatalf("RouteEvents = %d, %v", n, err)
	}
	jobs, err := h.Engine.ClaimDueDeliveries(ctx, 1, time.Minute)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("ClaimDueDeliveries = %d, %v", len(jobs), err)
	}
	if err := h.Engine.FinishDelivery(ctx, jobs[0].Delivery, engine.Attempt{State: engine.DeliveryFailed, Status: 410, Error: "410 Gone"}); err != nil {
		t.Fatal(err)
	}
	page, err := h.Engine.Deliveries(ctx, admin, engine.DeliveryFilter{State: engine.DeliveryFailed})
	if err != nil || len(page.Deliveries) != 1 {
		t.Fatalf("failed deliveries = %+v, %v", page, err)
	}
	failed = page.Deliveries[0]
	if page, err = h.Engine.Deliveries(ctx, admin, engine.DeliveryFilter{}); err != nil || len(page.Deliveries) != 1 {
		t.Fatalf("pending deliveries = %+v, %v", page, err)
	}
	return failed, page.Deliveries[0]
}

func TestDeliveryView(t *testing.T) {
	t.Parallel()
	h, _ := memHarness(t, newTestClock())
	failed, pending := deliveryFixture(t, h)
	list := func(via, query string) (*http.Response, api.DeliveryPage, []byte) {
		t.Helper()
		resp, body := send(t, h, call{via: via, method: http.MethodGet, path: api.PathDeliveries + query})
		var page api.DeliveryPage
		if resp.StatusCode == http.StatusOK {
			if err := json.Unmarshal(body, &page); err != nil {
				t.Fatalf("GET %s: %v: %s", query, err, body)
			}
		}
		return resp, page, body
	}
	ids := func(p api.DeliveryPage) string {
		var s []string
		for _, d := range p.Deliveries {
			s = append(s, d.ID)
		}
		return strings.Join(s, ",")
	}
	for query, want := range map[string]string{
		"":               pending.ID,
		"?state=pending": pending.ID,
		"?state=failed":  failed.ID,
		"?state=failed&channel=webhook&endpoint=" + failed.Endpoint: failed.ID,
		"?state=failed&channel=mail":                                "",
		"?state=failed&endpoint=0123456789abcdef0123456789abcdef":   "",
		"?state=delivered":         "",
		"?state=skipped&limit=500": "",
	} {
		resp, page, body := list(h.Admin, query)
		if resp.StatusCode != http.StatusOK || ids(page) != want || page.NextCursor != "" || page.Deliveries == nil {
			t.Errorf("GET deliveries%s = %d %s, want %q", query, resp.StatusCode, body, want)
		}
	}
	resp, page, body := list(viaSocket, "?state=failed")
	d := page.Deliveries[0]
	if resp.StatusCode != http.StatusOK || d.Channel != engine.ChannelWebhook || d.Attempts != 1 || d.LastStatus != 410 || d.LastError != "410 Gone" ||
		d.EventType != engine.EventReserved || d.DoneAt.IsZero() {
		t.Errorf("the failed delivery = %d %s", resp.StatusCode, body)
	}

	// Pages: the cursor of one is the "after" of the next.
	if _, err := h.Engine.Reserve(context.Background(), "alice", engine.OperationKey(uuid.NewString()), engine.Request{Workshop: servertest.Workshop, Quantity: 1}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.Engine.RouteEvents(context.Background(), 100, engine.RouteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, first, _ := list(h.Admin, "?limit=1")
	_, second, _ := list(h.Admin, "?limit=1&after="+first.NextCursor)
	if len(first.Deliveries) != 1 || first.NextCursor != first.Deliveries[0].ID || len(second.Deliveries) != 1 || second.NextCursor != "" ||
		second.Deliveries[0].ID <= first.Deliveries[0].ID {
		t.Errorf("pages: %+v then %+v", first, second)
	}

	for query, names := range map[string]string{
		"?state=gone":  `"state" must be one of pending, failed, delivered, skipped`,
		"?channel=sms": `"channel" must be one of webhook, mail, reminder`,
		"?channel=reminder&endpoint=" + failed.Endpoint: `"endpoint"`,
		"?channel=mail&endpoint=" + failed.Endpoint:     `"endpoint"`,
		"?limit=0":                           `"limit"`,
		"?limit=501":                         `"limit"`,
		"?limit=x":                           `"limit"`,
		"?after=" + strings.Repeat("a", 201): `"after"`,
		"?cursor=x":                          `unknown query parameter "cursor"`,
		"?state=failed&state=pending":        `"state" is given 2 times`,
	} {
		resp, _, body := list(h.Admin, query)
		wantProblem(t, resp, body, http.StatusUnprocessableEntity, engine.CodeRequestContract)
		wantDetail(t, body, names)
	}
	resp, _, body = list(h.Alice, "")
	wantProblem(t, resp, body, http.StatusForbidden, engine.CodeForbidden)
}

// TestDeliveryViewOfReminders: the view lists a hold's reminder under
// channel reminder, pending, due the lead before the deadline, apart
// from the hold's mail under channel mail.
func TestDeliveryViewOfReminders(t *testing.T) {
	t.Parallel()
	h, _ := memHarness(t, newTestClock())
	ctx := context.Background()
	if err := h.Engine.KeepVerifiedEmail(ctx, "alice", "alice@example.org"); err != nil {
		t.Fatal(err)
	}
	held, err := h.Engine.Hold(ctx, "alice", engine.OperationKey(uuid.NewString()), engine.HoldRequest{Workshop: servertest.Workshop, Quantity: 1, TTLSeconds: 7200})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.Engine.RouteEvents(ctx, 100, engine.RouteOptions{Mail: true, HoldReminder: time.Hour}); err != nil {
		t.Fatal(err)
	}
	for channel, due := range map[string]time.Time{engine.ChannelReminder: held.Answer.ExpiresAt.Add(-time.Hour), engine.ChannelMail: {}} {
		resp, body := send(t, h, call{via: h.Admin, method: http.MethodGet, path: api.PathDeliveries + "?channel=" + channel})
		var page api.DeliveryPage
		if err := json.Unmarshal(body, &page); err != nil || resp.StatusCode != http.StatusOK || len(page.Deliveries) != 1 {
			t.Fatalf("GET deliveries?channel=%s = %d %s", channel, resp.StatusCode, body)
		}
		d := page.Deliveries[0]
		if d.Channel != channel || d.ID != d.EventID+"-"+channel || d.Recipient != "alice@example.org" || d.State != engine.DeliveryPending ||
			!due.IsZero() && !d.NextAttemptAt.Equal(due) {
			t.Errorf("GET deliveries?channel=%s = %s; want one pending delivery to alice, due at %s", channel, body, due)
		}
	}
}

// correctionCall is a retry or skip of a delivery (path) under key.
func correctionCall(via, key, path, body string) call {
	c := call{via: via, method: http.MethodPost, path: path, header: http.Header{"Content-Type": {api.MediaJSON}}, body: body}
	if key != "" {
		c.header.Set(api.HeaderIdempotencyKey, key)
	}
	return c
}

func TestDeliveryCorrections(t *testing.T) {
	t.Parallel()
	h, store := memHarness(t, newTestClock())
	failed, pending := deliveryFixture(t, h)
	ctx := context.Background()
	admin := engine.Principal{Actor: "root-admin", Admin: true}
	answer := func(status, id string) string {
		return `{"status":"` + status + `","delivery_id":"` + id + `","workshop":"` + servertest.Workshop + `","quantity":1}`
	}
	stateOf := func(id string) engine.DeliveryState {
		t.Helper()
		for _, st := range engine.DeliveryStates {
			page, err := h.Engine.Deliveries(ctx, admin, engine.DeliveryFilter{State: st, Limit: engine.MaxDeliveryPage})
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range page.Deliveries {
				if d.ID == id {
					return st
				}
			}
		}
		t.Fatalf("delivery %s is in no state", id)
		return ""
	}

	// Refusals that store nothing: key, media type, body, an unknown
	// delivery, a caller who is not an admin.
	key := uuid.NewString()
	retry := api.DeliveryRetryPath(failed.ID)
	resp, body := send(t, h, correctionCall(h.Admin, "", retry, "{}"))
	wantProblem(t, resp, body, http.StatusBadRequest, api.CodeMissingIdempotencyKey)
	resp, body = send(t, h, correctionCall(h.Admin, "nope", retry, "{}"))
	wantProblem(t, resp, body, http.StatusBadRequest, engine.CodeInvalidIdempotencyKey)
	resp, body = send(t, h, withHeader(correctionCall(h.Admin, key, retry, "{}"), "Content-Type", "text/plain"))
	wantProblem(t, resp, body, http.StatusUnsupportedMediaType, api.CodeUnsupportedMediaType)
	resp, body = send(t, h, correctionCall(h.Admin, key, retry, `{"x":1}`))
	wantProblem(t, resp, body, http.StatusUnprocessableEntity, engine.CodeRequestContract)
	for _, path := range []string{api.DeliveryRetryPath("no-such"), api.DeliverySkipPath("no-such"), api.DeliveryRetryPath(strings.Repeat("a", 201))} {
		resp, body = send(t, h, correctionCall(h.Admin, key, path, "{}"))
		wantProblem(t, resp, body, http.StatusNotFound, engine.CodeUnknownDelivery)
	}
	resp, body = send(t, h, correctionCall(h.Alice, key, retry, "{}"))
	wantProblem(t, resp, body, http.StatusForbidden, engine.CodeForbidden)
	if n := receiptCount(t, store); n != 2 {
		t.Fatalf("the refusals stored receipts: %d, want the 2 of the reservations", n)
	}

	// The retry, under the key an unknown delivery left unused, and its
	// byte-identical replay.
	resp, body = send(t, h, correctionCall(h.Admin, key, retry, "{}"))
	wantAnswer(t, "retry", resp, body, http.StatusOK, answer(engine.StatusRequeued, failed.ID), false)
	if st := stateOf(failed.ID); st != engine.DeliveryPending {
		t.Errorf("the retried delivery is %s, want pending", st)
	}
	resp, body = send(t, h, correctionCall(h.Admin, `"`+key+`"`, retry, " { } "))
	wantAnswer(t, "retry replayed", resp, body, http.StatusOK, answer(engine.StatusRequeued, failed.ID), true)
	resp, body = send(t, h, correctionCall(h.Admin, key, api.DeliverySkipPath(failed.ID), "{}"))
	wantProblem(t, resp, body, http.StatusConflict, engine.CodeOperationConflict)
	resp, body = send(t, h, correctionCall(h.Admin, key, api.DeliveryRetryPath(pending.ID), "{}"))
	wantProblem(t, resp, body, http.StatusConflict, engine.CodeOperationConflict)

	// Skipped, then already skipped; a delivered one stays delivered.
	skip := api.DeliverySkipPath(pending.ID)
	skipKey := uuid.NewString()
	resp, body = send(t, h, correctionCall(viaSocket, skipKey, skip, "{}"))
	wantAnswer(t, "skip", resp, body, http.StatusOK, answer(engine.StatusSkipped, pending.ID), false)
	resp, body = send(t, h, correctionCall(viaSocket, skipKey, skip, "{}"))
	wantAnswer(t, "skip replayed", resp, body, http.StatusOK, answer(engine.StatusSkipped, pending.ID), true)
	resp, body = send(t, h, correctionCall(h.Admin, uuid.NewString(), skip, "{}"))
	wantAnswer(t, "skip again", resp, body, http.StatusConflict, answer(engine.StatusAlreadySkipped, pending.ID), false)
	if st := stateOf(pending.ID); st != engine.DeliverySkipped {
		t.Errorf("the skipped delivery is %s", st)
	}
	jobs, err := h.Engine.ClaimDueDeliveries(ctx, 10, time.Minute)
	if err != nil || len(jobs) != 1 || jobs[0].Delivery.ID != failed.ID {
		t.Fatalf("claim after the retry = %+v, %v", jobs, err)
	}
	if err := h.Engine.FinishDelivery(ctx, jobs[0].Delivery, engine.Attempt{State: engine.DeliveryDelivered, Status: 204}); err != nil {
		t.Fatal(err)
	}
	resp, body = send(t, h, correctionCall(h.Admin, uuid.NewString(), api.DeliverySkipPath(failed.ID), "{}"))
	wantAnswer(t, "skip of a delivered one", resp, body, http.StatusConflict, answer(engine.StatusAlreadyDelivered, failed.ID), false)

	// The operations view lists the corrections with their delivery.
	resp, body = send(t, h, call{via: h.Admin, method: http.MethodGet, path: api.PathAdminOps + "?outcome=requeued"})
	var ops api.OperationPage
	if err := json.Unmarshal(body, &ops); err != nil || resp.StatusCode != http.StatusOK || len(ops.Operations) != 1 {
		t.Fatalf("operations = %d %s", resp.StatusCode, body)
	}
	if op := ops.Operations[0]; op.Kind != engine.OperationRetryDelivery || op.DeliveryID != failed.ID || op.HTTPStatus != http.StatusOK ||
		string(op.Operation) != key || op.Actor != "root-admin" {
		t.Errorf("the retry in the operations view = %+v", op)
	}
	_, body = send(t, h, call{via: h.Admin, method: http.MethodGet, path: api.PathAdminOps + "?outcome=already_skipped"})
	if err := json.Unmarshal(body, &ops); err != nil || len(ops.Operations) != 1 || ops.Operations[0].HTTPStatus != http.StatusConflict ||
		ops.Operations[0].Kind != engine.OperationSkipDelivery {
		t.Errorf("already_skipped in the operations view: %s", body)
	}
}
