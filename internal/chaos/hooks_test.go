package chaos

import (
	"bytes"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/reserve/reserve/internal/engine"
)

// TestHookSinkKeepsRefusedBodies: the sink records the bodies of the
// attempts it refused apart from those it accepted, so that a body sent
// again under the same webhook-id after a refusal is compared with it.
func TestHookSinkKeepsRefusedBodies(t *testing.T) {
	s, err := newHookSink(1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	v, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	s.verifiers["/all"], s.endpoints["/all"] = v, engine.WebhookEndpoint{ID: "e"}
	post := func(body string) int {
		t.Helper()
		now := time.Now()
		sig, err := v.Sign("ev", now, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequest(http.MethodPost, s.base+"/all", bytes.NewReader([]byte(body)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("webhook-id", "ev")
		req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
		req.Header.Set("webhook-signature", sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// The sink refuses one attempt in eight: a body sent until it is
	// accepted once, another until it is refused once.
	accepted, refused := false, false
	for range 500 {
		if accepted = post(`{"n":1}`) == http.StatusNoContent; accepted {
			break
		}
	}
	for range 500 {
		if refused = post(`{"n":2}`) == http.StatusServiceUnavailable; refused {
			break
		}
	}
	if !accepted || !refused {
		t.Fatalf("accepted %v, refused %v after 500 attempts each", accepted, refused)
	}
	hs, bad := s.snapshot()
	if len(bad) != 0 || len(hs) != 1 {
		t.Fatalf("endpoints %+v, bad %v", hs, bad)
	}
	has := func(bodies [][]byte, want string) bool {
		return slices.ContainsFunc(bodies, func(b []byte) bool { return string(b) == want })
	}
	if h := hs[0]; !has(h.Received["ev"], `{"n":1}`) || !has(h.Refused["ev"], `{"n":2}`) {
		t.Errorf("accepted bodies %q, refused %q: want the first accepted, the second refused", h.Received["ev"], h.Refused["ev"])
	}
}
