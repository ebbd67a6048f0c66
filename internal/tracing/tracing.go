// Package tracing gives reserve's daemon its OpenTelemetry spans: one for
// each HTTP request, one for each engine decision and one for each store
// commit. The other packages use it through a *Tracer, and a nil *Tracer
// is tracing turned off: every method returns at once, allocates nothing
// and touches no header, so a daemon without an OTLP endpoint pays for
// tracing with a nil check.
package tracing

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Names of the spans and attributes, which dashboards and tests rely on.
const (
	SpanRequest  = "http.request"
	SpanDecision = "engine.decision"
	SpanCommit   = "store.commit"

	AttrRoute      = "http.route"
	AttrMethod     = "http.request.method"
	AttrStatus     = "http.response.status_code"
	AttrActor      = "reserve.actor"
	AttrOperation  = "reserve.operation"
	AttrAnswer     = "reserve.answer"
	AttrCalls      = "reserve.commit.calls"
	AttrAttempt    = "reserve.commit.attempt"
	AttrSQLState   = "db.response.status_code"
	EventCollision = "collision"
	AttrStore      = "reserve.store"
	HeaderParent   = "traceparent"
	scopeName      = "github.com/reserve/reserve"
	exportInterval = 2 * time.Second
)

// Tracer starts reserve's spans. A nil *Tracer is off.
type Tracer struct {
	tracer trace.Tracer
	prop   propagation.TraceContext
}

// New returns a Tracer whose spans go to tp.
func New(tp trace.TracerProvider) *Tracer {
	return &Tracer{tracer: tp.Tracer(scopeName)}
}

// Config is how the daemon turns tracing on.
type Config struct {
	// Endpoint is the OTLP/HTTP collector's base URL, such as
	// http://127.0.0.1:4318; spans are posted to Endpoint/v1/traces.
	// Empty turns tracing off.
	Endpoint string
	// SampleRatio is the share of traces started here that are
	// recorded, from 0 to 1. A request that continues a trace follows
	// its caller's sampling decision.
	SampleRatio float64
	// Service and Version name this program in the spans' resource.
	Service, Version string
}

// Start returns the Tracer for cfg and the function that flushes and stops
// its exporter: a nil Tracer and a no-op stop when cfg.Endpoint is empty.
func Start(cfg Config) (*Tracer, func(context.Context) error, error) {
	if cfg.Endpoint == "" {
		return nil, func(context.Context) error { return nil }, nil
	}
	if cfg.SampleRatio < 0 || cfg.SampleRatio > 1 {
		return nil, nil, fmt.Errorf("--trace-sample-ratio must be between 0 and 1, not %v", cfg.SampleRatio)
	}
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, nil, fmt.Errorf("--otlp-endpoint %q is not an http or https URL, such as http://127.0.0.1:4318", cfg.Endpoint)
	}
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(u.JoinPath("v1", "traces").String()))
	if err != nil {
		return nil, nil, fmt.Errorf("OTLP exporter: %w", err)
	}
	res := resource.NewSchemaless(
		attribute.String("service.name", cfg.Service),
		attribute.String("service.version", cfg.Version),
	)
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(exportInterval)),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.SampleRatio))),
	)
	return New(tp), tp.Shutdown, nil
}

// Span is a span under way; the zero Span (tracing off) does nothing.
type Span struct{ s trace.Span }

// Request starts the span of HTTP request r, continuing the trace of the
// W3C traceparent it carries, and sets traceparent on the answer's header
// h to the request's span. It returns the request's context with the span.
func (t *Tracer) Request(r *http.Request, h http.Header) (context.Context, Span) {
	if t == nil {
		return r.Context(), Span{}
	}
	ctx := t.prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	ctx, s := t.tracer.Start(ctx, SpanRequest, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String(AttrMethod, r.Method)))
	t.prop.Inject(ctx, propagation.HeaderCarrier(h))
	return ctx, Span{s}
}

// EndRequest ends a request's span with its route pattern, status and the
// authenticated actor (empty when none). Nothing else of the request is
// recorded: no header, no token, no body.
func (s Span) EndRequest(route string, status int, actor string) {
	if s.s == nil {
		return
	}
	s.s.SetAttributes(attribute.String(AttrRoute, route), attribute.Int(AttrStatus, status))
	if actor != "" {
		s.s.SetAttributes(attribute.String(AttrActor, actor))
	}
	if status >= 500 {
		s.s.SetStatus(codes.Error, http.StatusText(status))
	}
	s.s.End()
}

// Decision starts the span of an engine decision of kind operation.
func (t *Tracer) Decision(ctx context.Context, operation string) (context.Context, Span) {
	if t == nil {
		return ctx, Span{}
	}
	ctx, s := t.tracer.Start(ctx, SpanDecision, trace.WithAttributes(attribute.String(AttrOperation, operation)))
	return ctx, Span{s}
}

// EndDecision ends a decision's span with the answer's status, or the
// error that refused or failed it.
func (s Span) EndDecision(answer string, err error) {
	if s.s == nil {
		return
	}
	if answer != "" {
		s.s.SetAttributes(attribute.String(AttrAnswer, answer))
	}
	if err != nil {
		s.s.SetStatus(codes.Error, err.Error())
	}
	s.s.End()
}

// Caller is the span of one caller of a store commit, taken from its
// context when it queued (CallerOf); the zero Caller has none.
type Caller struct{ sc trace.SpanContext }

// CallerOf returns the span of ctx, for a commit that ctx's call joins.
func (t *Tracer) CallerOf(ctx context.Context) Caller {
	if t == nil {
		return Caller{}
	}
	return Caller{trace.SpanContextFromContext(ctx)}
}

// Commit starts the span of one store commit that carries the calls of
// callers: it is the child of the first caller's span, and links to the
// spans of the others, so that each decision's trace leads to the commit
// that made it durable.
func (t *Tracer) Commit(store string, callers []Caller) Span {
	if t == nil {
		return Span{}
	}
	ctx := context.Background()
	links := make([]trace.Link, 0, len(callers))
	for i, c := range callers {
		if !c.sc.IsValid() {
			continue
		}
		if i == 0 {
			ctx = trace.ContextWithSpanContext(ctx, c.sc)
			continue
		}
		links = append(links, trace.Link{SpanContext: c.sc})
	}
	_, s := t.tracer.Start(ctx, SpanCommit, trace.WithLinks(links...),
		trace.WithAttributes(attribute.String(AttrStore, store), attribute.Int(AttrCalls, len(callers))))
	return Span{s}
}

// Attempt records on a commit's span the highest attempt among the calls
// it carries: 1 when each runs its function for the first time, n when
// one is the n-th run of a decision whose earlier transactions collided
// with concurrent ones.
func (s Span) Attempt(n int) {
	if s.s == nil {
		return
	}
	s.s.SetAttributes(attribute.Int(AttrAttempt, n))
}

// Collision records on a commit's span, as an event, that the call of the
// given attempt collided in its transaction with a concurrent one (SQLSTATE
// sqlstate: a unique violation, serialization failure or deadlock), and is
// run again in a later transaction unless it has run out of attempts.
func (s Span) Collision(attempt int, sqlstate string) {
	if s.s == nil {
		return
	}
	s.s.AddEvent(EventCollision, trace.WithAttributes(attribute.Int(AttrAttempt, attempt), attribute.String(AttrSQLState, sqlstate)))
}

// EndCommit ends a commit's span with its error, if any.
func (s Span) EndCommit(err error) {
	if s.s == nil {
		return
	}
	if err != nil {
		s.s.SetStatus(codes.Error, err.Error())
	}
	s.s.End()
}
