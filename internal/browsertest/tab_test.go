package browsertest_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/reserve/reserve/internal/api"
)

// tab is one browser tab in a browser context of its own (its own cookies
// and sessionStorage), watching everything the page does.
type tab struct {
	t   *testing.T
	ctx context.Context
	d   *daemon

	mu       sync.Mutex
	problems []string // Console errors, exceptions, failed asset loads.
	types    map[network.RequestID]network.ResourceType
	methods  map[network.RequestID]string
	posts    int               // Reservation POSTs the page sent.
	cancels  int               // Cancellation POSTs the page sent.
	cookies  []string          // The Cookie header of each of them.
	paused   []fetch.RequestID // Requests held by the Fetch domain.
	answers  []answer          // Every answer the page got, in order.
}

// answer is one HTTP answer that the page got.
type answer struct {
	method, url string
	status      int64
	kind        network.ResourceType
}

func (a answer) String() string {
	return fmt.Sprintf("%s %s (%s) answered %d", a.method, a.url, a.kind, a.status)
}

// openTab opens a tab for d. When the test ends, it fails the test for any
// console error, uncaught exception or failed asset load the page had (the
// browser suite's test 8), unless the test took them with takeProblems.
func openTab(t *testing.T, d *daemon) *tab {
	t.Helper()
	needBrowser(t)
	ctx, cancel := chromedp.NewContext(browserCtx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	tb := &tab{t: t, d: d, types: map[network.RequestID]network.ResourceType{}, methods: map[network.RequestID]string{}}
	if err := chromedp.Listen(ctx, tb.event); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	tctx, tcancel := context.WithTimeout(ctx, 2*waitTimeout)
	t.Cleanup(tcancel)
	tb.ctx = tctx
	t.Cleanup(func() {
		for _, p := range tb.takeProblems() {
			t.Errorf("the page had a problem: %s", p)
		}
	})
	return tb
}

// event records what a test needs to know about the page. It runs on
// chromedp's reading goroutine, so it only takes notes.
func (tb *tab) event(ev any) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			tb.problems = append(tb.problems, fmt.Sprintf("console.%s %s", ev.Type, argsText(ev.Args)))
		}
	case *runtime.EventExceptionThrown:
		text := ev.ExceptionDetails.Text
		if ev.ExceptionDetails.Exception != nil {
			text += " " + ev.ExceptionDetails.Exception.Description
		}
		tb.problems = append(tb.problems, "uncaught exception: "+text)
	case *log.EventEntryAdded:
		// The browser logs every API answer >= 400 (a 401 for a session
		// that has ended, a 409 unavailable) as an error of the network;
		// the page handles those. Any other error entry is a problem.
		e := ev.Entry
		if e.Level == log.EntryLevelError && !(e.Source == log.EntrySourceNetwork && tb.types[e.NetworkRequestID] == network.ResourceTypeFetch) {
			tb.problems = append(tb.problems, fmt.Sprintf("console %s error: %s (%s)", e.Source, e.Text, e.URL))
		}
	case *network.EventRequestWillBeSent:
		tb.types[ev.RequestID] = ev.Type
		tb.methods[ev.RequestID] = ev.Request.Method
		if ev.Request.Method == "POST" && strings.HasSuffix(ev.Request.URL, api.PathReservations) {
			tb.posts++
		}
		if ev.Request.Method == "POST" && strings.HasPrefix(ev.Request.URL, tb.d.url+api.PathReservations+"/") && strings.HasSuffix(ev.Request.URL, "/cancel") {
			tb.cancels++
		}
	case *network.EventRequestWillBeSentExtraInfo:
		if c, ok := ev.Headers["Cookie"].(string); ok {
			tb.cookies = append(tb.cookies, c)
		}
	case *network.EventResponseReceived:
		tb.answers = append(tb.answers, answer{method: tb.methods[ev.RequestID], url: ev.Response.URL, status: ev.Response.Status, kind: ev.Type})
		if ev.Type != network.ResourceTypeFetch && ev.Response.Status >= 400 {
			tb.problems = append(tb.problems, fmt.Sprintf("%s %s answered %d", ev.Type, ev.Response.URL, ev.Response.Status))
		}
	case *network.EventLoadingFailed:
		if ev.Type != network.ResourceTypeFetch {
			tb.problems = append(tb.problems, fmt.Sprintf("%s load failed: %s", ev.Type, ev.ErrorText))
		}
	case *fetch.EventRequestPaused:
		tb.paused = append(tb.paused, ev.RequestID)
	}
}

