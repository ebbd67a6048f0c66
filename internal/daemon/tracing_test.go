package daemon_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/reserve/reserve/internal/daemon"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/pgstore/pgtest"
	"github.com/reserve/reserve/internal/server/servertest"
	"github.com/reserve/reserve/internal/tracing"
)

// collector is an OTLP/HTTP trace receiver that keeps the names of the
// spans posted to it, and the stores of the commit spans.
type collector struct {
	mu     sync.Mutex
	posts  int
	spans  map[string]int
	stores map[string]int
	bad    []string // What was wrong with a post.
}

// newCollector starts a collector, stopped when the test ends.
func newCollector(t *testing.T) (*collector, *httptest.Server) {
	col := &collector{spans: map[string]int{}, stores: map[string]int{}}
	ts := httptest.NewServer(col)
	t.Cleanup(ts.Close)
	return col, ts
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		c.bad = append(c.bad, r.Method+" "+r.URL.Path)
		http.NotFound(w, r)
		return
	}
	c.posts++
	if ct := r.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		c.bad = append(c.bad, "Content-Type "+ct)
	}
	body, err := io.ReadAll(r.Body)
	var req coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &req)
	}
	if err != nil {
		c.bad = append(c.bad, err.Error())
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.spans[s.Name]++
				for _, a := range s.Attributes {
					if s.Name == tracing.SpanCommit && a.Key == tracing.AttrStore {
						c.stores[a.Value.GetStringValue()]++
					}
				}
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Write(out)
}

// waitForSpans waits until the spans of a reservation, its commit by
// store among them, have arrived, and checks that every post was good.
func (c *collector) waitForSpans(t *testing.T, store string) {
	t.Helper()
	servertest.Eventually(t, startTimeout, "the reservation's spans at the collector", func() bool {
		ok, _ := c.has(tracing.SpanRequest, tracing.SpanDecision, tracing.SpanCommit)
		c.mu.Lock()
		defer c.mu.Unlock()
		return ok && c.stores[store] > 0
	})
	if _, bad := c.has(); len(bad) > 0 {
		t.Errorf("the collector got posts it could not take: %q", bad)
	}
}

// has reports whether every one of names has arrived, and what was wrong.
func (c *collector) has(names ...string) (bool, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range names {
		if c.spans[n] == 0 {
			return false, c.bad
		}
	}
	return c.posts > 0, c.bad
}

// reserved with --otlp-endpoint posts the spans of a reservation to the
// collector by OTLP/HTTP (protobuf on /v1/traces), and answers with a
// traceparent.
func TestServeSendsSpansToOTLPEndpoint(t *testing.T) {
	t.Parallel()
	col, ts := newCollector(t)
	dir := t.TempDir()
	p := start(t, dir, filepath.Join(servertest.ShortTempDir(t), "t.sock"), "--otlp-endpoint", ts.URL)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	token, err := p.socketClient().CreateToken(ctx, "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	status, body, _, err := p.tcpClient(token).Reserve(ctx, engine.OperationKey(uuid.NewString()), demo)
	if err != nil || status != http.StatusCreated {
		t.Fatalf("reservation = %d %s %v", status, body, err)
	}
	// An answer continues the caller's trace and names its own span.
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"/healthz", nil)
	if err != nil {
		t.Fatal(err)
	}
	hreq.Header.Set(tracing.HeaderParent, "00-"+traceID+"-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get(tracing.HeaderParent); !strings.HasPrefix(got, "00-"+traceID+"-") || strings.Contains(got, "00f067aa0ba902b7") {
		t.Errorf("traceparent of the answer = %q, want a span of trace %s of its own", got, traceID)
	}
	col.waitForSpans(t, "bbolt")
}

// reserved on PostgreSQL with --otlp-endpoint posts the spans of a
// reservation, with the commit span of the PostgreSQL store.
func TestServeOnPostgresSendsSpansToOTLPEndpoint(t *testing.T) {
	t.Parallel()
	dsn, _ := pgtest.FreshSchema(t)
	col, ts := newCollector(t)
	p := startOnPostgres(t, dsn, filepath.Join(servertest.ShortTempDir(t), "t.sock"), "", "--otlp-endpoint", ts.URL)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	status, body, _, err := p.socketClient().Reserve(ctx, engine.OperationKey(uuid.NewString()), engine.Request{Workshop: daemon.DemoWorkshop, Quantity: 1})
	if err != nil || status != http.StatusCreated {
		t.Fatalf("reservation = %d %s %v", status, body, err)
	}
	col.waitForSpans(t, "postgres")
}
