package browsertest_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/tools/testop/testoptest"
)

// testopBin is the test OpenID Provider (internal/tools/testop), built by
// TestMain.
var testopBin string

// provider is a running test OpenID Provider.
type provider struct {
	issuer string
}

// startProvider runs the test OpenID Provider on addr (a loopback address,
// port 0 for any) until the test ends.
func startProvider(t *testing.T, addr string) *provider {
	t.Helper()
	return &provider{issuer: testoptest.Start(t, testopBin, addr)}
}

// hook calls a test hook of the provider.
func (p *provider) hook(t *testing.T, path string, form url.Values) {
	t.Helper()
	resp, err := http.PostForm(p.issuer+"/testop/"+path, form)
	if err != nil {
		t.Fatalf("test provider hook %s: %v", path, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("test provider hook %s: %s", path, resp.Status)
	}
}

// freeLoopbackAddr returns a loopback address with a port that was free a
// moment ago, for a process whose URL must be known before it starts.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startOIDCDaemon runs reserved with sign-in through the provider at
// issuer, whose reserve-admins group makes admins.
func startOIDCDaemon(t *testing.T, issuer string) *daemon {
	t.Helper()
	needBrowser(t)
	secret := filepath.Join(t.TempDir(), "client-secret")
	if err := os.WriteFile(secret, []byte("reserve-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopbackAddr(t)
	return startDaemonWith(t, "--listen", addr, "--public-url", "http://"+addr,
		"--oidc-issuer", issuer, "--oidc-client-id", "reserve", "--oidc-client-secret-file", secret,
		"--oidc-admin-group", "reserve-admins", "--oidc-name", "Example SSO")
}

// callbacks records the URLs of the callback navigations of a tab.
type callbacks struct {
	mu   sync.Mutex
	urls []string
}

func (tb *tab) recordCallbacks() *callbacks {
	c := &callbacks{}
	if err := chromedp.Listen(tb.ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok && strings.Contains(e.Request.URL, "/oidc/callback") {
			c.mu.Lock()
			c.urls = append(c.urls, e.Request.URL)
			c.mu.Unlock()
		}
	}); err != nil {
		tb.t.Fatalf("listen for callbacks: %v", err)
	}
	return c
}

func (c *callbacks) last(t *testing.T) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.urls) == 0 {
		t.Fatal("no callback navigation was seen")
	}
	return c.urls[len(c.urls)-1]
}

// toProvider opens the signed-out page, checks its button, and follows it
// to the provider's login page.
func (tb *tab) toProvider() {
	tb.t.Helper()
	tb.openSignedOut()
	tb.poll("the provider's button", `!document.getElementById("oidc-signin").hidden`)
	if got := eval[string](tb, `document.getElementById("oidc-start").textContent`); got != "Sign in with Example SSO" {
		tb.t.Errorf("the button says %q", got)
	}
	tb.clickToLoad("oidc-start")
	tb.poll("the provider's login page", `document.getElementById("password") !== null`)
}

// atProvider logs in on the provider's login page and waits until the
// browser has left the provider.
func (tb *tab) atProvider(user string) {
	tb.t.Helper()
	tb.do("log in at the provider",
		chromedp.SendKeys(chromedp.ID("username"), user),
		chromedp.SendKeys(chromedp.ID("password"), "secret"),
	)
	if _, err := chromedp.RunResponse(tb.ctx, chromedp.Submit(chromedp.ID("password"))); err != nil {
		tb.t.Fatalf("submit the provider's login: %v", err)
	}
	tb.settle("back at reserved", func(href string) bool { return strings.HasPrefix(href, tb.d.url) })
}

// openOIDCTab is openTab for a tab that visits the test provider, whose
// missing favicon is no problem of the form's.
func openOIDCTab(t *testing.T, d *daemon) *tab {
	tb := openTab(t, d)
	t.Cleanup(func() {
		tb.allowProblems(func(p string) bool { return strings.Contains(p, "/favicon.ico") && !strings.Contains(p, d.url) })
	})
	return tb
}