func argsText(args []*runtime.RemoteObject) string {
	var parts []string
	for _, a := range args {
		if a.Description != "" {
			parts = append(parts, a.Description)
		} else {
			parts = append(parts, string(a.Value))
		}
	}
	return strings.Join(parts, " ")
}

// takeProblems returns the problems seen so far and forgets them.
func (tb *tab) takeProblems() []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	p := tb.problems
	tb.problems = nil
	return p
}

// problemsSoFar returns the problems seen so far and keeps them.
func (tb *tab) problemsSoFar() []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return append([]string(nil), tb.problems...)
}

// answersSoFar returns the answers the page got so far.
func (tb *tab) answersSoFar() []answer {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return append([]answer(nil), tb.answers...)
}

// sentPosts returns how many reservation POSTs the page has sent.
func (tb *tab) sentPosts() int {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return tb.posts
}

// sentCancels returns how many cancellation POSTs the page has sent.
func (tb *tab) sentCancels() int {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return tb.cancels
}

// pausedRequests returns the requests the Fetch domain holds or held.
func (tb *tab) pausedRequests() []fetch.RequestID {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return append([]fetch.RequestID(nil), tb.paused...)
}

// holdRequests makes the browser hold every request to a URL that matches
// pattern before it is sent (the DevTools Fetch domain, at the request
// stage), until releaseOnly lets it go: the page waits for an answer.
func (tb *tab) holdRequests(pattern string) {
	tb.t.Helper()
	if _, err := chromedp.Call(tb.ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{
		{URLPattern: pattern, RequestStage: fetch.RequestStageRequest},
	}}); err != nil {
		tb.t.Fatalf("enable the Fetch domain: %v", err)
	}
}

// doubleClick double-clicks element id as a person does: two presses of
// the mouse at its centre, the second with click count 2 at the same
// point, where it hits whatever the first click left there (a button that
// the first click hid is not clicked again).
func (tb *tab) doubleClick(id string) {
	tb.t.Helper()
	tb.node(id) // It is shown.
	at := eval[struct{ X, Y float64 }](tb, fmt.Sprintf(`(() => {
		const b = document.getElementById(%q);
		b.scrollIntoView({block: "nearest"});
		const r = b.getBoundingClientRect();
		return {X: r.left + r.width / 2, Y: r.top + r.height / 2};
	})()`, id))
	tb.do("double click #"+id, chromedp.MouseClickXY(at.X, at.Y, chromedp.ClickCount(1)), chromedp.MouseClickXY(at.X, at.Y, chromedp.ClickCount(2)))
}

// releaseOnly fails the test unless the browser holds exactly one request
// (of what), and lets that one go.
func (tb *tab) releaseOnly(what string) {
	tb.t.Helper()
	paused := tb.pausedRequests()
	if len(paused) != 1 {
		tb.t.Fatalf("the page sent %d %s for a double click, want 1", len(paused), what)
	}
	if _, err := chromedp.Call(tb.ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: paused[0]}); err != nil {
		tb.t.Fatalf("release the request: %v", err)
	}
}

