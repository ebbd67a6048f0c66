package browsertest_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
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
// reservation, a cancellation, a confirmation or a release exactly on the
// answers that Classify calls that operation's authoritative answer, with
// the same status word. (The
// page never settles on a problem: a refusal leaves its intent open for a
// retry with the same key, which gets the same refusal.)
func TestBrowserRuleIsClassify(t *testing.T) {
	needBrowser(t)
	const id, other = "0190a1b2c3d4e5f60718293a4b5c6d7e", "0190a1b2c3d4e5f60718293a4b5c6d7f"
	req := engine.Request{Workshop: "w-1", Quantity: 2}
	bodies := []string{"", "{", "[]", "null", `"reserved"`}
	// id is the reservation cancelled and the hold confirmed or released;
	// the answers to holds carry members that no other answer has.
	// A refusal for the limit per person carries the limit and the places
	// the actor had already.
	extras := []string{"", `,"x":1`, `,"hold_id":"` + id + `"`, `,"hold_id":"` + other + `"`, `,"hold_id":"ABC"`, `,"expires_at":"2026-12-01T10:10:00Z"`,
		`,"max_per_person":4,"already":3`, `,"max_per_person":4,"already":-1`, `,"max_per_person":"4","already":3`}
	// The kinds of operation the pages send. A status none of them
	// answers with (an admin's corrections of deliveries) gets a few
	// bodies only: both rules refuse it whatever its members, and every
	// variant of it would add thousands of checks to the page's one
	// evaluation.
	kinds := []engine.OperationKind{engine.OperationReserve, engine.OperationCancel, engine.OperationConfirm, engine.OperationRelease}
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
	for _, code := range api.Codes {
		bodies = append(bodies, `{"type":"about:blank","status":409,"code":"`+code+`","detail":"d"}`)
	}
	type check struct {
		Kind   engine.OperationKind `json:"kind"`
		Status int                  `json:"status"`
		Body   string               `json:"body"`
	}
	var checks []check
	for _, kind := range kinds {
		for _, status := range []int{200, 201, 400, 401, 404, 408, 409, 410, 422, 429, 500, 503} {
			for _, b := range bodies {
				checks = append(checks, check{kind, status, b})
			}
		}
	}
	input, _ := json.Marshal(checks)
	script := fmt.Sprintf(`(() => {
%s
const payload = {workshop: %q, quantity: %d}, target = %q;
return %s.map((c) => {
  let body;
  try { body = c.body === "" ? null : JSON.parse(c.body); } catch (e) { body = undefined; }
  const r = {status: c.status, body};
  const o = c.kind === "reserve" ? authoritative(r, payload) : opAuthoritative(r, {kind: c.kind, target});
  return o ? o.status : "";
});
})()`, ruleSource(t), req.Workshop, req.Quantity, id, input)

	ctx, cancel := chromedp.NewContext(browserCtx, chromedp.WithNewBrowserContext())
	defer cancel()
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](script))
	if err != nil {
		t.Fatalf("evaluate the page's rule: %v", err)
	}
	if len(got) != len(checks) {
		t.Fatalf("the page's rule gave %d results for %d answers", len(got), len(checks))
	}
	ops := map[engine.OperationKind]client.Operation{
		engine.OperationReserve: client.Reserving(req),
		engine.OperationCancel:  client.Cancelling(id),
		engine.OperationConfirm: client.Confirming(id),
		engine.OperationRelease: client.Releasing(id),
	}
	settled := map[string]bool{} // "kind status" of every answer the table holds.
	for i, c := range checks {
		op := ops[c.Kind]
		ct := api.MediaJSON
		if strings.Contains(c.Body, `"code"`) {
			ct = api.MediaProblem
		}
		res := client.Classify(op, client.Reply{Status: c.Status, ContentType: ct, Body: []byte(c.Body)})
		want := ""
		if res.Decided {
			want = res.Answer.Status
			settled[string(c.Kind)+" "+want] = true
		}
		if got[i] != want {
			t.Errorf("%s answered %d %s: the page settles on %q, Classify on %q", c.Kind, c.Status, c.Body, got[i], want)
		}
	}
	// The table holds every authoritative answer of every kind, so that the
	// comparison cannot pass by missing one.
	for kind := range ops {
		for _, status := range engine.AnswerStatuses() {
			if api.StatusOfAnswer(kind, status) != 0 && !settled[string(kind)+" "+status] {
				t.Errorf("the table has no authoritative %s answer %q", kind, status)
			}
		}
	}
}
