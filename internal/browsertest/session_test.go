package browsertest_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/client"
)

// sessionKey is where the form keeps its tab's session in sessionStorage.
const sessionKey = "reserve.session"

// sessionSecret matches a browser session anywhere in a text.
var sessionSecret = regexp.MustCompile(`rss_[A-Za-z0-9_-]{43}`)

// session redeems a fresh login code of actor over TCP, as a browser
// outside the test's tab would, and returns the session.
func (d *daemon) session(t *testing.T, actor string) string {
	t.Helper()
	s, err := (&client.Client{BaseURL: d.url}).OpenSession(d.ctx(t), codeOf(t, d.loginURL(t, actor)))
	if err != nil {
		t.Fatalf("open a session of %s: %v", actor, err)
	}
	return s.Session
}

// whoAmI asks the daemon over TCP who a request with header is, and
// returns the status and the actor it names.
func (d *daemon) whoAmI(t *testing.T, header http.Header) (int, string) {
	t.Helper()
	resp, body, err := (&client.Client{BaseURL: d.url}).Do(d.ctx(t), http.MethodGet, api.PathWhoAmI, header, nil)
	if err != nil {
		t.Fatalf("whoami: %v", err)
	}
	m := regexp.MustCompile(`"actor":"([^"]*)"`).FindStringSubmatch(string(body))
	if m == nil {
		return resp.StatusCode, ""
	}
	return resp.StatusCode, m[1]
}

// codeOf returns the code of a login link.
func codeOf(t *testing.T, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("code")
}

// seenRequest is what a server on another port learnt from one request of
// the victim's browser.
type seenRequest struct {
	url    string
	header http.Header
}

// otherPort is a web server on another port of the daemon's host, run by
// someone who wants the victim's session or wants the victim to use theirs.
// It records every request the browser sends it. /plant sets cookies named
// as a session cookie would be, carrying plant; /go?to=URL sends the
// browser on to URL from its page, as a link or a script of any web page
// can.
type otherPort struct {
	*httptest.Server
	plant string

	mu   sync.Mutex
	seen []seenRequest
}

func startOtherPort(t *testing.T, plant string) *otherPort {
	t.Helper()
	o := &otherPort{plant: plant}
	o.Server = httptest.NewServer(http.HandlerFunc(o.serve))
	t.Cleanup(o.Close)
	return o
}

func (o *otherPort) serve(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	o.seen = append(o.seen, seenRequest{url: r.URL.String(), header: r.Header.Clone()})
	o.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	switch r.URL.Path {
	case "/plant":
		// Host-only cookies of 127.0.0.1 for every path the form uses: the
		// browser sends them to the daemon's port as well.
		for _, path := range []string{"/", "/api", "/api/v1"} {
			for _, name := range []string{"reserved_session", "session"} {
				http.SetCookie(w, &http.Cookie{Name: name, Value: o.plant, Path: path})
			}
		}
		fmt.Fprint(w, `<!doctype html><title>planted</title>`)
	case "/go":
		fmt.Fprintf(w, `<!doctype html><title>elsewhere</title><script>location.href = %q;</script>`, r.URL.Query().Get("to"))
	default:
		fmt.Fprint(w, `<!doctype html><title>elsewhere</title>`)
	}
}

// requests returns what the server has seen.
func (o *otherPort) requests() []seenRequest {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]seenRequest(nil), o.seen...)
}