// do runs actions and fails the test on an error.
func (tb *tab) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	if err := chromedp.Do(tb.ctx, actions...); err != nil {
		tb.t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		tb.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// signIn opens a login link for actor ("" for the test's own) and waits
// until the form is ready for a choice.
func (tb *tab) signIn(actor string) {
	tb.t.Helper()
	tb.do("sign in", chromedp.Navigate(tb.d.loginURL(tb.t, actor)))
	tb.waitReady()
	if u := eval[string](tb, "location.href"); u != tb.d.url+"/" {
		tb.t.Fatalf("after sign-in the tab is at %s, want %s/ (the code must leave the address bar)", u, tb.d.url)
	}
}

// openSignedOut opens the page without signing in and waits until it
// explains how to sign in.
func (tb *tab) openSignedOut() {
	tb.t.Helper()
	tb.do("open the page", chromedp.Navigate(tb.d.url+"/"))
	tb.poll("the sign-in explanation", `!document.getElementById("signin").hidden`)
}

// submitNew starts a new intent after a settled one ("Start another
// reservation" or "Change selection"), sends quantity places of workshop
// and waits until the status shows the message kind.
func (tb *tab) submitNew(workshop string, quantity int, kind string) {
	tb.t.Helper()
	tb.click("new-intent")
	tb.waitReady()
	tb.choose(workshop, quantity)
	tb.click("submit")
	tb.waitStatus(kind)
}

// waitReady waits until the page knows its actor and has loaded the
// workshops: from then on it does nothing by itself.
func (tb *tab) waitReady() {
	tb.t.Helper()
	tb.poll("the form is ready", `document.getElementById("workshop").options.length > 0 && !document.getElementById("actor").hidden && document.getElementById("status").dataset.kind !== "loading"`)
}

// poll waits until a JavaScript predicate holds in the page.
func (tb *tab) poll(what, predicate string) {
	tb.t.Helper()
	if _, err := chromedp.Run(tb.ctx, chromedp.Poll[chromedp.Void](predicate, chromedp.WithPollingTimeout(waitTimeout))); err != nil {
		tb.t.Fatalf("wait until %s: %v\nthe page: %+v", what, err, tb.form())
	}
}

// waitStatus waits until the status line shows the message kind (the text
// key in app.js: reserved, unavailable, unclear, resumed …).
func (tb *tab) waitStatus(kind string) {
	tb.t.Helper()
	tb.poll("status "+kind, fmt.Sprintf(`document.getElementById("status").dataset.kind === %q`, kind))
}

// leaveUnclear submits the form with the daemon set to garble its answer
// (after committing), which leaves the intent open: "outcome unclear".
func (tb *tab) leaveUnclear() {
	tb.t.Helper()
	tb.d.arm(tb.t, api.FaultGarbleResponse)
	tb.click("submit")
	tb.waitStatus("unclear")
}

// click clicks an element with a real mouse click at its centre.
func (tb *tab) click(id string) {
	tb.t.Helper()
	tb.do("click #"+id, chromedp.MouseClickNode(tb.node(id)))
}

// clickToLoad clicks an element that navigates, such as a form's submit
// button, and waits until the new page has loaded.
func (tb *tab) clickToLoad(id string) {
	tb.t.Helper()
	if _, err := chromedp.RunResponse(tb.ctx, chromedp.MouseClickNode(tb.node(id))); err != nil {
		tb.t.Fatalf("click #%s and load: %v", id, err)
	}
}

// node returns the visible element with id.
func (tb *tab) node(id string) *chromedp.Node {
	tb.t.Helper()
	nodes, err := chromedp.Run(tb.ctx, chromedp.Nodes(chromedp.ID(id), chromedp.NodeVisible))
	if err != nil {
		tb.t.Fatalf("find #%s: %v", id, err)
	}
	return nodes[0]
}

// choose sets the workshop and quantity as a user would: the change and
// input events run the page's handlers.
func (tb *tab) choose(workshop string, quantity int) {
	tb.t.Helper()
	tb.do("choose", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
		const w = document.getElementById("workshop"), q = document.getElementById("quantity");
		w.value = %q; w.dispatchEvent(new Event("change", {bubbles: true}));
		q.value = "%d"; q.dispatchEvent(new Event("input", {bubbles: true}));
	})()`, workshop, quantity)))
	if got := eval[string](tb, `document.getElementById("workshop").value`); got != workshop {
		tb.t.Fatalf("the page offers no workshop %s", workshop)
	}
}

// formState is what the page shows.
type formState struct {
	Kind             string `json:"kind"`
	Status           string `json:"status"`
	Notice           string `json:"notice"`
	Receipt          string `json:"receipt"`
	Submit           string `json:"submit"`
	SubmitHidden     bool   `json:"submitHidden"`
	SubmitDisabled   bool   `json:"submitDisabled"`
	NewIntent        string `json:"newIntent"`
	NewIntentHidden  bool   `json:"newIntentHidden"`
	Cancel           string `json:"cancel"`         // The list's cancel button of the form's reservation, "" when it shows none.
	CancelDisabled   bool   `json:"cancelDisabled"` // That button is disabled.
	CancelControls   int    `json:"cancelControls"` // Visible buttons anywhere on the page that cancel the form's reservation.
	ToReservation    bool   `json:"toReservation"`  // The form's link to its reservation in the list is shown.
	WorkshopDisabled bool   `json:"workshopDisabled"`
	QuantityDisabled bool   `json:"quantityDisabled"`
	Quantity         string `json:"quantity"`
	SignInShown      bool   `json:"signInShown"`
	FormShown        bool   `json:"formShown"`
	Focus            string `json:"focus"`
	Actor            string `json:"actor"`        // The signed-in actor, "" when there is none.
	Intent           string `json:"intent"`       // The actor's reserve.intent.<actor>, raw.
	CancelIntent     string `json:"cancelIntent"` // The cancellation of the form's reservation, JSON.
}

// form reads the page's state.
func (tb *tab) form() formState {
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[formState](`(() => {
		const $ = (id) => document.getElementById(id);
		const actor = $("actor").dataset.actor || "";
		const intent = actor && sessionStorage.getItem("reserve.intent." + actor);
		const reserved = intent && JSON.parse(intent).outcome;
		const ops = actor && JSON.parse(sessionStorage.getItem("reserve.ops." + actor) || "{}");
		const rid = reserved && reserved.reservation_id;
		const cancel = rid && ops["cancel:" + rid];
		const listed = rid && $("cancel-" + rid);
		const cancelTexts = ["Cancel reservation", "Retry cancellation", "Cancelling…", "Reservierung stornieren", "Stornierung erneut versuchen", "Wird storniert…"];
		const controls = [...document.querySelectorAll("button")].filter((b) => b.getClientRects().length > 0 &&
			cancelTexts.includes(b.textContent) && (!b.closest("li") || b.closest("li").id === "reservation-" + rid));
		const link = $("to-reservation");
		return {
			kind: $("status").dataset.kind || "", status: $("status").textContent,
			notice: $("notice").hidden ? "" : $("notice").textContent,
			receipt: $("receipt").hidden ? "" : $("receipt").textContent,
			submit: $("submit").textContent, submitHidden: $("submit").hidden, submitDisabled: $("submit").disabled,
			newIntent: $("new-intent").textContent, newIntentHidden: $("new-intent").hidden,
			cancel: listed && !listed.hidden ? listed.textContent : "", cancelDisabled: Boolean(listed && listed.disabled),
			cancelControls: controls.length, toReservation: Boolean(link && !link.hidden),
			workshopDisabled: $("workshop").disabled, quantityDisabled: $("quantity").disabled, quantity: $("quantity").value,
			signInShown: !$("signin").hidden, formShown: !$("reservation-form").hidden,
			focus: document.activeElement ? document.activeElement.id : "",
			actor, intent: intent || "",
			cancelIntent: cancel ? JSON.stringify(cancel) : "",
		};
	})()`))
	if err != nil {
		tb.t.Fatalf("read the form: %v", err)
	}
	return v
}

// intentKey returns the operation key of the signed-in actor's intent in
// sessionStorage.
func (tb *tab) intentKey() string {
	tb.t.Helper()
	return eval[string](tb, `JSON.parse(sessionStorage.getItem("reserve.intent." + document.getElementById("actor").dataset.actor)).operation`)
}

// storedIntent returns actor's intent in sessionStorage, raw ("" for none),
// whoever is signed in.
func (tb *tab) storedIntent(actor string) string {
	tb.t.Helper()
	return eval[string](tb, fmt.Sprintf(`sessionStorage.getItem(%q) || ""`, "reserve.intent."+actor))
}

// opKey returns the operation key of actor's kept operation of kind
// (cancel, confirm, release) on target, "" when there is none.
func (tb *tab) opKey(actor, kind, target string) string {
	tb.t.Helper()
	return eval[string](tb, fmt.Sprintf(`(() => {
		const op = JSON.parse(sessionStorage.getItem(%q) || "{}")[%q];
		return op ? op.operation : "";
	})()`, "reserve.ops."+actor, kind+":"+target))
}

// screenshot writes a PNG of the page to $RESERVE_SCREENSHOTS/name.png when
// that variable is set.
func (tb *tab) screenshot(name string) {
	tb.t.Helper()
	dir := os.Getenv("RESERVE_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(tb.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		tb.t.Fatal(err)
	}
}

// hostOf returns the host:port of a URL.
func hostOf(t *testing.T, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return p.Host
}
