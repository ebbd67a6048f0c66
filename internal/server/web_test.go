package server_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server/servertest"
)

// browserClient sends raw requests over TCP like a browser would, without
// following redirects, so the tests see the 303 answers themselves.
var browserClient = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// browserDo sends one request to the harness's TCP listener with header and
// body and returns the answer and its body.
func browserDo(t *testing.T, h *servertest.Harness, method, path string, header http.Header, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, h.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := browserClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(data)
}

// signIn gets a login link over the socket for actor ("" for the caller)
// and redeems it, returning the session cookie.
func signIn(t *testing.T, h *servertest.Harness, actor string) *http.Cookie {
	t.Helper()
	link, err := h.SocketClient().LoginLink(context.Background(), actor)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(link.URL, h.URL+"/login?code=") {
		t.Fatalf("login link %q is not under %s/login", link.URL, h.URL)
	}
	u, err := url.Parse(link.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp, body := browserDo(t, h, http.MethodGet, u.RequestURI(), nil, "")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("login: %d Location %q, want 303 to /; body %s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	for _, c := range resp.Cookies() {
		if c.Name == api.SessionCookie {
			return c
		}
	}
	t.Fatalf("login set no %s cookie: %v", api.SessionCookie, resp.Header["Set-Cookie"])
	return nil
}

func TestWebAssetsOnTCP(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	for path, ctype := range map[string]string{
		"/":            "text/html; charset=utf-8",
		"/app.js":      "text/javascript; charset=utf-8",
		"/style.css":   "text/css; charset=utf-8",
		"/favicon.svg": "image/svg+xml",
	} {
		resp, body := browserDo(t, h, http.MethodGet, path, nil, "")
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != ctype || body == "" {
			t.Errorf("GET %s: %d %q with %d bytes, want 200 %q", path, resp.StatusCode, resp.Header.Get("Content-Type"), len(body), ctype)
		}
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.HasPrefix(csp, "default-src 'self'") || strings.Contains(csp, "unsafe") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("GET %s: headers %v", path, resp.Header)
		}
	}
	// The page loads nothing from elsewhere.
	_, index := browserDo(t, h, http.MethodGet, "/", nil, "")
	if strings.Contains(index, "://") || strings.Contains(index, "style=") || strings.Contains(index, "<script>") {
		t.Errorf("index.html refers to another origin or has inline code:\n%s", index)
	}
	// API answers on TCP carry the headers too.
	resp, _ := browserDo(t, h, http.MethodGet, api.PathWhoAmI, nil, "")
	if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("whoami on TCP: headers %v", resp.Header)
	}

	t.Run("NotOnSocket", func(t *testing.T) {
		for _, path := range []string{"/", "/app.js", "/login?code=x"} {
			resp, body := send(t, h, call{via: viaSocket, method: http.MethodGet, path: path})
			wantProblem(t, resp, body, http.StatusNotFound, engine.CodeNotFound)
		}
	})
}

