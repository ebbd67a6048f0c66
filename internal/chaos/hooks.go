package chaos

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
)

// hookSink is the webhook endpoints of a run, two paths of one server that
// the run adds as endpoints of the daemons: /all gets every event type,
// /reservations only the reservations' own. It verifies the signature of
// every delivery with the Standard Webhooks reference library, refuses a share of them
// with a 503 so that the dispatchers' retries run, and records the bodies
// each webhook-id arrived with on each path, those it accepted and those
// it refused apart.
type hookSink struct {
	mu        sync.Mutex
	verifiers map[string]*standardwebhooks.Webhook
	endpoints map[string]engine.WebhookEndpoint
	bodies    map[string]map[string]map[[32]byte][]byte // path → webhook-id → body hash → body
	refused   map[string]map[string]map[[32]byte][]byte // The same, of the attempts refused with a 503.
	bad       []string
	rng       *rand.Rand
	srv       *http.Server
	base      string
}

// hookPaths are the paths of the sink's endpoints and the event types
// each subscribes to (none: every type).
var hookPaths = map[string][]string{
	"/all":          nil,
	"/reservations": {engine.WebhookReservationCreated, engine.WebhookReservationCancelled},
}

func newHookSink(seed uint64) (*hookSink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &hookSink{verifiers: map[string]*standardwebhooks.Webhook{}, endpoints: map[string]engine.WebhookEndpoint{},
		bodies: map[string]map[string]map[[32]byte][]byte{}, refused: map[string]map[string]map[[32]byte][]byte{},
		rng: rand.New(rand.NewPCG(seed, 0x400c))}
	s.srv = &http.Server{Handler: s}
	s.base = "http://" + ln.Addr().String()
	go s.srv.Serve(ln)
	return s, nil
}

// subscribe adds the sink's endpoints to the daemons through admin, and
// keeps their secrets to verify with.
func (s *hookSink) subscribe(ctx context.Context, admin *client.Client) error {
	for _, path := range slices.Sorted(maps.Keys(hookPaths)) {
		var w engine.WebhookEndpoint
		err := untilAnswered(func() (err error) {
			w, err = admin.AddWebhook(ctx, api.WebhookRequest{URL: s.base + path, EventTypes: hookPaths[path]})
			return err
		})
		if err != nil {
			return fmt.Errorf("add the webhook endpoint %s: %w", path, err)
		}
		v, err := standardwebhooks.NewWebhook(w.Secret)
		if err != nil {
			return fmt.Errorf("the secret of endpoint %s: %w", w.ID, err)
		}
		s.mu.Lock()
		s.verifiers[path], s.endpoints[path] = v, w
		s.mu.Unlock()
	}
	return nil
}

func (s *hookSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.verifiers[r.URL.Path]
	if v == nil {
		s.bad = append(s.bad, fmt.Sprintf("a delivery to %s, which is no endpoint", r.URL.Path))
		http.Error(w, "no such endpoint", http.StatusNotFound)
		return
	}
	// The timestamp is checked against nothing: the run moves the
	// daemons' clock (its clock jumps), so their webhook-timestamp is
	// as far off this process's clock as the run moved it, which a
	// receiver's tolerance of a few minutes would refuse. The signature,
	// over the timestamp too, is checked as every receiver checks it.
	if err := v.VerifyIgnoringTimestamp(body, r.Header); err != nil {
		s.bad = append(s.bad, fmt.Sprintf("a delivery to %s that does not verify: %v", r.URL.Path, err))
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	id := r.Header.Get("webhook-id")
	if s.rng.IntN(8) == 0 {
		record(s.refused, r.URL.Path, id, body)
		http.Error(w, "try again", http.StatusServiceUnavailable)
		return
	}
	record(s.bodies, r.URL.Path, id, body)
	w.WriteHeader(http.StatusNoContent)
}

// record adds body to the bodies webhook-id id arrived with at path.
func record(bodies map[string]map[string]map[[32]byte][]byte, path, id string, body []byte) {
	if bodies[path] == nil {
		bodies[path] = map[string]map[[32]byte][]byte{}
	}
	if bodies[path][id] == nil {
		bodies[path][id] = map[[32]byte][]byte{}
	}
	bodies[path][id][sha256.Sum256(body)] = body
}

// listed returns the bodies of each webhook-id at path.
func listed(bodies map[string]map[string]map[[32]byte][]byte, path string) map[string][][]byte {
	byID := map[string][][]byte{}
	for id, bs := range bodies[path] {
		for _, b := range bs {
			byID[id] = append(byID[id], b)
		}
	}
	return byID
}

// HookEndpoint is what the checks read of one of the sink's endpoints:
// the endpoint as the daemons added it, and the different bodies each
// webhook-id arrived with: in the deliveries the sink accepted, and in
// the attempts it refused.
type HookEndpoint struct {
	Endpoint engine.WebhookEndpoint
	Received map[string][][]byte
	Refused  map[string][][]byte
}

// snapshot returns the endpoints, what they received and the requests
// that did not verify.
func (s *hookSink) snapshot() ([]HookEndpoint, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var hs []HookEndpoint
	for _, path := range slices.Sorted(maps.Keys(s.endpoints)) {
		hs = append(hs, HookEndpoint{Endpoint: s.endpoints[path], Received: listed(s.bodies, path), Refused: listed(s.refused, path)})
	}
	return hs, slices.Clone(s.bad)
}

// received counts the deliveries the sink has accepted.
func (s *hookSink) received() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ids := range s.bodies {
		n += len(ids)
	}
	return n
}

