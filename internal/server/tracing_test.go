package server_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/server/servertest"
	"github.com/reserve/reserve/internal/tracing"
	"github.com/reserve/reserve/internal/tracing/tracingtest"
)

// reserveCall is a reservation of one place of the harness's workshop.
func reserveCall(via string, header http.Header) call {
	c := reservationCall(via, uuid.NewString(), fmt.Sprintf(`{"workshop":%q,"quantity":1}`, servertest.Workshop))
	for k, v := range header {
		c.header[k] = v
	}
	return c
}

// tracedHarness serves with a tracer whose spans are kept in memory, each
// as soon as it ends.
func tracedHarness(t *testing.T) (*servertest.Harness, *tracetest.InMemoryExporter) {
	t.Helper()
	rec := tracingtest.New(t)
	h := servertest.Start(t, servertest.Options{Tracer: rec.Tracer})
	// Only the test's own requests: not the harness's setup.
	rec.Exporter.Reset()
	return h, rec.Exporter
}

// spanNamed returns the one span called name, failing unless there is
// exactly one.
func spanNamed(t *testing.T, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	var names []string
	for _, s := range spans {
		names = append(names, s.Name)
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans named %s among %q, want 1", len(found), name, names)
	}
	return found[0]
}

// A reservation is traced as its request, the engine's decision in it and
// the store's commit in that, with the route, status, actor, operation,
// answer and number of calls committed; its traceparent comes back.
func TestTracingSpansOfAReservation(t *testing.T) {
	h, exp := tracedHarness(t)
	resp, body := send(t, h, reserveCall(h.Alice, nil))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("reservation: %d %s", resp.StatusCode, body)
	}
	spans := exp.GetSpans()
	req := spanNamed(t, spans, tracing.SpanRequest)
	dec := spanNamed(t, spans, tracing.SpanDecision)
	com := spanNamed(t, spans, tracing.SpanCommit)
	if req.Parent.IsValid() {
		t.Errorf("the request's span has parent %v, want none", req.Parent)
	}
	if dec.Parent.SpanID() != req.SpanContext.SpanID() || dec.SpanContext.TraceID() != req.SpanContext.TraceID() {
		t.Errorf("the decision's parent is %v, want the request's span %v", dec.Parent, req.SpanContext)
	}
	if com.Parent.SpanID() != dec.SpanContext.SpanID() || com.SpanContext.TraceID() != req.SpanContext.TraceID() {
		t.Errorf("the commit's parent is %v, want the decision's span %v", com.Parent, dec.SpanContext)
	}
	for _, c := range []struct {
		span      tracetest.SpanStub
		key, want string
	}{
		{req, tracing.AttrRoute, "POST /api/v1/reservations"},
		{req, tracing.AttrStatus, "201"},
		{req, tracing.AttrActor, "alice"},
		{req, tracing.AttrMethod, "POST"},
		{dec, tracing.AttrOperation, "reserve"},
		{dec, tracing.AttrAnswer, "reserved"},
		{com, tracing.AttrCalls, "1"},
		{com, tracing.AttrStore, "bbolt"},
	} {
		if got := tracingtest.Attr(c.span.Attributes, c.key); got != c.want {
			t.Errorf("%s: %s = %q, want %q", c.span.Name, c.key, got, c.want)
		}
	}
	// Nothing secret is recorded: no attribute holds the bearer token.
	for _, s := range spans {
		for _, a := range s.Attributes {
			if a.Value.Type() == attribute.STRING && a.Value.AsString() == h.Alice {
				t.Errorf("%s records the bearer token as %s", s.Name, a.Key)
			}
		}
	}
	want := fmt.Sprintf("00-%s-%s-01", req.SpanContext.TraceID(), req.SpanContext.SpanID())
	if got := resp.Header.Get(tracing.HeaderParent); got != want {
		t.Errorf("traceparent of the answer = %q, want %q", got, want)
	}
}

// A request that carries a W3C traceparent is traced as a child of the
// span it names, in its trace.
func TestTracingContinuesTraceparent(t *testing.T) {
	h, exp := tracedHarness(t)
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	resp, body := send(t, h, reserveCall(h.Alice, http.Header{tracing.HeaderParent: {"00-" + traceID + "-" + parentID + "-01"}}))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("reservation: %d %s", resp.StatusCode, body)
	}
	spans := exp.GetSpans()
	req := spanNamed(t, spans, tracing.SpanRequest)
	if got := req.SpanContext.TraceID().String(); got != traceID {
		t.Errorf("the request's trace is %s, want %s", got, traceID)
	}
	if got := req.Parent.SpanID().String(); got != parentID || !req.Parent.IsRemote() {
		t.Errorf("the request's parent is %s (remote %v), want the caller's %s", got, req.Parent.IsRemote(), parentID)
	}
	for _, name := range []string{tracing.SpanDecision, tracing.SpanCommit} {
		if got := spanNamed(t, spans, name).SpanContext.TraceID().String(); got != traceID {
			t.Errorf("%s is in trace %s, want %s", name, got, traceID)
		}
	}
	want := fmt.Sprintf("00-%s-%s-01", traceID, req.SpanContext.SpanID())
	if got := resp.Header.Get(tracing.HeaderParent); got != want {
		t.Errorf("traceparent of the answer = %q, want %q", got, want)
	}
}

// Without a tracer no traceparent is sent, whether or not the request
// carried one.
func TestTracingOffSendsNoTraceparent(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	for _, in := range []http.Header{nil, {tracing.HeaderParent: {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}} {
		resp, body := send(t, h, reserveCall(h.Alice, in))
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("reservation: %d %s", resp.StatusCode, body)
		}
		if got, ok := resp.Header[http.CanonicalHeaderKey(tracing.HeaderParent)]; ok {
			t.Errorf("tracing off, the answer carries traceparent %q", got)
		}
	}
}

// A batch is traced as one decision, of operation "batch", in its
// request's span.
func TestTracingSpansOfABatch(t *testing.T) {
	h, exp := tracedHarness(t)
	body := fmt.Sprintf(`{"items":[{"key":%q,"workshop":%q,"quantity":1}]}`, uuid.NewString(), servertest.Workshop)
	resp, out := send(t, h, call{via: h.Alice, method: http.MethodPost, path: "/api/v1/batches",
		header: http.Header{"Content-Type": {api.MediaJSON}}, body: body})
	if resp.StatusCode/100 != 2 {
		t.Fatalf("batch: %d %s", resp.StatusCode, out)
	}
	spans := exp.GetSpans()
	req := spanNamed(t, spans, tracing.SpanRequest)
	dec := spanNamed(t, spans, tracing.SpanDecision)
	if dec.Parent.SpanID() != req.SpanContext.SpanID() {
		t.Errorf("the batch's decision is not the child of its request's span")
	}
	if got := tracingtest.Attr(dec.Attributes, tracing.AttrOperation); got != "batch" {
		t.Errorf("the decision's operation is %q, want batch", got)
	}
}
