package server_test

import (
	"testing"
	"time"

	"github.com/reserve/reserve/internal/server"
)

// clock is a clock that a test moves.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// A sign-in in progress is taken once: its state answers its flow at the
// first take, and nothing at the next, nor for an unknown state.
func TestOIDCFlowIsUsedOnce(t *testing.T) {
	c := &clock{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	f := server.NewOIDCFlows(c.now)
	a := f.Add("nonce-a")
	b := f.Add("nonce-b")
	if a == b || len(a) < 43 {
		t.Fatalf("states %q and %q: want two different ones of 256 bits", a, b)
	}
	if n, ok := f.Take(a); !ok || n != "nonce-a" {
		t.Fatalf("first take of a = %q, %t; want nonce-a", n, ok)
	}
	if _, ok := f.Take(a); ok {
		t.Fatal("the second take of a found it again")
	}
	if _, ok := f.Take("no-such-state"); ok {
		t.Fatal("an unknown state found a flow")
	}
	if n, ok := f.Take(b); !ok || n != "nonce-b" {
		t.Fatalf("take of b = %q, %t; want nonce-b", n, ok)
	}
}

// A sign-in in progress expires after OIDCFlowTTL, and an expired one is
// gone, also for a later take.
func TestOIDCFlowExpires(t *testing.T) {
	c := &clock{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	f := server.NewOIDCFlows(c.now)
	early := f.Add("early")
	late := f.Add("late")
	c.t = c.t.Add(server.OIDCFlowTTL - time.Nanosecond)
	if _, ok := f.Take(early); !ok {
		t.Fatal("a flow just before its expiry was not found")
	}
	c.t = c.t.Add(time.Nanosecond)
	if _, ok := f.Take(late); ok {
		t.Fatal("a flow at its expiry was found")
	}
}

// At most MaxOIDCFlows sign-ins are kept: one more makes the oldest be
// forgotten, never the newest refused, so that a client that starts
// sign-ins and never finishes them cannot lock everyone else out of
// signing in. Expired flows are forgotten first.
func TestOIDCFlowsAreBounded(t *testing.T) {
	c := &clock{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	f := server.NewOIDCFlows(c.now)
	victim := f.Add("victim")
	for range server.MaxOIDCFlows - 1 {
		f.Add("flood")
	}
	newest := f.Add("newest")
	if n, ok := f.Take(newest); !ok || n != "newest" {
		t.Fatalf("the newest flow with %d in progress: take = %q, %t; want it kept", server.MaxOIDCFlows, n, ok)
	}
	if _, ok := f.Take(victim); ok {
		t.Fatal("the oldest flow was kept beyond the bound")
	}
	c.t = c.t.Add(server.OIDCFlowTTL)
	s := f.Add("after expiry")
	if n, ok := f.Take(s); !ok || n != "after expiry" {
		t.Fatalf("take = %q, %t", n, ok)
	}
}