// settle waits until the tab's address satisfies ok, through the
// navigations of a sign-in, during which an evaluation can fail.
func (tb *tab) settle(what string, ok func(href string) bool) {
	tb.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		href, err := chromedp.Run(tb.ctx, chromedp.Evaluate[string](`document.readyState === "complete" ? location.href : ""`))
		if err == nil && href != "" && ok(href) {
			return
		}
		if time.Now().After(deadline) {
			tb.t.Fatalf("wait until %s: at %q (%v)", what, href, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// allowProblems forgets the page's problems that expected reports as
// expected, and keeps the others.
func (tb *tab) allowProblems(expected func(string) bool) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.problems = slices.DeleteFunc(tb.problems, expected)
}

// oidcSignIn signs in through the provider as user and waits until the
// form is ready.
func (tb *tab) oidcSignIn(user string) {
	tb.t.Helper()
	tb.toProvider()
	tb.atProvider(user)
	tb.settle("the form", func(href string) bool { return href == tb.d.url+"/" })
	tb.waitReady()
	if u := eval[string](tb, "location.href"); u != tb.d.url+"/" {
		tb.t.Fatalf("after sign-in the tab is at %s, want %s/", u, tb.d.url)
	}
}

// whoAmIOnPage is GET /api/v1/whoami with the tab's session.
func (tb *tab) whoAmIOnPage() map[string]any {
	tb.t.Helper()
	raw, err := chromedp.Run(tb.ctx, chromedp.Evaluate[string](`fetch("/api/v1/whoami", {headers: {Authorization: "Bearer " + sessionStorage.getItem("reserve.session")}}).then(r => r.text())`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		tb.t.Fatalf("whoami: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		tb.t.Fatalf("whoami answered %s", raw)
	}
	return m
}

// refused checks that the tab shows the refusal page with title and
// holds no session.
func (tb *tab) refused(what, title string) {
	tb.t.Helper()
	tb.settle(what+": the refusal page", func(href string) bool { return strings.Contains(href, "/oidc/callback") })
	tb.allowProblems(func(p string) bool {
		return strings.Contains(p, "/oidc/callback") && strings.Contains(p, "answered 40") || strings.Contains(p, "status of 40") && strings.Contains(p, "/oidc/callback")
	})
	if got := eval[string](tb, `document.querySelector("h1").textContent`); got != title {
		tb.t.Errorf("%s: the page says %q, want %q", what, got, title)
	}
	if s := eval[string](tb, `String(sessionStorage.getItem("reserve.session"))`); s != "null" {
		tb.t.Errorf("%s: the tab holds a session %q", what, s)
	}
	if n := eval[int](tb, `document.querySelectorAll("meta[http-equiv=refresh]").length`); n != 0 {
		tb.t.Errorf("%s: the refusal page moves on to a login", what)
	}
}

// TestOIDCSignIn: a person signs in through the provider's login page,
// reserves and signs out; the admin group makes an admin, the verified
// email and the name are shown by whoami; bob is another actor without an
// email (his is not verified); alice renamed at the provider keeps her
// actor; a rotated provider key is fetched; a replayed callback opens
// nothing.
func TestOIDCSignIn(t *testing.T) {
	op := startProvider(t, "127.0.0.1:0")
	d := startOIDCDaemon(t, op.issuer)

	tb := openOIDCTab(t, d)
	cb := tb.recordCallbacks()
	tb.openSignedOut()
	tb.poll("the provider's button", `!document.getElementById("oidc-signin").hidden`)
	if _, err := loadAxe(); err == nil || os.Getenv("RESERVE_CI") != "" {
		checkAxe(t, tb.ctx, "the signed-out page with a provider")
	} else {
		t.Logf("SKIPPING the accessibility check of the signed-out page: %v", err)
	}
	tb.setLang("de")
	if got := eval[string](tb, `document.getElementById("oidc-start").textContent`); got != "Anmelden mit Example SSO" {
		t.Errorf("the German button says %q", got)
	}
	tb.setLang("en")
	tb.oidcSignIn("alice")
	who := tb.whoAmIOnPage()
	want := map[string]any{"actor": "alice", "admin": true, "subject_kind": "oidc", "display_name": "Alice Liddell", "email": "alice@example.org"}
	for k, v := range want {
		if who[k] != v {
			t.Errorf("alice's whoami: %s = %v, want %v (all: %v)", k, who[k], v, who)
		}
	}
	reservation := tb.reserve(1)
	tb.clickToLoad("sign-out")
	tb.poll("signed out", `!document.getElementById("signin").hidden`)

	tb.do("replay the callback", chromedp.Navigate(cb.last(t)))
	tb.refused("a replayed callback", "This sign-in has expired")

	bob := openOIDCTab(t, d)
	bob.oidcSignIn("bob")
	who = bob.whoAmIOnPage()
	if who["actor"] != "bob" || who["admin"] != false || who["email"] != nil || who["display_name"] != "Bob Builder" {
		t.Errorf("bob's whoami: %v, want actor bob, no admin, no email (not verified)", who)
	}
	// The provider's name is stored in the profile: a session that the
	// provider opened no part of says it too.
	if got, _ := profileOf(t, d, d.as(t, "bob")); got != "Bob Builder" {
		t.Errorf("bob's stored display name = %q, want Bob Builder from the provider", got)
	}
	// A name alice chooses stays when she signs in again.
	if resp, body, err := d.as(t, "alice").Do(d.ctx(t), http.MethodPut, api.PathMe, http.Header{"Content-Type": {api.MediaJSON}}, []byte(`{"display_name":"Alice L."}`)); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("alice chooses a display name: %v %s", err, body)
	}

	op.hook(t, "rename", url.Values{"id": {"alice"}, "username": {"Alice.Renamed"}})
	op.hook(t, "rotate", nil)
	again := openOIDCTab(t, d)
	again.oidcSignIn("Alice.Renamed")
	if who := again.whoAmIOnPage(); who["actor"] != "alice" || who["display_name"] != "Alice L." {
		t.Errorf("alice renamed at the provider (and signing with a new key) is %v named %v, want still alice named Alice L.", who["actor"], who["display_name"])
	}
	again.poll("alice's reservation in her list", fmt.Sprintf(`document.getElementById("reservation-%s") !== null`, reservation))
}

// TestOIDCRefusesBadTokens: an ID token signed by a key the provider does
// not publish, one with another nonce and one that has expired are each
// refused with a page that says so, and no session is opened.
func TestOIDCRefusesBadTokens(t *testing.T) {
	op := startProvider(t, "127.0.0.1:0")
	d := startOIDCDaemon(t, op.issuer)
	for _, mode := range []string{"foreign-key", "wrong-nonce", "expired"} {
		op.hook(t, "mode", url.Values{"id_token": {mode}})
		tb := openOIDCTab(t, d)
		tb.toProvider()
		tb.atProvider("bob")
		tb.refused(mode, "The sign-in could not be verified")
	}
	op.hook(t, "mode", url.Values{"id_token": {"normal"}})
	tb := openOIDCTab(t, d)
	tb.oidcSignIn("bob")
}

// TestOIDCProviderDownAtStart: reserved starts while its provider is
// down; a sign-in then answers 503 with Retry-After, and once the provider
// is up the next one goes to it.
func TestOIDCProviderDownAtStart(t *testing.T) {
	addr := freeLoopbackAddr(t)
	d := startOIDCDaemon(t, "http://"+addr)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	start := func() *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, d.url+"/oidc/start", nil)
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := start(); resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("sign-in with the provider down: %s, Retry-After %q; want 503 with Retry-After", resp.Status, resp.Header.Get("Retry-After"))
	}
	op := startProvider(t, addr)
	resp := start()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || !strings.HasPrefix(loc, op.issuer+"/auth?") {
		t.Fatalf("sign-in with the provider up: %s to %q, want 302 to %s/auth", resp.Status, loc, op.issuer)
	}
}

// TestOIDCCallbackNeedsTheStartingBrowser: the provider's answer to a
// sign-in opens nothing in a browser that did not start it (no cookie of
// the flow: login CSRF, where another page sends a victim's browser to a
// callback of the attacker's own sign-in), and the flow is gone after it.
func TestOIDCCallbackNeedsTheStartingBrowser(t *testing.T) {
	op := startProvider(t, "127.0.0.1:0")
	d := startOIDCDaemon(t, op.issuer)
	daemonHost := hostOf(t, d.url)
	// The client follows the provider's redirects and stops at reserved's.
	c := &http.Client{CheckRedirect: func(r *http.Request, _ []*http.Request) error {
		if r.URL.Host == daemonHost {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	get := func(u string) (*http.Response, string) {
		t.Helper()
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		if _, err := bufio.NewReader(resp.Body).WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		return resp, b.String()
	}
	start, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Get(d.url + "/oidc/start")
	if err != nil {
		t.Fatal(err)
	}
	start.Body.Close()
	cookies := start.Cookies()
	if start.StatusCode != http.StatusFound || len(cookies) != 1 || cookies[0].Path != "/oidc/callback" || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteLaxMode {
		t.Fatalf("start: %s with cookies %v; want 302 with one HttpOnly SameSite=Lax cookie for /oidc/callback", start.Status, cookies)
	}
	_, login := get(start.Header.Get("Location"))
	_, rest, _ := strings.Cut(login, `name="id" value="`)
	id, _, _ := strings.Cut(rest, `"`)
	resp, err := c.PostForm(op.issuer+"/login/username", url.Values{"id": {id}, "username": {"bob"}, "password": {"secret"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	callback := resp.Header.Get("Location")
	if !strings.HasPrefix(callback, d.url+"/oidc/callback?") {
		t.Fatalf("the provider sent the browser to %q (%s), want reserved's callback", callback, resp.Status)
	}
	other, page := get(callback) // Without the cookie.
	if other.StatusCode != http.StatusForbidden || !strings.Contains(page, "Finish the sign-in in the browser that started it") || strings.Contains(page, "rlc_") {
		t.Errorf("the callback in another browser: %s\n%s\nwant 403 explaining it, with no login code", other.Status, page)
	}
	req, _ := http.NewRequest(http.MethodGet, callback, nil)
	req.AddCookie(cookies[0])
	again, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	again.Body.Close()
	if again.StatusCode != http.StatusBadRequest {
		t.Errorf("the callback again, now with the cookie: %s, want 400 (the flow was used)", again.Status)
	}
}
