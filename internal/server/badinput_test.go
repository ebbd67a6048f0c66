package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server/servertest"
)

// TestBadInput sends reservation requests that break the contract, each in
// one documented way, and checks the status and code of every answer and
// that none of them stored anything.
func TestBadInput(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	const good = `{"workshop":"workshop-demo","quantity":1}`
	key := "f47ac10b-58cc-4372-a567-0e02b2c3d479"
	big := `{"workshop":"workshop-demo","quantity":1,"pad":"` + strings.Repeat("x", 5<<10) + `"}`
	json415 := func(ct string) http.Header {
		return http.Header{api.HeaderIdempotencyKey: {uuid.NewString()}, "Content-Type": {ct}}
	}
	tests := []struct {
		name   string
		header http.Header // Replaces the default key and Content-Type when set.
		body   string
		status int
		code   string
	}{
		// 1. The operation key.
		{"missing key", http.Header{"Content-Type": {api.MediaJSON}}, good, 400, api.CodeMissingIdempotencyKey},
		{"empty key", http.Header{api.HeaderIdempotencyKey: {""}, "Content-Type": {api.MediaJSON}}, good, 400, api.CodeMissingIdempotencyKey},
		{"key not a uuid", keyHeader("abc"), good, 400, engine.CodeInvalidIdempotencyKey},
		{"uppercase key", keyHeader(strings.ToUpper(key)), good, 400, engine.CodeInvalidIdempotencyKey},
		{"v1 uuid", keyHeader("f47ac10b-58cc-1372-a567-0e02b2c3d479"), good, 400, engine.CodeInvalidIdempotencyKey},
		{"v6 uuid", keyHeader("01890a5d-ac96-674b-bcce-b302099a8057"), good, 400, engine.CodeInvalidIdempotencyKey},
		{"uppercase v7 uuid", keyHeader("01890A5D-AC96-774B-BCCE-B302099A8057"), good, 400, engine.CodeInvalidIdempotencyKey},
		{"wrong variant", keyHeader("f47ac10b-58cc-4372-c567-0e02b2c3d479"), good, 400, engine.CodeInvalidIdempotencyKey},
		{"no hyphens", keyHeader("f47ac10b58cc4372a5670e02b2c3d479"), good, 400, engine.CodeInvalidIdempotencyKey},
		{"braces", keyHeader("{" + key + "}"), good, 400, engine.CodeInvalidIdempotencyKey},
		{"urn prefix", keyHeader("urn:uuid:" + key), good, 400, engine.CodeInvalidIdempotencyKey},
		{"single quotes", keyHeader("'" + key + "'"), good, 400, engine.CodeInvalidIdempotencyKey},
		{"half quoted", keyHeader(`"` + key), good, 400, engine.CodeInvalidIdempotencyKey},
		{"too long", keyHeader(key + "0"), good, 400, engine.CodeInvalidIdempotencyKey},
		{"nil uuid", keyHeader("00000000-0000-0000-0000-000000000000"), good, 400, engine.CodeInvalidIdempotencyKey},
		{"two keys", http.Header{api.HeaderIdempotencyKey: {key, uuid.NewString()}, "Content-Type": {api.MediaJSON}}, good, 400, engine.CodeInvalidIdempotencyKey},
		// 2. Media type and size.
		{"no content type", json415(""), good, 415, api.CodeUnsupportedMediaType},
		{"text/plain", json415("text/plain"), good, 415, api.CodeUnsupportedMediaType},
		{"form", json415("application/x-www-form-urlencoded"), good, 415, api.CodeUnsupportedMediaType},
		{"json-ish", json415("application/jsonx"), good, 415, api.CodeUnsupportedMediaType},
		{"problem+json", json415(api.MediaProblem), good, 415, api.CodeUnsupportedMediaType},
		{"latin1 charset", json415("application/json; charset=latin1"), good, 415, api.CodeUnsupportedMediaType},
		{"5 KiB body", nil, big, 413, api.CodeBodyTooLarge},
		// 3. The body.
		{"empty body", nil, "", 422, engine.CodeRequestContract},
		{"malformed JSON", nil, `{"workshop":"workshop-demo",`, 422, engine.CodeRequestContract},
		{"not JSON", nil, `workshop=workshop-demo&quantity=1`, 422, engine.CodeRequestContract},
		{"trailing object", nil, good + `{}`, 422, engine.CodeRequestContract},
		{"trailing garbage", nil, good + `x`, 422, engine.CodeRequestContract},
		{"array body", nil, `[` + good + `]`, 422, engine.CodeRequestContract},
		{"string body", nil, `"workshop-demo"`, 422, engine.CodeRequestContract},
		{"null body", nil, `null`, 422, engine.CodeRequestContract},
		{"empty object", nil, `{}`, 422, engine.CodeRequestContract},
		{"quantity string", nil, `{"workshop":"workshop-demo","quantity":"1"}`, 422, engine.CodeRequestContract},
		{"quantity true", nil, `{"workshop":"workshop-demo","quantity":true}`, 422, engine.CodeRequestContract},
		{"quantity 1.5", nil, `{"workshop":"workshop-demo","quantity":1.5}`, 422, engine.CodeRequestContract},
		{"quantity 1.0", nil, `{"workshop":"workshop-demo","quantity":1.0}`, 422, engine.CodeRequestContract},
		{"quantity 1e0", nil, `{"workshop":"workshop-demo","quantity":1e0}`, 422, engine.CodeRequestContract},
		{"quantity 0", nil, `{"workshop":"workshop-demo","quantity":0}`, 422, engine.CodeRequestContract},
		{"quantity -1", nil, `{"workshop":"workshop-demo","quantity":-1}`, 422, engine.CodeRequestContract},
		{"quantity null", nil, `{"workshop":"workshop-demo","quantity":null}`, 422, engine.CodeRequestContract},
		{"quantity object", nil, `{"workshop":"workshop-demo","quantity":{}}`, 422, engine.CodeRequestContract},
		{"quantity huge", nil, `{"workshop":"workshop-demo","quantity":100000000000000000000}`, 422, engine.CodeRequestContract},
		{"quantity 3 above max 2", nil, `{"workshop":"workshop-demo","quantity":3}`, 422, engine.CodeRequestContract},
		{"missing quantity", nil, `{"workshop":"workshop-demo"}`, 422, engine.CodeRequestContract},
		{"missing workshop", nil, `{"quantity":1}`, 422, engine.CodeRequestContract},
		{"extra member", nil, `{"workshop":"workshop-demo","quantity":1,"actor":"bob"}`, 422, engine.CodeRequestContract},
		{"duplicate member", nil, `{"workshop":"workshop-demo","quantity":1,"quantity":1}`, 422, engine.CodeRequestContract},
		{"member case", nil, `{"Workshop":"workshop-demo","quantity":1}`, 422, engine.CodeRequestContract},
		{"workshop uppercase", nil, `{"workshop":"Workshop-Demo","quantity":1}`, 422, engine.CodeRequestContract},
		{"workshop one letter", nil, `{"workshop":"w","quantity":1}`, 422, engine.CodeRequestContract},
		{"workshop number", nil, `{"workshop":5,"quantity":1}`, 422, engine.CodeRequestContract},
		{"workshop with slash", nil, `{"workshop":"workshop/demo","quantity":1}`, 422, engine.CodeRequestContract},
		// 4. Refused by the decision without storing anything.
		{"unknown workshop", nil, `{"workshop":"no-such-workshop","quantity":1}`, 404, engine.CodeUnknownWorkshop},
	}
	if len(tests) < 40 {
		t.Fatalf("only %d bad inputs", len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			header := tt.header
			if header == nil {
				header = keyHeader(uuid.NewString())
			}
			for _, via := range []string{h.Alice, viaSocket} {
				resp, body := send(t, h, call{via: via, method: http.MethodPost, path: api.PathReservations, header: header, body: tt.body})
				wantProblem(t, resp, body, tt.status, tt.code)
				if resp.Header.Get(api.HeaderReplayed) != "false" {
					t.Errorf("Idempotent-Replayed = %q, want false", resp.Header.Get(api.HeaderReplayed))
				}
			}
		})
	}
	if reservations, receipts := h.Counts(t); reservations != 0 || receipts != 0 {
		t.Errorf("after bad input: %d reservations, %d receipts; want none", reservations, receipts)
	}
	if w, err := h.Engine.Workshop(context.Background(), servertest.Workshop); err != nil || w.Reserved != 0 {
		t.Errorf("workshop after bad input = %+v %v", w, err)
	}

	// The same key is still free for its first real use, also in the
	// structured-field form.
	resp, body := send(t, h, call{via: h.Alice, method: http.MethodPost, path: api.PathReservations, header: keyHeader(`"` + key + `"`), body: good})
	var a engine.Answer
	if err := json.Unmarshal(body, &a); err != nil || resp.StatusCode != http.StatusCreated || a.Status != engine.StatusReserved {
		t.Errorf("first real use of the key = %d %s", resp.StatusCode, body)
	}
	h.MustCheckClean(t)
}

func keyHeader(key string) http.Header {
	return http.Header{api.HeaderIdempotencyKey: {key}, "Content-Type": {api.MediaJSON}}
}
