package browsertest_test

import (
	"net/http"
	"testing"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// TestRateLimitedReservationSentAgain: the daemon's rate limit answers the
// page's reservation 429 rate_limited, which decided nothing. The page
// waits the answer's Retry-After and sends the same request, under the
// intent's key, again by itself, which reserves: one click, two sends,
// one reservation.
func TestRateLimitedReservationSentAgain(t *testing.T) {
	// A request every 5 s, 20 at once: enough for the page to load.
	d := startDaemonWith(t, "--rate-limit", "0.2", "--rate-burst", "20")
	tb := openTab(t, d)
	tb.signIn("alice")
	tb.choose(demo, 1)

	// Empty alice's bucket until its next request is more than 4 s away
	// (Retry-After 5): the page's reservation comes well within that.
	alice := d.as(t, "alice")
	for drained := false; !drained; {
		resp, body, err := alice.Do(d.ctx(t), http.MethodGet, api.PathWhoAmI, nil, nil)
		switch {
		case err != nil:
			t.Fatal(err)
		case resp.StatusCode == http.StatusTooManyRequests:
			drained = resp.Header.Get("Retry-After") == "5"
		case resp.StatusCode != http.StatusOK:
			t.Fatalf("whoami as alice: %d %s", resp.StatusCode, body)
		}
	}

	tb.click("submit")
	tb.waitStatus("reserved")
	if n := tb.sentPosts(); n != 2 {
		t.Errorf("the page sent %d reservation requests for one click, want 2 (the first refused by the rate limit)", n)
	}
	if got := d.requests(t, "POST "+api.PathReservations); len(got) != 2 || got[engine.OutcomeRateLimited] != 1 || got[engine.OutcomeCreated] != 1 {
		t.Errorf("the daemon answered the reservation requests %v, want one rate_limited and one created", got)
	}
	key := tb.intentKey()
	for _, r := range d.logs.RequestLines(t) {
		if r["route"] == "POST "+api.PathReservations && r["operation"] != key {
			t.Errorf("a reservation request under another key than the intent's %s: %v", key, r)
		}
	}
	if n := d.reserved(t, demo); n != 1 {
		t.Errorf("%d places reserved, want 1", n)
	}
}