// A server on another port of the daemon's host gets no credential of the
// form's from the victim's browser, and cannot make the form the
// attacker's: browsers scope cookies by host, not port, so such a server
// sees every cookie of the host and can set them, and its pages can send
// the browser anywhere. The victim signs in, then visits the other port,
// which records what the browser sends it and replays every cookie
// against the daemon, plants cookies holding the attacker's own session,
// and sends the victim's tab to the attacker's login code in every form a
// page might take one from. The form stays the victim's: its actor, and
// the reservation it makes; and the attacker's code was never used.
func TestOtherPortCannotStealOrPlantASession(t *testing.T) {
	d := startDaemon(t)
	attacker := d.session(t, "mallory")
	attackerLink := d.loginURL(t, "mallory")
	attackerCode := codeOf(t, attackerLink)
	other := startOtherPort(t, attacker)
	if hostOf(t, other.URL) == hostOf(t, d.url) || !strings.HasPrefix(other.URL, "http://127.0.0.1:") || !strings.HasPrefix(d.url, "http://127.0.0.1:") {
		t.Fatalf("the other server %s must be on another port of the daemon's host %s", other.URL, d.url)
	}

	tb := openTab(t, d)
	tb.signIn("alice")
	victim := eval[string](tb, `sessionStorage.getItem("`+sessionKey+`") || ""`)

	// The victim visits the other port, which plants its cookies, and is
	// then sent from there to the attacker's code: as the login link (the
	// daemon refuses a login link followed from another page), and with
	// the code where no server sees it or at another path.
	tb.do("visit the other port", chromedp.Navigate(other.URL+"/plant"))
	tb.poll("the other port's page", `document.title === "planted"`)
	for _, target := range []string{
		attackerLink,
		d.url + "/#login=" + attackerCode,
		d.url + "/#code=" + attackerCode,
		d.url + "/?code=" + attackerCode,
		d.url + "/?login=" + attackerCode,
	} {
		tb.do("sent on by the other port", chromedp.Navigate(other.URL+"/go?to="+url.QueryEscape(target)))
		tb.poll("the tab at "+target, fmt.Sprintf(`location.href === %q && document.readyState === "complete"`, target))
		if target == attackerLink {
			if title := eval[string](tb, `document.title`); title != "Open the login link yourself" {
				t.Errorf("the attacker's login link, followed from the other port, shows %q, want the refusal", title)
			}
			// The refusal is a 403 document, which the tab's watch notes.
			for _, p := range tb.takeProblems() {
				if !strings.Contains(p, "403") {
					t.Errorf("the page had a problem: %s", p)
				}
			}
			continue
		}
		tb.waitReady()
		if got := eval[string](tb, `document.getElementById("actor").textContent`); got != "Signed in as alice" {
			t.Errorf("sent to %s by the other port, the form shows %q, want Signed in as alice", target, got)
		}
	}

	// Back at the form, typed by the victim: still the victim's, and so is
	// what it reserves.
	tb.do("back to the form", chromedp.Navigate(d.url+"/"))
	tb.waitReady()
	if got := eval[string](tb, `document.getElementById("actor").textContent`); got != "Signed in as alice" {
		t.Errorf("after the other port's visit the form shows %q, want Signed in as alice", got)
	}
	if got := eval[string](tb, `sessionStorage.getItem("`+sessionKey+`") || ""`); got != victim {
		t.Errorf("the tab's session changed from %q to %q", victim, got)
	}
	id := tb.reserve(1)
	if r := d.reservation(t, id); r.Actor != "alice" {
		t.Errorf("the reservation the form made belongs to %q, want alice", r.Actor)
	}

	// Nothing the other port saw works against the daemon, and none of it
	// is the victim's session.
	seen := other.requests()
	if len(seen) < 6 {
		t.Fatalf("the other port saw %d requests, want its page loads at least", len(seen))
	}
	cookies := 0
	for _, r := range seen {
		if victim != "" && strings.Contains(fmt.Sprint(r.url, r.header), victim) {
			t.Errorf("the other port got the victim's session: %s %v", r.url, r.header)
		}
		for _, c := range r.header["Cookie"] {
			cookies++
			if status, actor := d.whoAmI(t, http.Header{"Cookie": {c}}); status != http.StatusUnauthorized {
				t.Errorf("the other port replayed the cookies %q: %d as %q, want 401", c, status, actor)
			}
		}
		for _, s := range sessionSecret.FindAllString(fmt.Sprint(r.url, r.header), -1) {
			if s == attacker {
				continue
			}
			if status, actor := d.whoAmI(t, http.Header{"Authorization": {"Bearer " + s}}); status != http.StatusUnauthorized {
				t.Errorf("the other port replayed the session %q: %d as %q, want 401", s, status, actor)
			}
		}
	}
	if cookies == 0 {
		t.Errorf("the browser sent the other port no cookie at all, not even the planted ones: this test proves nothing")
	}
	// The browser never redeemed the attacker's code: it still works.
	if _, err := (&client.Client{BaseURL: d.url}).OpenSession(d.ctx(t), attackerCode); err != nil {
		t.Errorf("the attacker's code after the visit: %v, want it unused", err)
	}
}

// A login link that was used already signs nobody in: the page says why and
// how to get a new one, keeps no session, and offers only the sign-in
// explanation; in a tab that was signed in, the failed link leaves that
// sign-in alone.
func TestUsedLoginLinkExplained(t *testing.T) {
	d := startDaemon(t)
	link := d.loginURL(t, "")
	first := openTab(t, d)
	first.do("sign in", chromedp.Navigate(link))
	first.waitReady()

	explained := func(tb *tab) {
		t.Helper()
		tb.poll("the explanation", `!document.getElementById("page-error").hidden`)
		if msg := eval[string](tb, `document.getElementById("page-error").textContent`); !strings.Contains(msg, "This login link is not valid") || !strings.Contains(msg, "reservectl login-link") {
			t.Errorf("the used link shows %q, want that it is not valid and how to get a new one", msg)
		}
		if u := eval[string](tb, "location.href"); u != d.url+"/" {
			t.Errorf("after the used link the tab is at %s, want %s/", u, d.url)
		}
	}
	second := openTab(t, d)
	second.do("open the used link", chromedp.Navigate(link))
	explained(second)
	second.poll("the sign-in explanation", `!document.getElementById("signin").hidden`)
	if f := second.form(); f.FormShown || eval[bool](second, `sessionStorage.getItem("`+sessionKey+`") !== null`) {
		t.Errorf("after the used link: %+v, want no form and no session", f)
	}

	first.do("open the used link again", chromedp.Navigate(link))
	explained(first)
	first.waitReady()
	if f := first.form(); !f.FormShown {
		t.Errorf("the signed-in tab after a used link: %+v, want its form", f)
	}
}
