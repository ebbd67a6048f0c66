package browsertest_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/web"
)

// ruleSource returns the part of web/app.js that decides which answers
// settle an intent: the reservation id pattern, the answer members and the
// functions from answerBody to cancelAuthoritative.
func ruleSource(t *testing.T) string {
	t.Helper()
	src, err := web.Assets.ReadFile("app.js")
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, re := range []string{
		`(?m)^  const RESERVATION_ID = .*;$`,
		`(?ms)^  const answerMembers = \{$.*?^  \};$`,
		`(?ms)^  function answerBody\(r\) \{$.*?^  \}$`,
		`(?ms)^  function authoritative\(r, payload\) \{$.*?^  \}$`,
		`(?ms)^  function cancelAuthoritative\(r, cancel\) \{$.*?^  \}$`,
	} {
		part := regexp.MustCompile(re).Find(src)
		if part == nil {
			t.Fatalf("web/app.js has no %s", re)
		}
		parts = append(parts, string(part))
	}
	return strings.Join(parts, "\n")
}

// TestBrowserRuleIsClassify evaluates the browser's rule for settling an
// intent in Chromium for every (HTTP status, body) of a table and compares
// it with client.Classify, the rule of every Go client: the page settles a
// reservation or a cancellation exactly on the answers that Classify calls
// that operation's authoritative answer, with the same status word. (The
// page never settles on a problem: a refusal leaves its intent open for a
// retry with the same key, which gets the same refusal.)
func TestBrowserRuleIsClassify(t *testing.T) {
	needBrowser(t)
	const id, other = "0190a1b2c3d4e5f60718293a4b5c6d7e", "0190a1b2c3d4e5f60718293a4b5c6d7f"
	req := engine.Request{Workshop: "w-1", Quantity: 2}
	bodies := []string{"", "{", "[]", "null", `"reserved"`}
	// The members of the answers to holds, confirmations and releases
	// are none of a reservation's or a cancellation's.
	extras := []string{"", `,"x":1`, `,"hold_id":"` + other + `"`, `,"expires_at":"2026-12-01T10:10:00Z"`}
	for _, status := range []string{engine.StatusReserved, engine.StatusUnavailable, engine.StatusCancelled, engine.StatusAlreadyCancelled, engine.StatusHeld, engine.StatusReleased} {
		for _, rid := range []string{id, other, "", "empty", "abc"} {
			for _, w := range []string{"w-1", "w-2", ""} {
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
	for _, code := range engine.Codes {
		bodies = append(bodies, `{"type":"about:blank","status":409,"code":"`+code+`","detail":"d"}`)
	}
	type check struct {
		Kind   engine.OperationKind `json:"kind"`
		Status int                  `json:"status"`
		Body   string               `json:"body"`
	}
	var checks []check
	for _, kind := range []engine.OperationKind{engine.OperationReserve, engine.OperationCancel} {
		for _, status := range []int{200, 201, 400, 401, 404, 408, 409, 410, 422, 429, 500, 503} {
			for _, b := range bodies {
				checks = append(checks, check{kind, status, b})
			}
		}
	}
	input, _ := json.Marshal(checks)
	script := fmt.Sprintf(`(() => {
%s
const payload = {workshop: %q, quantity: %d}, cancel = {reservation_id: %q};
return %s.map((c) => {
  let body;
  try { body = c.body === "" ? null : JSON.parse(c.body); } catch (e) { body = undefined; }
  const r = {status: c.status, body};
  const o = c.kind === "reserve" ? authoritative(r, payload) : cancelAuthoritative(r, cancel);
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
	for i, c := range checks {
		op := client.Reserving(req)
		if c.Kind == engine.OperationCancel {
			op = client.Cancelling(id)
		}
		ct := api.MediaJSON
		if strings.Contains(c.Body, `"code"`) {
			ct = api.MediaProblem
		}
		res := client.Classify(op, client.Reply{Status: c.Status, ContentType: ct, Body: []byte(c.Body)})
		want := ""
		if res.Decided {
			want = res.Answer.Status
		}
		if got[i] != want {
			t.Errorf("%s answered %d %s: the page settles on %q, Classify on %q", c.Kind, c.Status, c.Body, got[i], want)
		}
	}
}
