package server_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server/servertest"
)

// TestLargeBodyIsRefusedUnread announces a 1 MiB body and sends none of it:
// the answer can only come if the server refuses without reading the body.
func TestLargeBodyIsRefusedUnread(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	conn, err := net.Dial("tcp", h.TCPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second)) // Only ends a hang.
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer %s\r\nIdempotency-Key: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
		api.PathReservations, h.Alice, uuid.NewString(), 1<<20)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer before the body was sent: %v", err)
	}
	defer resp.Body.Close()
	var p api.Problem
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge || p.Code != api.CodeBodyTooLarge || !resp.Close {
		t.Errorf("answer = %d %+v %v, close %v", resp.StatusCode, p, err, resp.Close)
	}
}

// TestInternalErrorsDoNotLeak makes the store fail by closing it, as a
// shutdown does under requests that are still running: the client gets a
// generic 503 store_unavailable with Retry-After (retry with the same key),
// the log gets the real error. (TestStoreUnavailableAnswers covers the
// generic 500 of other store failures.)
func TestInternalErrorsDoNotLeak(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	if err := h.Store.Close(); err != nil {
		t.Fatal(err)
	}
	resp, body := send(t, h, call{via: h.Alice, method: http.MethodGet, path: api.PathWorkshops})
	wantProblem(t, resp, body, http.StatusServiceUnavailable, engine.CodeStoreUnavailable)
	if strings.Contains(string(body), "closed") || strings.Contains(string(body), "boltstore") {
		t.Errorf("the answer leaks internals: %s", body)
	}
	resp, body = send(t, h, reservationCall(h.Alice, uuid.NewString(), `{"workshop":"workshop-demo","quantity":1}`))
	wantProblem(t, resp, body, http.StatusServiceUnavailable, engine.CodeStoreUnavailable)
	if got := resp.Header.Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After = %q, want 1", got)
	}
	if r := h.Logs.Find("request", "route", "POST /api/v1/reservations", "outcome", "error", "level", "ERROR"); r == nil || !strings.Contains(r["error"].(string), "closed") {
		t.Errorf("log line of the failed reservation = %v", r)
	}
}

func TestLimits(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	resp, _ := send(t, h, call{via: h.Alice, method: http.MethodGet, path: api.PathWhoAmI, header: http.Header{"X-Big": {strings.Repeat("x", 64<<10)}}})
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("64 KiB header = %d, want 431", resp.StatusCode)
	}
	// A chunked body has no Content-Length, so the limit is found while
	// reading.
	req, err := http.NewRequest(http.MethodPost, h.URL+api.PathReservations, struct{ *strings.Reader }{strings.NewReader(`{"workshop":"` + strings.Repeat("a", 5000) + `","quantity":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+h.Alice)
	req.Header.Set("Content-Type", api.MediaJSON)
	req.Header.Set(api.HeaderIdempotencyKey, uuid.NewString())
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p api.Problem
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge || p.Code != api.CodeBodyTooLarge {
		t.Errorf("chunked 5 KiB body = %d %+v %v", resp.StatusCode, p, err)
	}
}

// TestIncompleteBodyIsNotAnAnswer sends half of an announced body and then
// closes its writing side: the server cannot read the body to its end, so
// it must not decide anything and must answer with a status that clients
// treat as no answer (408 body_incomplete), never as a rejection.
func TestIncompleteBodyIsNotAnAnswer(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	conn, err := net.Dial("tcp", h.TCPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second)) // Only ends a hang.
	body := `{"workshop":"workshop-demo","quantity":1}`
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer %s\r\nIdempotency-Key: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		api.PathReservations, h.Alice, uuid.NewString(), len(body), body[:len(body)/2])
	if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	defer resp.Body.Close()
	var p api.Problem
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || resp.StatusCode != http.StatusRequestTimeout || p.Code != api.CodeBodyIncomplete {
		t.Errorf("answer = %d %+v %v, want 408 %s", resp.StatusCode, p, err, api.CodeBodyIncomplete)
	}
	if res, rec := h.Counts(t); res != 0 || rec != 0 {
		t.Errorf("an incomplete body left %d reservations and %d receipts", res, rec)
	}
}
