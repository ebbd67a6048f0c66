package server_test

import (
	"errors"
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
	a, err := f.Add("nonce-a")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := f.Add("nonce-b")
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
	early, _ := f.Add("early")
	late, _ := f.Add("late")
	c.t = c.t.Add(server.OIDCFlowTTL - time.Nanosecond)
	if _, ok := f.Take(early); !ok {
		t.Fatal("a flow just before its expiry was not found")
	}
	c.t = c.t.Add(time.Nanosecond)
	if _, ok := f.Take(late); ok {
		t.Fatal("a flow at its expiry was found")
	}
}

// At most MaxOIDCFlows sign-ins are kept: one more is refused while none
// has expired, and taken once they have.
func TestOIDCFlowsAreBounded(t *testing.T) {
	c := &clock{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	f := server.NewOIDCFlows(c.now)
	for range server.MaxOIDCFlows {
		if _, err := f.Add("n"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.Add("one too many"); !errors.Is(err, server.ErrTooManyFlows) {
		t.Fatalf("one flow too many: %v, want ErrTooManyFlows", err)
	}
	c.t = c.t.Add(server.OIDCFlowTTL)
	s, err := f.Add("after expiry")
	if err != nil {
		t.Fatalf("a flow after the others expired: %v", err)
	}
	if n, ok := f.Take(s); !ok || n != "after expiry" {
		t.Fatalf("take = %q, %t", n, ok)
	}
}
