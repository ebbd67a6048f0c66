package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// TestStatusTable pins the HTTP status of every error code. Clients rely on
// the pair: a 503 store_unavailable and a 500 internal leave a request
// undecided, every 4xx but 408 and 429 is a decided refusal.
func TestStatusTable(t *testing.T) {
	want := map[string]int{
		api.CodeMissingIdempotencyKey:    400,
		engine.CodeInvalidIdempotencyKey: 400,
		api.CodeUnsupportedMediaType:     415,
		api.CodeBodyTooLarge:             413,
		api.CodeBodyIncomplete:           408,
		api.CodeBadFraming:               400,
		engine.CodeRequestContract:       422,
		engine.CodeOperationConflict:     409,
		engine.CodeOperationExpired:      410,
		engine.CodeBatchRefused:          409,
		engine.CodeUnknownWorkshop:       404,
		engine.CodeUnknownOperation:      404,
		engine.CodeUnknownReservation:    404,
		engine.CodeUnknownHold:           404,
		engine.CodeUnknownToken:          404,
		engine.CodeVersionMismatch:       412,
		engine.CodeCapacityBelowReserved: 409,
		engine.CodeWorkshopInUse:         409,
		engine.CodeUnknownWebhook:        404,
		engine.CodeWebhookExists:         409,
		engine.CodeUnknownDelivery:       404,
		engine.CodeUnknownEntry:          404,
		engine.CodeUnauthenticated:       401,
		engine.CodeForbidden:             403,
		api.CodeNotFound:                 404,
		api.CodeMethodNotAllowed:         405,
		api.CodeNotImplemented:           501,
		engine.CodeInsufficientStorage:   507,
		engine.CodeStoreUnavailable:      503,
		engine.CodeIdentityUnavailable:   503,
		api.CodeTooManyConnections:       503,
		api.CodeTooManyRequests:          429,
		api.CodeRateLimited:              429,
		engine.CodeInternal:              500,
	}
	if len(want) != len(api.Codes) {
		t.Errorf("the test pins %d codes, api.Codes has %d", len(want), len(api.Codes))
	}
	// Every code the table answers is a documented code.
	for code := range statusByCode {
		if !slices.Contains(api.Codes, code) {
			t.Errorf("%s has a status but is not in api.Codes", code)
		}
	}
	for _, code := range api.Codes {
		if got := StatusOf(code); got != want[code] {
			t.Errorf("StatusOf(%s) = %d, want %d", code, got, want[code])
		}
		// An undecided code must never look like a decided refusal.
		if s := StatusOf(code); api.Undecided(code) && s >= 400 && s < 500 && s != http.StatusRequestTimeout && s != http.StatusTooManyRequests {
			t.Errorf("%s is undecided but answers %d, a refusal", code, s)
		}
	}
}

// failingStore is an engine.Store whose every transaction fails with err.
type failingStore struct{ err error }

func (f failingStore) Update(context.Context, func(engine.Tx) error) error { return f.err }
func (f failingStore) View(context.Context, func(engine.Tx) error) error   { return f.err }
func (f failingStore) Close() error                                        { return nil }

// TestStoreUnavailableAnswers checks that a store that cannot serve is
// answered 503 store_unavailable with Retry-After, on the idempotent
// operation, on reads and while authenticating a bearer token (never a
// 401, which would be a refusal); that the cause reaches the log but not
// the client; and that any other store failure stays 500 internal without
// Retry-After.
func TestStoreUnavailableAnswers(t *testing.T) {
	cause := fmt.Errorf("pgstore: begin: dial unix /run/pg/.s.PGSQL.5432: %w", syscall.ECONNREFUSED)
	key := "6f1d2a3b-4c5d-4e6f-8a7b-9c0d1e2f3a4b"
	type request struct {
		name, method, path, body string
		socket                   bool
	}
	requests := []request{
		{"reserve", http.MethodPost, api.PathReservations, `{"workshop":"go-basics","quantity":1}`, true},
		{"cancel", http.MethodPost, api.CancelPath(strings.Repeat("ab", 16)), "", true},
		{"workshops", http.MethodGet, api.PathWorkshops, "", true},
		{"operation", http.MethodGet, api.OperationPath(engine.OperationKey(key)), "", true},
		{"bearer token", http.MethodGet, api.PathWhoAmI, "", false},
	}
	for _, tc := range []struct {
		storeErr   error
		status     int
		code       string
		retryAfter string
	}{
		{engine.StoreUnavailable(cause), http.StatusServiceUnavailable, engine.CodeStoreUnavailable, "1"},
		{errors.New("pgstore: scan receipts: column fingerprint does not exist"), http.StatusInternalServerError, engine.CodeInternal, ""},
	} {
		var logs bytes.Buffer
		s := New(Config{Engine: engine.New(failingStore{tc.storeErr}), Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
		h := s.instrument(s.mux)
		for _, rq := range requests {
			logs.Reset()
			var body *strings.Reader
			if rq.body != "" {
				body = strings.NewReader(rq.body)
			}
			var r *http.Request
			if body != nil {
				r = httptest.NewRequest(rq.method, rq.path, body)
				r.Header.Set("Content-Type", api.MediaJSON)
			} else {
				r = httptest.NewRequest(rq.method, rq.path, nil)
			}
			r.Header.Set(api.HeaderIdempotencyKey, key)
			conn := &connInfo{socket: true, actor: "alice"}
			if !rq.socket {
				conn = &connInfo{}
				r.Header.Set("Authorization", "Bearer "+engine.TokenPrefix+"not-in-any-cache")
			}
			r = r.WithContext(context.WithValue(r.Context(), connKey{}, conn))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)

			var p api.Problem
			if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
				t.Fatalf("%s: body %q: %v", rq.name, rec.Body, err)
			}
			if rec.Code != tc.status || p.Code != tc.code || p.Status != tc.status || rec.Header().Get("Content-Type") != api.MediaProblem {
				t.Errorf("%s with store error %q: %d %q %+v, want %d %s", rq.name, tc.storeErr, rec.Code, rec.Header().Get("Content-Type"), p, tc.status, tc.code)
			}
			if got := rec.Header().Get("Retry-After"); got != tc.retryAfter {
				t.Errorf("%s with store error %q: Retry-After %q, want %q", rq.name, tc.storeErr, got, tc.retryAfter)
			}
			if strings.Contains(p.Detail, "PGSQL") || strings.Contains(p.Detail, "fingerprint") {
				t.Errorf("%s: the detail %q shows the store's error to the client", rq.name, p.Detail)
			}
			if !strings.Contains(logs.String(), tc.storeErr.Error()) || !strings.Contains(logs.String(), `"level":"ERROR"`) {
				t.Errorf("%s: the request log lacks the cause %q at level ERROR:\n%s", rq.name, tc.storeErr, logs.String())
			}
		}
	}
}
