package pgstore_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/pgstore"
	"github.com/reserve/reserve/internal/pgstore/pgtest"
	"github.com/reserve/reserve/internal/tracing"
	"github.com/reserve/reserve/internal/tracing/tracingtest"
)

// wantCommitSpan checks a commit span's store, calls, attempt and parent,
// and that it has an error status exactly when failed is.
func wantCommitSpan(t *testing.T, s tracetest.SpanStub, calls, attempt string, parent trace.SpanContext, failed bool) {
	t.Helper()
	for key, want := range map[string]string{tracing.AttrStore: "postgres", tracing.AttrCalls: calls, tracing.AttrAttempt: attempt} {
		if got := tracingtest.Attr(s.Attributes, key); got != want {
			t.Errorf("commit span: %s = %q, want %q", key, got, want)
		}
	}
	if s.Parent.SpanID() != parent.SpanID() || s.Parent.TraceID() != parent.TraceID() {
		t.Errorf("commit span's parent is %v, want %v", s.Parent, parent)
	}
	if got := s.Status.Code == codes.Error; got != failed {
		t.Errorf("commit span's status is %v %q, want an error: %v", s.Status.Code, s.Status.Description, failed)
	}
}

// wantCollisions checks that s records one collision event for each of
// attempts, in order, each with SQLSTATE 40001.
func wantCollisions(t *testing.T, s tracetest.SpanStub, attempts ...string) {
	t.Helper()
	var got []string
	for _, e := range s.Events {
		if e.Name != tracing.EventCollision || tracingtest.Attr(e.Attributes, tracing.AttrSQLState) != "40001" {
			t.Errorf("commit span has event %s %v, want only collisions with SQLSTATE 40001", e.Name, e.Attributes)
			continue
		}
		got = append(got, tracingtest.Attr(e.Attributes, tracing.AttrAttempt))
	}
	if strings.Join(got, ",") != strings.Join(attempts, ",") {
		t.Errorf("commit span has collisions of attempts %v, want %v", got, attempts)
	}
}

// conflict is a serialization failure, which PostgreSQL reports only at
// SERIALIZABLE or REPEATABLE READ, which Update does not use; so the
// functions of these tests report it themselves.
var conflict = &pgconn.PgError{Code: "40001", Message: "could not serialize access"}

// TestCommitSpanOfAnUpdate: an Update that runs alone gets a commit span,
// the child of its caller's, and a View gets none.
func TestCommitSpanOfAnUpdate(t *testing.T) {
	rec := tracingtest.New(t)
	s := mustOpen(t, pgstore.Options{Tracer: rec.Tracer})
	ctx, caller := rec.Start(t.Context(), "caller")
	if err := s.Update(ctx, putWorkshop("ws", "")); err != nil {
		t.Fatal(err)
	}
	if err := s.View(ctx, func(tx engine.Tx) error { _, _, err := tx.Workshop("ws"); return err }); err != nil {
		t.Fatal(err)
	}
	caller.End()
	if spans := rec.Exporter.GetSpans(); len(spans) != 2 || spans[0].Name != tracing.SpanCommit || spans[1].Name != "caller" {
		t.Fatalf("ended spans %v, want the Update's commit and the caller", spans)
	}
	com := rec.Named(tracing.SpanCommit)[0]
	wantCommitSpan(t, com, "1", "1", caller.SpanContext(), false)
	wantCollisions(t, com)
}

// TestCommitSpanOfARetry: an Update that collides gets a failed commit
// span with the collision, and its next run a span of attempt 2.
func TestCommitSpanOfARetry(t *testing.T) {
	rec := tracingtest.New(t)
	s := mustOpen(t, pgstore.Options{Tracer: rec.Tracer})
	ctx, caller := rec.Start(t.Context(), "caller")
	defer caller.End()
	runs := 0
	err := s.Update(ctx, func(tx engine.Tx) error {
		if runs++; runs == 1 {
			return conflict
		}
		return putWorkshop("ws", "")(tx)
	})
	if err != nil || runs != 2 {
		t.Fatalf("Update = %v after %d runs, want success after 2", err, runs)
	}
	commits := rec.Named(tracing.SpanCommit)
	if len(commits) != 2 {
		t.Fatalf("%d commit spans, want one for each run", len(commits))
	}
	wantCommitSpan(t, commits[0], "1", "1", caller.SpanContext(), true)
	wantCollisions(t, commits[0], "1")
	wantCommitSpan(t, commits[1], "1", "2", caller.SpanContext(), false)
	wantCollisions(t, commits[1])
}

