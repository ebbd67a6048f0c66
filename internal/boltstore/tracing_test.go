package boltstore_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/tracing"
)

// TestCommitSpanCarriesItsCalls: Updates that share a group commit get
// one commit span, which counts them, is the child of the first one's
// span and links to the others'.
func TestCommitSpanCarriesItsCalls(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	s := mustOpen(t, boltstore.Options{Tracer: tracing.New(tp)})
	release := holdWriter(t, s)
	const n = 3
	callers := make(chan trace.SpanContext, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			ctx, span := tp.Tracer("test").Start(context.Background(), "caller")
			defer span.End()
			callers <- span.SpanContext()
			if err := s.Update(ctx, func(engine.Tx) error { return nil }); err != nil {
				t.Error(err)
			}
		})
	}
	waitQueued(t, s, n)
	release()
	wg.Wait()
	close(callers)
	want := map[trace.SpanID]bool{}
	for sc := range callers {
		want[sc.SpanID()] = true
	}
	var commits []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == tracing.SpanCommit {
			commits = append(commits, s)
		}
	}
	// The held writer's commit, then the one the queued Updates shared.
	if len(commits) != 2 {
		t.Fatalf("%d commit spans, want 2", len(commits))
	}
	shared := commits[1]
	if got := attr(shared, tracing.AttrCalls); got != "3" {
		t.Errorf("the shared commit carries %s calls, want 3", got)
	}
	got := map[trace.SpanID]bool{shared.Parent.SpanID(): true}
	for _, l := range shared.Links {
		got[l.SpanContext.SpanID()] = true
	}
	if len(got) != n || len(shared.Links) != n-1 {
		t.Fatalf("the shared commit's parent and links are %d spans (%d links), want the %d callers", len(got), len(shared.Links), n)
	}
	for id := range want {
		if !got[id] {
			t.Errorf("caller %s is neither the commit's parent nor linked", id)
		}
	}
}

// TestCommitSpanEndsWhenEveryCallFails: a commit whose every call failed
// committed nothing, and its span still ends.
func TestCommitSpanEndsWhenEveryCallFails(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	s := mustOpen(t, boltstore.Options{Tracer: tracing.New(tp)})
	refused := errors.New("refused")
	if err := s.Update(context.Background(), func(engine.Tx) error { return refused }); !errors.Is(err, refused) {
		t.Fatalf("Update = %v, want %v", err, refused)
	}
	spans := exp.GetSpans()
	if len(spans) != 1 || spans[0].Name != tracing.SpanCommit || attr(spans[0], tracing.AttrCalls) != "1" {
		t.Fatalf("ended spans %v, want the one commit of 1 call", spans)
	}
}

// attr returns the value of s's attribute key, and "" when it has none.
func attr(s tracetest.SpanStub, key string) string {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value.String()
		}
	}
	return ""
}
