package server_test

import (
	"context"
	"encoding/json"
	"mime"
	"net/http"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server/servertest"
)

// FuzzReserveHandler sends POST /api/v1/reservations through a real server
// with random credentials, Idempotency-Key, Content-Type, one more random
// header and a random body. Whatever arrives, the answer is never a 5xx
// (which includes a recovered panic), and a request that breaks the
// contract (no valid credentials, key, media type or body) is refused with
// a 4xx and leaves no reservation and no receipt behind; only a 201 or a
// first 409 "unavailable" may store anything.
func FuzzReserveHandler(f *testing.F) {
	h := servertest.Start(f, servertest.Options{})
	const good = `{"workshop":"workshop-demo","quantity":1}`
	const key = "f47ac10b-58cc-4372-a567-0e02b2c3d479"
	for _, s := range []struct {
		via                  uint8
		key, ct, name, value string
		body                 string
	}{
		{0, key, api.MediaJSON, "Accept", "*/*", good},
		{1, `"` + key + `"`, "application/json; charset=utf-8", "Origin", "http://evil.example", good},
		{2, key, api.MediaJSON, "X-Forwarded-For", "10.0.0.1", good},
		{3, key, api.MediaJSON, "Authorization", "Bearer nope", good},
		{0, "", api.MediaJSON, "", "", good},
		{0, "F47AC10B-58CC-4372-A567-0E02B2C3D479", api.MediaJSON, "", "", good},
		{0, key, "text/plain", "", "", good},
		{0, key, api.MediaJSON, "", "", `{"workshop":"workshop-demo","quantity":1.0}`},
		{0, key, api.MediaJSON, "", "", `{"workshop":"workshop-demo","quantity":3}`},
		{0, key, api.MediaJSON, "", "", `{"workshop":"nope-nope","quantity":1}`},
		{0, key, api.MediaJSON, "", "", `{"workshop":"workshop-demo","quantity":1,"actor":"bob"}`},
		{0, key, api.MediaJSON, "Idempotency-Key", key, good},
		{1, key, api.MediaJSON, "Content-Type", "text/plain", `[]`},
	} {
		f.Add(s.via, s.key, s.ct, s.name, s.value, []byte(s.body))
	}
	tokens := []string{h.Alice, h.Bob, "", "not-a-token"}
	f.Fuzz(func(t *testing.T, via uint8, key, contentType, name, value string, body []byte) {
		c := h.SocketClient()
		authenticated := true
		if i := int(via) % (len(tokens) + 1); i < len(tokens) {
			c = h.TCPClient(tokens[i])
			authenticated = i < 2
		}
		header := http.Header{api.HeaderIdempotencyKey: {key}, "Content-Type": {contentType}}
		if name != "" {
			header[name] = append(header[name], value)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		reservations, receipts := h.Counts(t)
		resp, answer, err := c.Do(ctx, http.MethodPost, api.PathReservations, header, body)
		if err != nil {
			return // The client refused to send it (an invalid header), nothing to check.
		}
		if resp.StatusCode >= 500 {
			t.Fatalf("answer %d %s to key %q, Content-Type %q, %s: %q, body %q", resp.StatusCode, answer, key, contentType, name, value, body)
		}
		if resp.StatusCode < 400 && resp.StatusCode != http.StatusCreated {
			t.Fatalf("answer %d %s: neither an outcome nor a refusal", resp.StatusCode, answer)
		}
		_, keyErr := api.ParseOperationKey(key)
		_, bodyErr := api.DecodeRequest(body)
		mt, _, _ := mime.ParseMediaType(contentType)
		invalid := !authenticated || keyErr != nil || bodyErr != nil || mt != api.MediaJSON || len(body) > api.MaxBodyBytes || len(header.Values(api.HeaderIdempotencyKey)) != 1
		if invalid && resp.StatusCode < 400 {
			t.Fatalf("invalid request (key %q, Content-Type %q, %s: %q, body %q) answered %d %s", key, contentType, name, value, body, resp.StatusCode, answer)
		}
		if storing(resp, answer) {
			return
		}
		if r, rc := h.Counts(t); r != reservations || rc != receipts {
			t.Fatalf("answer %d %s stored something: %d→%d reservations, %d→%d receipts", resp.StatusCode, answer, reservations, r, receipts, rc)
		}
	})
}

// storing reports whether an answer is a first authoritative answer, the
// only kind that stores a receipt (and, for a 201, a reservation).
func storing(resp *http.Response, body []byte) bool {
	if resp.Header.Get(api.HeaderReplayed) != "false" {
		return false
	}
	var a engine.Answer
	if json.Unmarshal(body, &a) != nil {
		return false
	}
	return (resp.StatusCode == http.StatusCreated && a.Status == engine.StatusReserved) ||
		(resp.StatusCode == http.StatusConflict && a.Status == engine.StatusUnavailable)
}
