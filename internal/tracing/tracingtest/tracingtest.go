// Package tracingtest keeps the spans of a tracing.Tracer in memory, for
// the tests of the packages that make them.
package tracingtest

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/reserve/reserve/internal/tracing"
)

// Recorder is a Tracer whose spans are kept in memory, each as soon as it
// ends.
type Recorder struct {
	Tracer   *tracing.Tracer
	Exporter *tracetest.InMemoryExporter
	provider *sdktrace.TracerProvider
}

// New returns a Recorder, shut down when the test ends.
func New(tb testing.TB) *Recorder {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tb.Cleanup(func() { tp.Shutdown(context.Background()) })
	return &Recorder{Tracer: tracing.New(tp), Exporter: exp, provider: tp}
}

// Start starts a span of the test's own, such as a caller of a store, in
// the same provider.
func (r *Recorder) Start(ctx context.Context, name string) (context.Context, trace.Span) {
	return r.provider.Tracer("test").Start(ctx, name)
}

// Named returns the ended spans called name, in the order they ended.
func (r *Recorder) Named(name string) []tracetest.SpanStub {
	var found []tracetest.SpanStub
	for _, s := range r.Exporter.GetSpans() {
		if s.Name == name {
			found = append(found, s)
		}
	}
	return found
}

// Attr returns the value of key among attrs (a span's or an event's), and
// "" when it is not there.
func Attr(attrs []attribute.KeyValue, key string) string {
	for _, a := range attrs {
		if string(a.Key) == key {
			return a.Value.String()
		}
	}
	return ""
}
