package enginetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// expiredHolds is how many holds past their deadline, not cleaned up,
// testExpiredHoldsWalkedOnce puts beside the decisions it counts.
const expiredHolds = 2000

// testExpiredHoldsWalkedOnce: decisions on a workshop with many open holds
// past their deadline that nobody cleaned up read none of them while the
// places they ask for are free without them; a decision that needs their
// places cleans up just as many as it needs (stored as expired, out of the
// holding counter, counted in its outcome), so the next one does not walk
// them again; one that needs more than there are cleans them all once and
// is refused, exactly as if they had been cleaned up before.
func testExpiredHoldsWalkedOnce(t *testing.T, h *harness) {
	const n, spare = expiredHolds, 5
	h.workshop("sale", n+spare, n)
	const clients = 16
	concurrently(clients, func(i int) {
		who := engine.Principal{Actor: fmt.Sprintf("buyer%d", i)}
		for range (n - i + clients - 1) / clients {
			out, err := h.hold(who, newKey(), "sale", 1, engine.MinHoldTTLSeconds)
			if err != nil || out.Answer.Status != engine.StatusHeld {
				t.Errorf("hold = %+v, %v", out, err)
				return
			}
		}
	})
	if t.Failed() {
		return
	}
	h.advance(engine.MinHoldTTLSeconds * time.Second)
	h.wantPlaces("sale", 0, 0)

	c := &countingStore{Store: h.store}
	eng := h.engineOn(c)
	decide := func(what string, op func() (engine.Outcome, error), status string, walked int) {
		t.Helper()
		c.reset()
		out, err := op()
		if err != nil || out.Answer.Status != status {
			t.Fatalf("%s = %+v, %v; want %s", what, out, err, status)
		}
		// A store may run a decision's function twice.
		if v := c.visited.Load(); v < int64(walked) || v > 2*int64(walked) || out.ExpiredHolds != walked {
			t.Fatalf("%s walked %d open holds past their deadline and cleaned %d, of %d; want %d (twice if run twice) and %d", what, v, out.ExpiredHolds, n, walked, walked)
		}
	}
	reserve := func(q int) func() (engine.Outcome, error) {
		return func() (engine.Outcome, error) {
			return eng.Reserve(h.ctx, "carol", newKey(), engine.Request{Workshop: "sale", Quantity: q})
		}
	}
	hold := func(q int) func() (engine.Outcome, error) {
		return func() (engine.Outcome, error) {
			return eng.Hold(h.ctx, "carol", newKey(), engine.HoldRequest{Workshop: "sale", Quantity: q, TTLSeconds: ttl})
		}
	}
	decide("a reservation of a free place", reserve(1), engine.StatusReserved, 0)
	decide("a reservation of the other free places", reserve(spare-1), engine.StatusReserved, 0)
	decide("a reservation of 3 places of expired holds", reserve(3), engine.StatusReserved, 3)
	decide("a hold of 3 more", hold(3), engine.StatusHeld, 3)
	h.wantPlaces("sale", spare+3, 3)
	left := n - 6
	decide("a hold of more places than expired holds have", hold(left+1), engine.StatusUnavailable, left)
	decide("the same once they are cleaned up", hold(left+1), engine.StatusUnavailable, 0)
	decide("a reservation of all that is left", reserve(left), engine.StatusReserved, 0)
	h.wantPlaces("sale", spare+3+left, 3)
	if cleaned, more, err := h.eng.ExpireHolds(h.ctx, 100); err != nil || cleaned != 0 || more {
		t.Fatalf("ExpireHolds after the decisions = %d, %v, %v; want nothing left to clean", cleaned, more, err)
	}
}