func (s *hookSink) close() { s.srv.Close() }

// drainHooks waits until the daemons have no delivery pending and the
// sink's count has stood still for a while, or two minutes have passed
// (the check then names what is missing). A delivery that a killed daemon
// had claimed is sent again once its claim runs out.
func (r *run) drainHooks(ctx context.Context, admin *client.Client) {
	deadline := time.Now().Add(2 * time.Minute)
	last, still := -1, 0
	for time.Now().Before(deadline) {
		page, err := admin.Deliveries(ctx, engine.DeliveryFilter{State: engine.DeliveryPending, Limit: 1})
		n := r.hooks.received()
		if err == nil && len(page.Deliveries) == 0 && n == last {
			if still++; still >= 3 {
				return
			}
		} else {
			still = 0
		}
		last = n
		time.Sleep(200 * time.Millisecond)
	}
}

// checkWebhooks checks that every committed event reached every endpoint
// that subscribed to its type before it was written, at least once and
// always with one body, which names the event, in the attempts the
// endpoint refused too; that no endpoint was sent an event the store does
// not have, or one of a type it did not subscribe to; and that every
// delivery verified.
func checkWebhooks(final Final) []Violation {
	var vs []Violation
	add := func(format string, args ...any) {
		vs = append(vs, Violation{CheckWebhooks, fmt.Sprintf(format, args...)})
	}
	for _, b := range final.HookBad {
		add("%s", b)
	}
	events := map[string]engine.Event{}
	for _, ev := range final.Events {
		events[ev.ID] = ev
	}
	for _, h := range final.Hooks {
		w := h.Endpoint
		for _, ev := range final.Events {
			if !w.Wants(ev.Type) || ev.CreatedAt.Before(w.CreatedAt) {
				continue
			}
			if len(h.Received[ev.ID]) == 0 {
				add("event %s (%s) never reached endpoint %s (%s)", ev.ID, ev.Type, w.ID, w.URL)
			}
		}
		sent := map[string][][]byte{} // Accepted or refused: the different bodies.
		for _, byID := range []map[string][][]byte{h.Received, h.Refused} {
			for id, bodies := range byID {
				for _, b := range bodies {
					if !slices.ContainsFunc(sent[id], func(o []byte) bool { return bytes.Equal(o, b) }) {
						sent[id] = append(sent[id], b)
					}
				}
			}
		}
		for _, id := range slices.Sorted(maps.Keys(sent)) {
			bodies := sent[id]
			ev, ok := events[id]
			if !ok {
				add("endpoint %s was sent webhook-id %s, which the store does not have", w.ID, id)
				continue
			}
			if !w.Wants(ev.Type) {
				add("endpoint %s, subscribed to %v, was sent event %s of type %s", w.ID, w.EventTypes, id, engine.WebhookType(ev.Type))
			}
			if len(bodies) > 1 {
				add("endpoint %s was sent webhook-id %s with %d different bodies (accepted %d, refused %d)", w.ID, id, len(bodies), len(h.Received[id]), len(h.Refused[id]))
			}
			var body struct {
				Type string `json:"type"`
				Data struct {
					Workshop string `json:"workshop"`
					Quantity int    `json:"quantity"`
				} `json:"data"`
			}
			if err := json.Unmarshal(bodies[0], &body); err != nil || body.Type != engine.WebhookType(ev.Type) ||
				(ev.Workshop != "" && (body.Data.Workshop != ev.Workshop || body.Data.Quantity != ev.Quantity)) {
				add("endpoint %s received event %s (%s %s×%d) as %s", w.ID, id, ev.Type, ev.Workshop, ev.Quantity, bodies[0])
			}
		}
	}
	return vs
}
