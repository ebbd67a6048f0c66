package browsertest_test

import (
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/web"
)

// ruleSource returns the part of the pages that decides which answers
// settle an intent: the generated table of answers (web/answers.js) and
// web/common.js, whose functions authoritative and opAuthoritative both
// pages use, bound to those names.
func ruleSource(t *testing.T) string {
	t.Helper()
	var parts []string
	for _, name := range []string{"answers.js", "common.js"} {
		src, err := web.Assets.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, string(src))
	}
	parts = append(parts, "const { authoritative, opAuthoritative } = COMMON;")
	return strings.Join(parts, "\n")
}

// TestBrowserRuleIsClassify evaluates the browser's rule for settling an
// intent in Chromium for every (HTTP status, body) of a table and compares
// it with client.Classify, the rule of every Go client: the page settles a
// reservation (one that asks to join the waiting list, and one that does
// not), a cancellation, a confirmation, a release or leaving a waiting list
// exactly on the answers that Classify calls that operation's authoritative
// answer, with the same status word. (The
// page never settles on a problem: a refusal leaves its intent open for a
// retry with the same key, which gets the same refusal.)
func TestBrowserRuleIsClassify(t *testing.T) {
	needBrowser(t)
	const id, other = "0190a1b2c3d4e5f60718293a4b5c6d7e", "0190a1b2c3d4e5f60718293a4b5c6d7f"
	req := engine.Request{Workshop: "w-1", Quantity: 2}
	bodies := []string{"", "{", "[]", "null", `"reserved"`}
	// id is the reservation cancelled, the hold confirmed or released and
	// the waiting list entry left;
	// the answers to holds carry members that no other answer has.
	// A refusal for the limit per person carries the limit and the places
	// the actor had already.
	extras := []string{"", `,"x":1`, `,"hold_id":"` + id + `"`, `,"hold_id":"` + other + `"`, `,"hold_id":"ABC"`, `,"expires_at":"2026-12-01T10:10:00Z"`,
		`,"max_per_person":4,"already":3`, `,"max_per_person":4,"already":-1`, `,"max_per_person":"4","already":3`}
	// The kinds of operation the pages send. A status none of them
	// answers with (an admin's corrections of deliveries) gets a few
	// bodies only: both rules refuse it whatever its members, and every
	// variant of it would add thousands of checks.
	kinds := []engine.OperationKind{engine.OperationReserve, engine.OperationCancel, engine.OperationConfirm, engine.OperationRelease, engine.OperationLeaveWaitlist}
	for _, status := range engine.AnswerStatuses() {
		if !slices.ContainsFunc(kinds, func(k engine.OperationKind) bool { return api.StatusOfAnswer(k, status) != 0 }) {
			m := `"status":"` + status + `","reservation_id":"` + id + `","workshop":"w-1","quantity":2`
			bodies = append(bodies, "{"+m+"}", "{"+m+`,"hold_id":"`+id+`"}`, `{"status":"`+status+`","delivery_id":"`+id+`-mail","workshop":"w-1","quantity":2}`)
			continue
		}
		for _, rid := range []string{id, other, "", "empty", "abc"} {
			for _, w := range []string{"w-1", "w-2", "", "W_1"} {
				for _, q := range []string{"2", "3", "0", `"2"`} {
					m := `"status":"` + status + `"`
					switch rid {
					case "":
					case "empty":
						m += `,"reservation_id":""`
					default:
						m += `,"reservation_id":"` + rid + `"`
					}
					m += `,"workshop":"` + w + `","quantity":` + q
					for _, x := range extras {
						bodies = append(bodies, "{"+m+x+"}")
					}
				}
			}
		}
	}
	// The members of the waiting list's answers: an entry (the one asked
	// about, another, one of the wrong form) and a position in the queue
	// (from 1), each there or not.
	for _, status := range engine.AnswerStatuses() {
		for _, w := range []string{"w-1", "w-2"} {
			for _, q := range []string{"2", "3"} {
				for _, e := range []string{"", `,"entry_id":"` + id + `"`, `,"entry_id":"` + other + `"`, `,"entry_id":"ABC"`} {
					for _, p := range []string{"", `,"position":1`, `,"position":0`, `,"position":"1"`} {
						bodies = append(bodies, `{"status":"`+status+`"`+e+`,"workshop":"`+w+`","quantity":`+q+p+`}`)
					}
				}
			}
		}
	}
	for _, code := range api.Codes {
		bodies = append(bodies, `{"type":"about:blank","status":409,"code":"`+code+`","detail":"d"}`)
	}
	// The page parses the bodies once and is asked, for each kind of
	// operation and HTTP status, what it settles each of them on, so that
	// no single message to the browser carries every check.
	input, _ := json.Marshal(bodies)
	define := fmt.Sprintf(`(() => {
%s
const target = %q;
const bodies = %s.map((b) => { try { return b === "" ? null : JSON.parse(b); } catch (e) { return undefined; } });
window.settles = (kind, status, waitlist) => bodies.map((body) => {
  const r = {status, body};
  const payload = {workshop: %q, quantity: %d, waitlist};
  const o = kind === "reserve" ? authoritative(r, payload) : opAuthoritative(r, {kind, target});
  return o ? o.status : "";
});
})()`, ruleSource(t), id, input, req.Workshop, req.Quantity)

	ctx, cancel := chromedp.NewContext(browserCtx, chromedp.WithNewBrowserContext())
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](define)); err != nil {
		t.Fatalf("load the page's rule: %v", err)
	}
	// Each operation the pages send, a reservation both with and without
	// asking to join the waiting list.
	joining := req
	joining.Waitlist = true
	ops := []client.Operation{
		client.Reserving(req), client.Reserving(joining), client.Cancelling(id), client.Confirming(id), client.Releasing(id), client.LeavingWaitlist(id),
	}
	// The browser answers one (operation, status) after the other; Go's
	// rule is applied to each answer of the browser on the other cores
	// meanwhile, under the race detector the larger part of the work. The
	// findings are reported in the order of the table.
	type verdict struct {
		mismatches []string
		settled    []string // "kind status" of the answers Classify settles on.
	}
	statuses := []int{200, 201, 202, 400, 401, 404, 408, 409, 410, 422, 429, 500, 503}
	verdicts := make([]verdict, len(ops)*len(statuses))
	var wg sync.WaitGroup
	slots := make(chan struct{}, runtime.GOMAXPROCS(0))
	for o, op := range ops {
		for s, status := range statuses {
			got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](fmt.Sprintf("settles(%q, %d, %t)", op.Kind, status, op.Request.Waitlist)))
			if err != nil {
				wg.Wait()
				t.Fatalf("evaluate the page's rule: %v", err)
			}
			if len(got) != len(bodies) {
				wg.Wait()
				t.Fatalf("the page's rule gave %d results for %d answers", len(got), len(bodies))
			}
			slots <- struct{}{}
			wg.Go(func() {
				defer func() { <-slots }()
				v := &verdicts[o*len(statuses)+s]
				for i, b := range bodies {
					ct := api.MediaJSON
					if strings.Contains(b, `"code"`) {
						ct = api.MediaProblem
					}
					res := client.Classify(op, client.Reply{Status: status, ContentType: ct, Body: []byte(b)})
					want := ""
					if res.Decided {
						want = res.Answer.Status
						v.settled = append(v.settled, string(op.Kind)+" "+want)
					}
					if got[i] != want {
						v.mismatches = append(v.mismatches, fmt.Sprintf("%s (waitlist %t) answered %d %s: the page settles on %q, Classify on %q", op.Kind, op.Request.Waitlist, status, b, got[i], want))
					}
				}
			})
		}
	}
	wg.Wait()
	settled := map[string]bool{} // "kind status" of every answer the table holds.
	for _, v := range verdicts {
		for _, m := range v.mismatches {
			t.Error(m)
		}
		for _, k := range v.settled {
			settled[k] = true
		}
	}
	// The table holds every authoritative answer of every kind, so that the
	// comparison cannot pass by missing one.
	for _, kind := range kinds {
		for _, status := range engine.AnswerStatuses() {
			if api.StatusOfAnswer(kind, status) != 0 && !settled[string(kind)+" "+status] {
				t.Errorf("the table has no authoritative %s answer %q", kind, status)
			}
		}
	}
}
