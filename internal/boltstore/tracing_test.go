package boltstore_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/tracing"
	"github.com/reserve/reserve/internal/tracing/tracingtest"
)

// TestCommitSpanCarriesItsCalls: Updates that share a group commit get
// one commit span, which counts them, is the child of the first one's
// span and links to the others'.
func TestCommitSpanCarriesItsCalls(t *testing.T) {
	rec := tracingtest.New(t)
	s := mustOpen(t, boltstore.Options{Tracer: rec.Tracer})
	release := holdWriter(t, s)
	const n = 3
	callers := make(chan trace.SpanContext, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			ctx, span := rec.Start(context.Background(), "caller")
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
	commits := rec.Named(tracing.SpanCommit)
	// The held writer's commit, then the one the queued Updates shared.
	if len(commits) != 2 {
		t.Fatalf("%d commit spans, want 2", len(commits))
	}
	shared := commits[1]
	if got := tracingtest.Attr(shared.Attributes, tracing.AttrCalls); got != "3" {
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
	rec := tracingtest.New(t)
	s := mustOpen(t, boltstore.Options{Tracer: rec.Tracer})
	refused := errors.New("refused")
	if err := s.Update(context.Background(), func(engine.Tx) error { return refused }); !errors.Is(err, refused) {
		t.Fatalf("Update = %v, want %v", err, refused)
	}
	spans := rec.Exporter.GetSpans()
	if len(spans) != 1 || spans[0].Name != tracing.SpanCommit || tracingtest.Attr(spans[0].Attributes, tracing.AttrCalls) != "1" {
		t.Fatalf("ended spans %v, want the one commit of 1 call", spans)
	}
}

// TestCommitSpanEndsBeforeAnyCallIsAnswered: every caller of a group
// commit, the ones whose call failed as well as the ones committed, finds
// the commit's span ended once its Update returns, so that its trace is
// whole when it answers.
func TestCommitSpanEndsBeforeAnyCallIsAnswered(t *testing.T) {
	rec := tracingtest.New(t)
	s := mustOpen(t, boltstore.Options{Tracer: rec.Tracer})
	release := holdWriter(t, s)
	refused := errors.New("refused")
	fns := []func(engine.Tx) error{
		func(engine.Tx) error { return refused },
		func(engine.Tx) error { return refused },
		func(engine.Tx) error { return nil },
	}
	seen := make(chan int, len(fns))
	var wg sync.WaitGroup
	for _, fn := range fns {
		wg.Go(func() {
			s.Update(context.Background(), fn)
			seen <- len(rec.Named(tracing.SpanCommit))
		})
	}
	waitQueued(t, s, len(fns))
	release()
	wg.Wait()
	close(seen)
	for n := range seen {
		// The held writer's commit, then the one the queued Updates shared.
		if n != 2 {
			t.Errorf("a caller was answered with %d commit spans ended, want 2", n)
		}
	}
}
