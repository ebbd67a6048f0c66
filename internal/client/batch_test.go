package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
)

// TestClassifyBatch: only the documented answer to exactly these items is
// decided; in a refused atomic batch only replays are answers and
// batch_refused decides nothing about its item.
func TestClassifyBatch(t *testing.T) {
	const k1, k2 = "f47ac10b-58cc-4372-a567-0e02b2c3d479", "0b7e5d2c-8f0a-4f57-9b1e-2d1c3a4b5c6d"
	items := []client.BatchItem{
		{Key: k1, Request: engine.Request{Workshop: "go", Quantity: 2}},
		{Key: k2, Request: engine.Request{Workshop: "go", Quantity: 1}},
	}
	reserved := `{"status":"reserved","reservation_id":"0192f0a1b2c3d4e5f60718293a4b5c6d","workshop":"go","quantity":2}`
	unavailable := `{"status":"unavailable","workshop":"go","quantity":1}`
	refusedProblem := `{"type":"about:blank","title":"Conflict","status":409,"code":"batch_refused","detail":"not reserved"}`
	result := func(key string, status int, replayed bool, body string) string {
		return `{"key":"` + key + `","status":` + strconv.Itoa(status) + `,"replayed":` + strconv.FormatBool(replayed) + `,"body":` + body + `}`
	}
	answer := func(status string, results ...string) []byte {
		head := `{`
		if status != "" {
			head += `"status":"` + status + `",`
		}
		return []byte(head + `"results":[` + strings.Join(results, ",") + `]}`)
	}
	for _, tc := range []struct {
		name          string
		status        int
		ctype         string
		body          []byte
		decided, refd bool
		items         []bool // Each item's Decided, for a decided reply with items.
	}{
		{"answered", 200, api.MediaJSON, answer("", result(k1, 201, false, reserved), result(k2, 409, true, unavailable)), true, false, []bool{true, true}},
		{"refused", 409, api.MediaJSON, answer("batch_refused", result(k1, 201, true, reserved), result(k2, 409, false, refusedProblem)), true, true, []bool{true, false}},
		{"refused with a fresh answer", 409, api.MediaJSON, answer("batch_refused", result(k1, 201, false, reserved), result(k2, 409, false, refusedProblem)), false, false, nil},
		{"refused with a fresh unavailable", 409, api.MediaJSON, answer("batch_refused", result(k1, 409, false, refusedProblem), result(k2, 409, false, unavailable)), false, false, nil},
		{"200 saying refused", 200, api.MediaJSON, answer("batch_refused", result(k1, 201, true, reserved), result(k2, 409, false, refusedProblem)), false, false, nil},
		{"keys swapped", 200, api.MediaJSON, answer("", result(k2, 201, false, reserved), result(k1, 409, true, unavailable)), false, false, nil},
		{"one result missing", 200, api.MediaJSON, answer("", result(k1, 201, false, reserved)), false, false, nil},
		{"data after it", 200, api.MediaJSON, append(answer("", result(k1, 201, false, reserved), result(k2, 409, true, unavailable)), ']'), false, false, nil},
		{"another request's answer", 200, api.MediaJSON, answer("", result(k1, 201, false, strings.Replace(reserved, `"quantity":2`, `"quantity":3`, 1)), result(k2, 409, true, unavailable)), false, false, nil},
		{"unknown member", 200, api.MediaJSON, []byte(`{"results":[],"more":1}`), false, false, nil},
		{"whole problem", 422, api.MediaProblem, []byte(`{"type":"about:blank","title":"x","status":422,"code":"request_contract"}`), true, false, nil},
		{"store unavailable", 503, api.MediaProblem, []byte(`{"type":"about:blank","title":"x","status":503,"code":"store_unavailable"}`), false, false, nil},
		{"garbled", 200, api.MediaJSON, []byte(`{"results":[{"key":"`), false, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := client.ClassifyBatch(items, client.Reply{Status: tc.status, ContentType: tc.ctype, Body: tc.body})
			if r.Decided != tc.decided || r.Refused != tc.refd {
				t.Fatalf("decided %t refused %t (%+v), want %t %t", r.Decided, r.Refused, r, tc.decided, tc.refd)
			}
			if tc.items == nil {
				if r.Items != nil {
					t.Errorf("items %+v without a decided answer", r.Items)
				}
				return
			}
			for i, want := range tc.items {
				if r.Items[i].Decided != want {
					t.Errorf("item %d decided %t, want %t", i+1, r.Items[i].Decided, want)
				}
			}
		})
	}
}

// TestReplyRetryAfter: an answer's Retry-After in seconds reaches the
// reply, bounded; an HTTP date or garbage reads as none.
func TestReplyRetryAfter(t *testing.T) {
	for header, want := range map[string]time.Duration{
		"7": 7 * time.Second, " 2 ": 2 * time.Second, "3600": client.MaxRetryAfter,
		"": 0, "-1": 0, "soon": 0, "Wed, 21 Oct 2026 07:28:00 GMT": 0,
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if header != "" {
				w.Header().Set("Retry-After", header)
			}
			w.Header().Set("Content-Type", api.MediaProblem)
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"type":"about:blank","title":"x","status":503,"code":"store_unavailable"}`))
		}))
		c := &client.Client{BaseURL: srv.URL, Token: "rsv_x"}
		reply, err := c.ReserveBatch(context.Background(), []client.BatchItem{{Key: "f47ac10b-58cc-4372-a567-0e02b2c3d479", Request: engine.Request{Workshop: "go", Quantity: 1}}}, false)
		srv.Close()
		if err != nil || reply.RetryAfter != want || reply.Decided {
			t.Errorf("Retry-After %q: reply %+v, %v; want RetryAfter %v, undecided", header, reply, err, want)
		}
	}
}
