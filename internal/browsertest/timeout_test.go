package browsertest_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/reserve/reserve/internal/api"
)

// testTimeoutMS is the request timeout the test below gives the page
// instead of its 15 s: long enough for every answer the daemon does send.
const testTimeoutMS = 2000

// holdNextAnswer makes the daemon decide the next operation and then hold
// its answer for ever (the longest delay there is): a server that accepts
// a request and never answers it.
func (d *daemon) holdNextAnswer(t *testing.T) {
	t.Helper()
	if err := d.socket.ArmFault(d.ctx(t), api.Fault{Fault: api.FaultDelayResponse, Count: 1, DelayMS: api.MaxFaultDelayMS}); err != nil {
		t.Fatalf("arm %s: %v", api.FaultDelayResponse, err)
	}
}

// A request the daemon never answers is given up after the page's request
// timeout (set shorter here through window.reserveRequestTimeoutMs): the
// page says "outcome unclear — retry" exactly as for a lost answer and
// keeps the intent open, and the retry sends the same key and gets the
// reservation the daemon committed. A cancellation left unanswered is
// "cancellation unclear — retry" the same way.
func TestUnansweredRequestIsUnclear(t *testing.T) {
	d := startDaemon(t)
	tb := openTab(t, d)
	tb.signIn("")
	tb.do("shorten the request timeout", chromedp.Evaluate[chromedp.Void]("window.reserveRequestTimeoutMs = "+strconv.Itoa(testTimeoutMS)))

	d.holdNextAnswer(t)
	tb.choose(demo, 2)
	tb.click("submit")
	tb.waitStatus("unclear")
	f := tb.form()
	if !f.QuantityDisabled || !f.WorkshopDisabled || !f.NewIntentHidden || f.SubmitHidden || f.SubmitDisabled || f.Submit != "Retry" ||
		!strings.HasPrefix(f.Status, "Outcome unclear — retry") {
		t.Errorf("after no answer: %+v, want \"Outcome unclear — retry\", the choice locked and Retry offered", f)
	}
	key := tb.intentKey()
	// The daemon counts the request once its handler ends, which it does
	// when it sees the page give up, a moment after the page says so.
	d.waitPosts(t, 1)
	if d.reserved(t, demo) != 2 {
		t.Fatalf("after no answer: %d places reserved; want the one POST committed", d.reserved(t, demo))
	}

	tb.click("submit")
	tb.waitStatus("reserved")
	if k := tb.intentKey(); k != key {
		t.Errorf("the retry used the key %s, want %s", k, key)
	}
	if n := d.reserved(t, demo); n != 2 {
		t.Errorf("%d places reserved after the retry, want still 2", n)
	}
	if got := d.requests(t, "POST "+api.PathReservations); got["replayed"] != 1 {
		t.Errorf("reservation requests by outcome %v, want the retry replayed", got)
	}

	id := reservationID.FindString(tb.form().Receipt)
	tb.poll("the reservation in the list", `document.getElementById("cancel-`+id+`") !== null`)
	d.holdNextAnswer(t)
	tb.click("cancel-" + id)
	tb.waitStatus("cancelUnclear")
	if f := tb.form(); f.Cancel != "Retry cancellation" || !f.NewIntentHidden {
		t.Errorf("after no answer to the cancellation: %+v, want only \"Retry cancellation\"", f)
	}
	tb.click("cancel-" + id)
	tb.waitStatus("cancelled")
	if got, n := d.cancels(t); n != 2 || got["replayed"] != 1 {
		t.Errorf("cancellation requests by outcome %v, want 2 with the retry replayed", got)
	}
}

// waitPosts waits until the daemon has counted n reservation requests,
// and fails if it counts another number by the deadline.
func (d *daemon) waitPosts(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		got := d.posts(t)
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon counted %d reservation requests, want %d", got, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