func TestBrowserSession(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	me, err := h.SocketClient().WhoAmI(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cookie := signIn(t, h, "")
	if !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/" || cookie.MaxAge <= 0 || cookie.Expires.IsZero() || len(cookie.Value) < 32 {
		t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict, Path=/, Max-Age and Expires, a long random value", cookie)
	}
	withCookie := http.Header{"Cookie": {cookie.String()}}

	resp, body := browserDo(t, h, http.MethodGet, api.PathWhoAmI, withCookie, "")
	if want := `{"actor":"` + me.Actor + `","admin":false}`; resp.StatusCode != http.StatusOK || strings.TrimSpace(body) != want {
		t.Errorf("whoami with the cookie: %d %s, want %s (a session is never an admin)", resp.StatusCode, body, want)
	}

	t.Run("CodeWorksOnce", func(t *testing.T) {
		link, err := h.SocketClient().LoginLink(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(link.URL)
		browserDo(t, h, http.MethodGet, u.RequestURI(), nil, "")
		for _, path := range []string{u.RequestURI(), "/login?code=rlc_nonsense", "/login"} {
			resp, body := browserDo(t, h, http.MethodGet, path, nil, "")
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "login link is not valid") || resp.Header["Set-Cookie"] != nil {
				t.Errorf("GET %s: %d, cookies %v, body %s; want 400 with an explanation and no session", path, resp.StatusCode, resp.Header["Set-Cookie"], body)
			}
		}
	})

	t.Run("AdminLinkForAnotherActor", func(t *testing.T) {
		c := signIn(t, h, "bob")
		resp, body := browserDo(t, h, http.MethodGet, api.PathWhoAmI, http.Header{"Cookie": {c.String()}}, "")
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"actor":"bob"`) {
			t.Errorf("whoami as bob: %d %s", resp.StatusCode, body)
		}
	})

	t.Run("NoLinkOverTCP", func(t *testing.T) {
		resp, body := send(t, h, call{via: h.Admin, method: http.MethodPost, path: api.PathLoginLinks, body: `{}`})
		wantProblem(t, resp, body, http.StatusForbidden, engine.CodeForbidden)
	})

	t.Run("SessionIsNoAdmin", func(t *testing.T) {
		hd := http.Header{"Cookie": {cookie.String()}, "Content-Type": {api.MediaJSON}}
		resp, body := browserDo(t, h, http.MethodPut, api.WorkshopPath("w-new"), hd, `{"capacity":1,"max_quantity":1,"title":"x"}`)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("PUT with a session: %d %s, want 403", resp.StatusCode, body)
		}
	})

	reserveWith := func(header http.Header, key string) (*http.Response, string) {
		hd := http.Header{api.HeaderIdempotencyKey: {key}, "Content-Type": {api.MediaJSON}}
		for k, v := range header {
			hd[k] = v
		}
		return browserDo(t, h, http.MethodPost, api.PathReservations, hd, `{"workshop":"workshop-demo","quantity":1}`)
	}

	t.Run("CrossOriginRefused", func(t *testing.T) {
		before, _ := h.Counts(t)
		evil := "http://127.0.0.1:1" // Another port of the same host: the same site, another origin.
		for name, hd := range map[string]http.Header{
			"SecFetchSite": {"Cookie": {cookie.String()}, "Sec-Fetch-Site": {"same-site"}, "Origin": {evil}},
			"OriginOnly":   {"Cookie": {cookie.String()}, "Origin": {evil}},
		} {
			resp, body := reserveWith(hd, "3f1d6f9e-1c2b-4d3e-8f4a-5b6c7d8e9f00")
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, `"code":"forbidden"`) {
				t.Errorf("%s: cross-origin POST got %d %s, want 403 forbidden", name, resp.StatusCode, body)
			}
		}
		resp, _ := browserDo(t, h, http.MethodPost, api.PathLogout, http.Header{"Cookie": {cookie.String()}, "Sec-Fetch-Site": {"cross-site"}}, "")
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("cross-site logout: %d, want 403", resp.StatusCode)
		}
		if after, _ := h.Counts(t); after != before {
			t.Errorf("reservations %d → %d after refused cross-origin requests", before, after)
		}
		if h.Logs.Find("request", "outcome", "cross_origin") == nil {
			t.Errorf("no request log line with outcome cross_origin:\n%s", h.Logs)
		}
	})

	t.Run("SameOriginAndBearer", func(t *testing.T) {
		resp, body := reserveWith(http.Header{"Cookie": {cookie.String()}, "Sec-Fetch-Site": {"same-origin"}, "Origin": {h.URL}}, "3f1d6f9e-1c2b-4d3e-8f4a-5b6c7d8e9f01")
		if resp.StatusCode != http.StatusCreated {
			t.Errorf("same-origin POST with the cookie: %d %s, want 201", resp.StatusCode, body)
		}
		resp, body = reserveWith(http.Header{"Authorization": {"Bearer " + h.Alice}}, "3f1d6f9e-1c2b-4d3e-8f4a-5b6c7d8e9f02")
		if resp.StatusCode != http.StatusCreated {
			t.Errorf("bearer POST without browser headers: %d %s, want 201", resp.StatusCode, body)
		}
	})

	t.Run("Logout", func(t *testing.T) {
		resp, _ := browserDo(t, h, http.MethodPost, api.PathLogout, http.Header{"Cookie": {cookie.String()}, "Sec-Fetch-Site": {"same-origin"}, "Origin": {h.URL}}, "")
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
			t.Errorf("logout: %d to %q, want 303 to /", resp.StatusCode, resp.Header.Get("Location"))
		}
		expired := false
		for _, c := range resp.Cookies() {
			expired = expired || (c.Name == api.SessionCookie && c.MaxAge < 0)
		}
		if !expired {
			t.Errorf("logout did not expire the cookie: %v", resp.Header["Set-Cookie"])
		}
		resp, body := browserDo(t, h, http.MethodGet, api.PathWhoAmI, withCookie, "")
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("whoami with the ended session: %d %s, want 401", resp.StatusCode, body)
		}
	})
}
