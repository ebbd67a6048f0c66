package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/bench"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
)

// serve starts the probe on a file in dir and returns its URL; the server
// and the probe are closed when the test ends.
func serve(t *testing.T, path string, opts options) string {
	t.Helper()
	p, err := open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(func() {
		srv.Close()
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return srv.URL
}

func defaults() options {
	return options{commit: commitLoop, batchDelay: 10 * time.Millisecond, capacity: 1_000_000_000}
}

// TestBenchVerifiesAgainstProbe runs reservectl's bench against the probe,
// with single reservations and with batches, in both commit modes, with
// replays and lost answers: the bench's own verification (the workshop's
// count, replays byte for byte, no refusals, every intent settled) must
// pass, so the probe keeps in step with the bench's wire format.
func TestBenchVerifiesAgainstProbe(t *testing.T) {
	for _, commit := range []string{commitLoop, commitBatch} {
		for _, batch := range []int{0, 10} {
			t.Run(fmt.Sprintf("%s/batch%d", commit, batch), func(t *testing.T) {
				opts := defaults()
				opts.commit, opts.batchDelay = commit, time.Millisecond
				url := serve(t, filepath.Join(t.TempDir(), "probe.db"), opts)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				res, err := bench.Run(ctx, bench.Config{BaseURL: url, Token: "any-token", Workshop: "probe", Clients: 8, Count: 200, Batch: batch,
					ReplayRatio: 0.2, LostAnswerRatio: 0.1})
				if err != nil {
					t.Fatalf("bench: %v (result %+v)", err, res)
				}
				v, o := res.Verification, res.Outcomes
				if !v.OK || v.Reservations == 0 || v.ReservedAfter-v.ReservedBefore != v.Reservations {
					t.Fatalf("verification %+v", v)
				}
				if o.Created == 0 || o.Replayed == 0 || o.Unavailable != 0 || o.Unclear != 0 {
					t.Fatalf("outcomes %+v: want reservations made and replayed, none unavailable or unclear", o)
				}
			})
		}
	}
}

// TestAnswersOutliveRestart reopens the probe's file: a repeated key is
// answered with the stored body, marked as a replay, and the workshop keeps
// its count. A different token's same key is a new reservation.
func TestAnswersOutliveRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "probe.db")
	ctx := context.Background()
	req := engine.Request{Workshop: "restart", Quantity: 2}
	first, err := open(path, defaults())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(first)
	c := &client.Client{BaseURL: srv.URL, Token: "one"}
	status, body, replayed, err := c.Reserve(ctx, "key-1", req)
	srv.Close()
	if cerr := first.Close(); cerr != nil {
		t.Fatal(cerr)
	}
	if err != nil || status != http.StatusCreated || replayed {
		t.Fatalf("first answer: %d %s replayed=%v, %v", status, body, replayed, err)
	}

	c = &client.Client{BaseURL: serve(t, path, defaults()), Token: "one"}
	status2, body2, replayed2, err := c.Reserve(ctx, "key-1", req)
	if err != nil || status2 != status || string(body2) != string(body) || !replayed2 {
		t.Fatalf("repeat after restart: %d %s replayed=%v, %v; want %d %s replayed", status2, body2, replayed2, err, status, body)
	}
	other := &client.Client{BaseURL: c.BaseURL, Token: "two"}
	if _, body3, replayed3, err := other.Reserve(ctx, "key-1", req); err != nil || replayed3 || string(body3) == string(body) {
		t.Fatalf("same key of another token: %s replayed=%v, %v; want a new reservation", body3, replayed3, err)
	}
	w, err := c.Workshop(ctx, "restart")
	if err != nil || w.Reserved != 4 {
		t.Fatalf("workshop after restart: %+v, %v; want 4 reserved", w, err)
	}
}

// TestFullWorkshopAnswersUnavailable fills a workshop: the request that
// does not fit is answered "unavailable" (409), decided, one that fits
// still gets its place, and the refused key's repeat is the stored refusal,
// marked as a replay.
func TestFullWorkshopAnswersUnavailable(t *testing.T) {
	opts := defaults()
	opts.capacity = 3
	c := &client.Client{BaseURL: serve(t, filepath.Join(t.TempDir(), "probe.db"), opts), Token: "t"}
	ctx := context.Background()
	req := engine.Request{Workshop: "small", Quantity: 2}
	if status, body, _, err := c.Reserve(ctx, "a", req); err != nil || status != http.StatusCreated {
		t.Fatalf("first: %d %s, %v", status, body, err)
	}
	status, body, replayed, err := c.Reserve(ctx, "b", req)
	if err != nil || status != http.StatusConflict || replayed {
		t.Fatalf("second: %d %s replayed=%v, %v; want 409 unavailable", status, body, replayed, err)
	}
	one := engine.Request{Workshop: "small", Quantity: 1}
	if status, body, _, err := c.Reserve(ctx, "c", one); err != nil || status != http.StatusCreated {
		t.Fatalf("one place: %d %s, %v", status, body, err)
	}
	if s, b, r, err := c.Reserve(ctx, "b", req); err != nil || s != status || string(b) != string(body) || !r {
		t.Fatalf("repeat of the refusal: %d %s replayed=%v, %v", s, b, r, err)
	}
}
