package chaos

import (
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
)

// sink is the outbox's receiver: it records every event delivered to it by
// id (the Idempotency-Key the dispatcher sends), and refuses a share of
// the deliveries with a 503 so that the dispatcher's retries run too.
type sink struct {
	mu       sync.Mutex
	received map[string]int
	payloads map[string][]byte
	rng      *rand.Rand
	srv      *http.Server
	url      string
}

func newSink(seed uint64) (*sink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &sink{received: map[string]int{}, payloads: map[string][]byte{}, rng: rand.New(rand.NewPCG(seed, 0x5117))}
	s.srv = &http.Server{Handler: s}
	s.url = "http://" + ln.Addr().String() + "/events"
	go s.srv.Serve(ln)
	return s, nil
}

func (s *sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rng.IntN(8) == 0 {
		http.Error(w, "try again", http.StatusServiceUnavailable)
		return
	}
	id := r.Header.Get("Idempotency-Key")
	if s.received[id] == 0 {
		s.payloads[id] = body
	}
	s.received[id]++
}

// snapshot returns what the sink has received so far.
func (s *sink) snapshot() (map[string]int, map[string][]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.received), maps.Clone(s.payloads)
}

func (s *sink) close() { s.srv.Close() }