// TestCommitSpanCarriesItsGroup: Updates that share a transaction get one
// commit span, which counts them, is the child of the first one's span,
// links to the others' and records the collision of one of them, whose
// next run, alone, gets a span of attempt 2.
func TestCommitSpanCarriesItsGroup(t *testing.T) {
	rec := tracingtest.New(t)
	s := mustOpen(t, pgstore.Options{MaxConns: 1, Tracer: rec.Tracer})
	var ctxs []context.Context
	var callers []trace.SpanContext
	for range 3 {
		ctx, span := rec.Start(t.Context(), "caller")
		defer span.End()
		ctxs, callers = append(ctxs, ctx), append(callers, span.SpanContext())
	}
	var collided atomic.Bool
	errs := func() []error {
		release, wait := queueGroupIn(t, s, ctxs,
			putWorkshop("a", ""),
			func(tx engine.Tx) error {
				// The group's probe finds no workshop; its run for real
				// finds the one the decision before it wrote.
				if _, ok, err := tx.Workshop("a"); err != nil || !ok {
					return err
				}
				if !collided.Swap(true) {
					return conflict
				}
				return putWorkshop("b", "")(tx)
			},
			putWorkshop("c", ""))
		release()
		return wait()
	}()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Update %d: %v", i, err)
		}
	}
	// The leader's commit, the group's and the retry's.
	commits := rec.Named(tracing.SpanCommit)
	if len(commits) != 3 {
		t.Fatalf("%d commit spans, want 3", len(commits))
	}
	group := commits[1]
	wantCommitSpan(t, group, "3", "1", callers[0], false)
	wantCollisions(t, group, "1")
	if len(group.Links) != 2 || group.Links[0].SpanContext.SpanID() != callers[1].SpanID() || group.Links[1].SpanContext.SpanID() != callers[2].SpanID() {
		t.Errorf("the group's commit links to %v, want the second and third callers", group.Links)
	}
	wantCommitSpan(t, commits[2], "1", "2", callers[1], false)
}

// TestCommitSpanOfAFailedCommit: the span of a transaction whose COMMIT
// fails, of a group or of one Update, records the error.
func TestCommitSpanOfAFailedCommit(t *testing.T) {
	rec := tracingtest.New(t)
	dsn, _ := pgtest.FreshSchema(t)
	s := mustOpenDSN(t, dsn, pgstore.Options{MaxConns: 1, Tracer: rec.Tracer})
	failCommits(t, dsn)
	for i, err := range inOneGroup(t, s, putWorkshop("a", ""), putWorkshop("b", failingTitle)) {
		if err == nil {
			t.Errorf("Update %d of the group succeeded, want the failed commit", i)
		}
	}
	if err := s.Update(t.Context(), putWorkshop("c", failingTitle)); err == nil {
		t.Error("the Update alone succeeded, want the failed commit")
	}
	commits := rec.Named(tracing.SpanCommit)
	if len(commits) != 3 {
		t.Fatalf("%d commit spans, want the leader's, the group's and the Update's", len(commits))
	}
	for i, calls := range map[int]string{1: "2", 2: "1"} {
		wantCommitSpan(t, commits[i], calls, "1", trace.SpanContext{}, true)
		if d := commits[i].Status.Description; !strings.Contains(d, "commit") || !strings.Contains(d, "the connection is gone") {
			t.Errorf("commit span %d has status %q, want the failed commit", i, d)
		}
	}
}
