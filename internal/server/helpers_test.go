package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/server/servertest"
)

// viaSocket and viaNoToken select the transport of a call; any other via is
// a bearer token sent over TCP.
const (
	viaSocket  = "socket"
	viaNoToken = "tcp-without-token"
)

// call is one raw request.
type call struct {
	via          string
	method, path string
	header       http.Header
	body         string
	// partlyRefused marks a request that breaks docs/openapi.yaml in parts
	// the daemon refuses inside a success (see servertest.PartlyRefused).
	partlyRefused bool
}

// send makes the call and returns the answer and its body.
func send(t *testing.T, h *servertest.Harness, c call) (*http.Response, []byte) {
	t.Helper()
	cl := h.SocketClient()
	switch c.via {
	case viaSocket:
	case viaNoToken:
		cl = h.TCPClient("")
	default:
		cl = h.TCPClient(c.via)
	}
	var body []byte
	if c.body != "" || c.method == http.MethodPost || c.method == http.MethodPut {
		body = []byte(c.body)
	}
	ctx := context.Background()
	if c.partlyRefused {
		ctx = servertest.PartlyRefused(ctx)
	}
	resp, data, err := cl.Do(ctx, c.method, c.path, c.header, body)
	if err != nil {
		t.Fatalf("%s %s: %v", c.method, c.path, err)
	}
	return resp, data
}

// wantProblem checks that an answer is a problem detail with status and code.
func wantProblem(t *testing.T, resp *http.Response, body []byte, status int, code string) {
	t.Helper()
	if resp.StatusCode != status {
		t.Errorf("status = %d, want %d; body %s", resp.StatusCode, status, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != api.MediaProblem {
		t.Errorf("Content-Type = %q, want %q", ct, api.MediaProblem)
	}
	var p api.Problem
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("problem body %q: %v", body, err)
	}
	if p.Code != code || p.Status != status || p.Type != "about:blank" || p.Title != http.StatusText(status) || p.Detail == "" {
		t.Errorf("problem = %+v, want status %d code %s with a title and a detail", p, status, code)
	}
}

// reservationCall is a reservation request with a key and a body.
func reservationCall(via, key, body string) call {
	return call{via: via, method: http.MethodPost, path: api.PathReservations,
		header: http.Header{api.HeaderIdempotencyKey: {key}, "Content-Type": {api.MediaJSON}}, body: body}
}
