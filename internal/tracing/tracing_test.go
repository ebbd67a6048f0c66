package tracing_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/reserve/reserve/internal/tracing"
)

// errOff is the error a commit ends with in TestOffCostsNothing, made
// before it counts allocations.
var errOff = errors.New("commit failed")

// TestOffCostsNothing: a nil Tracer (tracing off) starts no span, leaves
// the request's context and the answer's header as they were and
// allocates nothing.
func TestOffCostsNothing(t *testing.T) {
	var tr *tracing.Tracer
	r := httptest.NewRequest(http.MethodPost, "/api/v1/reservations", nil)
	r.Header.Set(tracing.HeaderParent, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	h := http.Header{}
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		rctx, span := tr.Request(r, h)
		if rctx != r.Context() {
			t.Fatal("the request's context changed")
		}
		dctx, dec := tr.Decision(ctx, "reserve")
		if dctx != ctx {
			t.Fatal("the decision's context changed")
		}
		c := tr.CallerOf(dctx)
		tr.Commit("bbolt", nil).EndCommit(nil)
		pg := tr.Commit("postgres", nil)
		pg.Attempt(2)
		pg.Collision(2, "40001")
		pg.EndCommit(errOff)
		_ = c
		dec.EndDecision("reserved", nil)
		span.EndRequest("POST /api/v1/reservations", 201, "alice")
	})
	if allocs != 0 {
		t.Errorf("tracing off allocates %v times a request", allocs)
	}
	if len(h) != 0 {
		t.Errorf("tracing off set the header %v", h)
	}
}

// TestStartRefusesBadConfig: an endpoint that is not an http(s) URL and a
// ratio outside 0 to 1 are refused; no endpoint is tracing off.
func TestStartRefusesBadConfig(t *testing.T) {
	for _, c := range []tracing.Config{
		{Endpoint: "127.0.0.1:4318", SampleRatio: 1},
		{Endpoint: "ftp://collector:4318", SampleRatio: 1},
		{Endpoint: "http://127.0.0.1:4318", SampleRatio: 1.5},
		{Endpoint: "http://127.0.0.1:4318", SampleRatio: -0.1},
	} {
		if tr, _, err := tracing.Start(c); err == nil || tr != nil {
			t.Errorf("Start(%+v) = %v, %v; want a refusal", c, tr, err)
		}
	}
	tr, stop, err := tracing.Start(tracing.Config{})
	if err != nil || tr != nil {
		t.Fatalf("Start without an endpoint = %v, %v; want nil, nil", tr, err)
	}
	if err := stop(context.Background()); err != nil {
		t.Error(err)
	}
}
