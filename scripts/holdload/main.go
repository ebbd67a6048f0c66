// Command holdload is the load of docs/bench-holds.sh: CLIENTS clients
// send hold requests with a short time to live, back to back, to one
// workshop with room for all of them, while a probe reserves one place of
// another workshop every PROBE and times it. Once the first holds pass
// their deadline, every later decision on the workshop finds holds past
// their deadline that no cleanup may have reached yet. It prints one JSON
// line: holds per second and the probe's latencies, before and after the
// first deadline. It talks to a running reserved over TCP with an admin
// token (it creates both workshops) and stops by itself after -duration.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "holdload:", err)
		os.Exit(1)
	}
}

// window is what one part of the run measured.
type window struct {
	Holds        int64   `json:"holds"`
	HoldsPerSec  float64 `json:"holds_per_second"`
	Undecided    int64   `json:"undecided"`
	Probes       int     `json:"probes"`
	ProbeP50ms   float64 `json:"probe_p50_ms"`
	ProbeP90ms   float64 `json:"probe_p90_ms"`
	ProbeMaxms   float64 `json:"probe_max_ms"`
	ProbeFailed  int     `json:"probe_failed"`
	seconds      float64
	probeLatency []float64
}

func run() error {
	url := flag.String("url", "http://127.0.0.1:18182", "the daemon's base URL")
	token := flag.String("token", "", "an admin token")
	clients := flag.Int("clients", 8, "clients sending hold requests")
	ttl := flag.Int("ttl", engine.MinHoldTTLSeconds, "time to live of each hold, in seconds")
	duration := flag.Duration("duration", 90*time.Second, "how long to run")
	probeEvery := flag.Duration("probe", 100*time.Millisecond, "time between two probe reservations")
	flag.Parse()
	if *token == "" {
		return fmt.Errorf("-token is required")
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = *clients + 2
	c := &client.Client{BaseURL: *url, Token: *token, HTTPClient: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
	ctx := context.Background()
	hidden := true
	for _, w := range []string{"holdload-sale", "holdload-other"} {
		if _, _, err := c.PutWorkshop(ctx, w, engine.WorkshopSpec{Capacity: 100_000_000, MaxQuantity: 1, Hidden: &hidden}, nil); err != nil {
			return fmt.Errorf("create workshop %s: %w", w, err)
		}
	}
	start := time.Now()
	deadline := start.Add(*duration)
	firstExpiry := time.Duration(*ttl) * time.Second
	// part is 0 before the first holds pass their deadline, 1 after.
	part := func(t time.Time) int {
		if t.Sub(start) < firstExpiry {
			return 0
		}
		return 1
	}
	var holds, undecided [2]atomic.Int64
	var wg sync.WaitGroup
	for range *clients {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				r, err := c.Send(ctx, engine.OperationKey(uuid.NewString()), client.Holding(engine.HoldRequest{Workshop: "holdload-sale", Quantity: 1, TTLSeconds: *ttl}))
				p := part(time.Now())
				if err != nil || !r.Decided || r.Answer.Status != engine.StatusHeld {
					undecided[p].Add(1)
					continue
				}
				holds[p].Add(1)
			}
		})
	}
	var w [2]window
	for t := time.NewTicker(*probeEvery); time.Now().Before(deadline); <-t.C {
		sent := time.Now()
		r, err := c.Send(ctx, engine.OperationKey(uuid.NewString()), client.Reserving(engine.Request{Workshop: "holdload-other", Quantity: 1}))
		p := &w[part(sent)]
		if err != nil || !r.Decided || r.Answer.Status != engine.StatusReserved {
			p.ProbeFailed++
			continue
		}
		p.probeLatency = append(p.probeLatency, float64(time.Since(sent).Microseconds())/1000)
	}
	wg.Wait()
	w[0].seconds = firstExpiry.Seconds()
	w[1].seconds = time.Since(start).Seconds() - firstExpiry.Seconds()
	for i := range w {
		w[i].Holds, w[i].Undecided = holds[i].Load(), undecided[i].Load()
		w[i].HoldsPerSec = float64(w[i].Holds) / w[i].seconds
		l := w[i].probeLatency
		slices.Sort(l)
		w[i].Probes = len(l)
		if len(l) > 0 {
			w[i].ProbeP50ms, w[i].ProbeP90ms, w[i].ProbeMaxms = l[len(l)/2], l[len(l)*9/10], l[len(l)-1]
		}
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{"before_first_deadline": w[0], "after_first_deadline": w[1]})
}
