package server_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server/servertest"
	"github.com/reserve/reserve/web"
)

// browserClient sends raw requests over TCP like a browser would, without
// following redirects, so the tests see the 303 answers themselves.
var browserClient = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// browserDo sends one request to the harness's TCP listener with header and
// body and returns the answer and its body.
func browserDo(t *testing.T, h *servertest.Harness, method, path string, header http.Header, body string) (*http.Response, string) {
	t.Helper()
	resp, data := clientDo(t, browserClient, h, method, path, header, body)
	return resp, string(data)
}

// clientDo sends one request with client to the harness's TCP listener
// with header and body and returns the answer and its body.
func clientDo(t *testing.T, client *http.Client, h *servertest.Harness, method, path string, header http.Header, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, h.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, data
}

// loginCode gets a login link over the socket for actor ("" for the
// caller), checks that it leads to the form's page, and returns its code.
func loginCode(t *testing.T, h *servertest.Harness, actor string) string {
	t.Helper()
	link, err := h.SocketClient().LoginLink(context.Background(), actor)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(link.URL, h.URL+api.PathLogin+"?code=") {
		t.Fatalf("login link %q is not under %s%s", link.URL, h.URL, api.PathLogin)
	}
	u, err := url.Parse(link.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("code")
}

// redeem sends a login code to POST /api/v1/sessions as the form does
// (same origin), with header added, and returns the answer.
func redeem(t *testing.T, h *servertest.Harness, code string, header http.Header) (*http.Response, string) {
	t.Helper()
	hd := http.Header{"Content-Type": {api.MediaJSON}, "Sec-Fetch-Site": {"same-origin"}, "Origin": {h.URL}}
	for k, v := range header {
		hd[k] = v
	}
	body, err := json.Marshal(api.SessionRequest{Code: code})
	if err != nil {
		t.Fatal(err)
	}
	return browserDo(t, h, http.MethodPost, api.PathSessions, hd, string(body))
}

// signIn does what a browser does with a login link for actor ("" for the
// caller): it loads the link's page, which sets no cookie, and redeems the
// code; it returns the session.
func signIn(t *testing.T, h *servertest.Harness, actor string) string {
	t.Helper()
	code := loginCode(t, h, actor)
	resp, body := browserDo(t, h, http.MethodGet, api.PathLogin+"?"+url.Values{"code": {code}}.Encode(), http.Header{"Sec-Fetch-Site": {"none"}}, "")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `<script src="/app.js"`) || resp.Header.Get("Cache-Control") != "no-store" || resp.Header["Set-Cookie"] != nil {
		t.Fatalf("login page: %d, Cache-Control %q, cookies %v, body %s; want 200, the form's page, no-store and no cookie", resp.StatusCode, resp.Header.Get("Cache-Control"), resp.Header["Set-Cookie"], body)
	}
	resp, body = redeem(t, h, code, nil)
	var s api.SessionResponse
	if resp.StatusCode != http.StatusCreated || json.Unmarshal([]byte(body), &s) != nil || resp.Header["Set-Cookie"] != nil || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("redeem: %d, Cache-Control %q, cookies %v, body %s; want 201 with a session, no-store and no cookie", resp.StatusCode, resp.Header.Get("Cache-Control"), resp.Header["Set-Cookie"], body)
	}
	if !strings.HasPrefix(s.Session, engine.SessionPrefix) || len(s.Session) < 32 || s.ExpiresAt.IsZero() || (actor != "" && s.Actor != actor) {
		t.Fatalf("redeemed session %+v: want a long random %s… session of %q with its expiry", s, engine.SessionPrefix, actor)
	}
	return s.Session
}

// bearer is the Authorization header of a credential.
func bearer(credential string) http.Header {
	return http.Header{"Authorization": {"Bearer " + credential}}
}

func TestWebAssetsOnTCP(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	for path, ctype := range map[string]string{
		"/":            "text/html; charset=utf-8",
		"/app.js":      "text/javascript; charset=utf-8",
		"/answers.js":  "text/javascript; charset=utf-8",
		"/common.js":   "text/javascript; charset=utf-8",
		"/style.css":   "text/css; charset=utf-8",
		"/favicon.svg": "image/svg+xml",
		"/admin":       "text/html; charset=utf-8",
		"/admin.js":    "text/javascript; charset=utf-8",
		"/admin.css":   "text/css; charset=utf-8",
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
	// The pages load nothing from elsewhere.
	for _, path := range []string{"/", "/admin"} {
		_, page := browserDo(t, h, http.MethodGet, path, nil, "")
		if strings.Contains(page, "://") || strings.Contains(page, "style=") || strings.Contains(page, "<script>") {
			t.Errorf("%s refers to another origin or has inline code:\n%s", path, page)
		}
	}
	// API answers on TCP carry the headers too.
	resp, _ := browserDo(t, h, http.MethodGet, api.PathWhoAmI, nil, "")
	if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("whoami on TCP: headers %v", resp.Header)
	}

	t.Run("NotOnSocket", func(t *testing.T) {
		for _, path := range []string{"/", "/app.js", "/common.js", "/login?code=x", "/admin", "/admin.js"} {
			resp, body := send(t, h, call{via: viaSocket, method: http.MethodGet, path: path})
			wantProblem(t, resp, body, http.StatusNotFound, api.CodeNotFound)
		}
	})
}

func TestBrowserSession(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	me, err := h.SocketClient().WhoAmI(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	session := signIn(t, h, "")

	resp, body := browserDo(t, h, http.MethodGet, api.PathWhoAmI, bearer(session), "")
	if want := `{"actor":"` + me.Actor + `","admin":false,"subject_kind":"uid"}`; resp.StatusCode != http.StatusOK || strings.TrimSpace(body) != want {
		t.Errorf("whoami with the session: %d %s, want %s (a session is never an admin)", resp.StatusCode, body, want)
	}

	// Browsers send a host's cookies to every port of it, and any server
	// there can set them: a session in a cookie counts for nothing.
	t.Run("NoCookieIsRead", func(t *testing.T) {
		for _, name := range []string{"reserved_session", "session", "Authorization"} {
			resp, body := browserDo(t, h, http.MethodGet, api.PathWhoAmI, http.Header{"Cookie": {name + "=" + session}}, "")
			wantProblem(t, resp, []byte(body), http.StatusUnauthorized, engine.CodeUnauthenticated)
		}
	})

	t.Run("CodeWorksOnce", func(t *testing.T) {
		code := loginCode(t, h, "")
		if resp, body := redeem(t, h, code, nil); resp.StatusCode != http.StatusCreated {
			t.Fatalf("first redeem: %d %s", resp.StatusCode, body)
		}
		for _, bad := range []string{code, engine.LoginCodePrefix + "nonsense", "", session} {
			resp, body := redeem(t, h, bad, nil)
			wantProblem(t, resp, []byte(body), http.StatusUnauthorized, engine.CodeUnauthenticated)
			if resp.Header["Set-Cookie"] != nil {
				t.Errorf("redeem %q set cookies %v", bad, resp.Header["Set-Cookie"])
			}
		}
		resp, body := browserDo(t, h, http.MethodPost, api.PathSessions, http.Header{"Content-Type": {api.MediaJSON}}, `{}`)
		wantProblem(t, resp, []byte(body), http.StatusUnprocessableEntity, engine.CodeRequestContract)
	})

	t.Run("AdminLinkForAnotherActor", func(t *testing.T) {
		resp, body := browserDo(t, h, http.MethodGet, api.PathWhoAmI, bearer(signIn(t, h, "bob")), "")
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"actor":"bob"`) {
			t.Errorf("whoami as bob: %d %s", resp.StatusCode, body)
		}
	})

	t.Run("NoLinkOverTCP", func(t *testing.T) {
		resp, body := send(t, h, call{via: h.Admin, method: http.MethodPost, path: api.PathLoginLinks, body: `{}`})
		wantProblem(t, resp, body, http.StatusForbidden, engine.CodeForbidden)
	})

	t.Run("NoSessionsOnSocket", func(t *testing.T) {
		resp, body := send(t, h, call{via: viaSocket, method: http.MethodPost, path: api.PathSessions, body: `{"code":"` + loginCode(t, h, "") + `"}`})
		wantProblem(t, resp, body, http.StatusNotFound, api.CodeNotFound)
	})

	t.Run("SessionIsNoAdmin", func(t *testing.T) {
		hd := bearer(session)
		hd.Set("Content-Type", api.MediaJSON)
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
			"SecFetchSite": {"Authorization": {"Bearer " + session}, "Sec-Fetch-Site": {"same-site"}, "Origin": {evil}},
			"OriginOnly":   {"Authorization": {"Bearer " + session}, "Origin": {evil}},
		} {
			resp, body := reserveWith(hd, "3f1d6f9e-1c2b-4d3e-8f4a-5b6c7d8e9f00")
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, `"code":"forbidden"`) {
				t.Errorf("%s: cross-origin POST got %d %s, want 403 forbidden", name, resp.StatusCode, body)
			}
		}
		resp, _ := browserDo(t, h, http.MethodDelete, api.PathCurrentSession, http.Header{"Authorization": {"Bearer " + session}, "Sec-Fetch-Site": {"cross-site"}}, "")
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("cross-site sign-out: %d, want 403", resp.StatusCode)
		}
		// A page elsewhere cannot redeem a code here, and the code it
		// tried stays unused.
		code := loginCode(t, h, "")
		for _, site := range []string{"same-site", "cross-site"} {
			resp, body := redeem(t, h, code, http.Header{"Sec-Fetch-Site": {site}, "Origin": {evil}})
			if resp.StatusCode != http.StatusForbidden || strings.Contains(body, engine.SessionPrefix) {
				t.Errorf("redeem with Sec-Fetch-Site %s: %d %s, want 403 and no session", site, resp.StatusCode, body)
			}
		}
		if resp, body := redeem(t, h, code, nil); resp.StatusCode != http.StatusCreated {
			t.Errorf("the code refused from elsewhere, redeemed from the form's origin: %d %s, want 201", resp.StatusCode, body)
		}
		if after, _ := h.Counts(t); after != before {
			t.Errorf("reservations %d → %d after refused cross-origin requests", before, after)
		}
		if h.Logs.Find("request", "outcome", "cross_origin") == nil {
			t.Errorf("no request log line with outcome cross_origin:\n%s", h.Logs)
		}
		resp, body := browserDo(t, h, http.MethodGet, api.PathWhoAmI, bearer(session), "")
		if resp.StatusCode != http.StatusOK {
			t.Errorf("whoami after the refused cross-site sign-out: %d %s, want the session alive", resp.StatusCode, body)
		}
	})

	t.Run("SameOriginAndBearer", func(t *testing.T) {
		resp, body := reserveWith(http.Header{"Authorization": {"Bearer " + session}, "Sec-Fetch-Site": {"same-origin"}, "Origin": {h.URL}}, "3f1d6f9e-1c2b-4d3e-8f4a-5b6c7d8e9f01")
		if resp.StatusCode != http.StatusCreated {
			t.Errorf("same-origin POST with the session: %d %s, want 201", resp.StatusCode, body)
		}
		resp, body = reserveWith(bearer(h.Alice), "3f1d6f9e-1c2b-4d3e-8f4a-5b6c7d8e9f02")
		if resp.StatusCode != http.StatusCreated {
			t.Errorf("bearer POST without browser headers: %d %s, want 201", resp.StatusCode, body)
		}
	})

	t.Run("NewSignInEndsTheTabsSession", func(t *testing.T) {
		old := signIn(t, h, "")
		resp, body := redeem(t, h, loginCode(t, h, "bob"), bearer(old))
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("redeem with the tab's old session: %d %s", resp.StatusCode, body)
		}
		resp, body = browserDo(t, h, http.MethodGet, api.PathWhoAmI, bearer(old), "")
		wantProblem(t, resp, []byte(body), http.StatusUnauthorized, engine.CodeUnauthenticated)
		// A code that does not work leaves the tab's session alone.
		kept := signIn(t, h, "")
		resp, _ = redeem(t, h, engine.LoginCodePrefix+"nonsense", bearer(kept))
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("redeem of a bad code: %d, want 401", resp.StatusCode)
		}
		if resp, body := browserDo(t, h, http.MethodGet, api.PathWhoAmI, bearer(kept), ""); resp.StatusCode != http.StatusOK {
			t.Errorf("whoami after a failed sign-in: %d %s, want the session kept", resp.StatusCode, body)
		}
	})

	t.Run("SignOut", func(t *testing.T) {
		signOut := func(header http.Header) *http.Response {
			hd := http.Header{"Sec-Fetch-Site": {"same-origin"}, "Origin": {h.URL}}
			for k, v := range header {
				hd[k] = v
			}
			resp, _ := browserDo(t, h, http.MethodDelete, api.PathCurrentSession, hd, "")
			return resp
		}
		for i := range 2 { // Signing out again is no error.
			if resp := signOut(bearer(session)); resp.StatusCode != http.StatusNoContent || resp.Header["Set-Cookie"] != nil {
				t.Errorf("sign-out %d: %d, cookies %v; want 204 and no cookie", i+1, resp.StatusCode, resp.Header["Set-Cookie"])
			}
		}
		resp, body := browserDo(t, h, http.MethodGet, api.PathWhoAmI, bearer(session), "")
		wantProblem(t, resp, []byte(body), http.StatusUnauthorized, engine.CodeUnauthenticated)
		// Only a session can be signed out; an API token stays.
		for _, hd := range []http.Header{nil, bearer(h.Alice)} {
			if resp := signOut(hd); resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("sign-out with %v: %d, want 401", hd, resp.StatusCode)
			}
		}
		if resp, body := browserDo(t, h, http.MethodGet, api.PathWhoAmI, bearer(h.Alice), ""); resp.StatusCode != http.StatusOK {
			t.Errorf("whoami with alice's token after a sign-out attempt with it: %d %s", resp.StatusCode, body)
		}
	})
}

// plainClient sends requests as they are: unlike browserClient's
// transport, it neither asks for gzip by itself nor decompresses answers,
// so the tests see the representation the daemon chose.
var plainClient = &http.Client{Transport: &http.Transport{DisableCompression: true}}

// assetDo sends one request for a file of the pages with header and
// returns the answer and its body exactly as sent.
func assetDo(t *testing.T, h *servertest.Harness, method, path string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	return clientDo(t, plainClient, h, method, path, header, "")
}

// gunzip decompresses a gzip body.
func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the gzip body does not decompress: %v", err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("the gzip body does not decompress: %v", err)
	}
	return out
}

// TestWebAssetsCachedAndCompressed: every file of the pages comes with a
// strong ETag and Cache-Control no-cache; a request naming its ETag in
// If-None-Match gets 304 without a body; a browser that accepts gzip gets
// the file compressed (with an ETag of its own), any other request the
// file as it is, and both say Vary: Accept-Encoding. HEAD answers the
// header fields of GET.
func TestWebAssetsCachedAndCompressed(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	etags := map[string]string{}
	for path, name := range map[string]string{
		"/": "index.html", "/app.js": "app.js", "/answers.js": "answers.js", "/common.js": "common.js", "/style.css": "style.css",
		"/favicon.svg": "favicon.svg", "/admin": "admin.html", "/admin.js": "admin.js", "/admin.css": "admin.css",
	} {
		file, err := web.Assets.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		plain, body := assetDo(t, h, http.MethodGet, path, nil)
		etag := plain.Header.Get("ETag")
		if plain.StatusCode != http.StatusOK || !bytes.Equal(body, file) || plain.Header.Get("Content-Encoding") != "" {
			t.Fatalf("GET %s without Accept-Encoding: %d, Content-Encoding %q, %d bytes; want 200 and %s as it is (%d bytes)",
				path, plain.StatusCode, plain.Header.Get("Content-Encoding"), len(body), name, len(file))
		}
		if !strings.HasPrefix(etag, `"`) || !strings.HasSuffix(etag, `"`) || len(etag) < 18 || plain.Header.Get("Cache-Control") != "no-cache" {
			t.Errorf("GET %s: ETag %q, Cache-Control %q; want a strong ETag and no-cache", path, etag, plain.Header.Get("Cache-Control"))
		}
		if other, ok := etags[etag]; ok {
			t.Errorf("%s and %s have the same ETag %s", path, other, etag)
		}
		etags[etag] = path
		if again, _ := assetDo(t, h, http.MethodGet, path, nil); again.Header.Get("ETag") != etag {
			t.Errorf("GET %s again: ETag %q, want the same %q", path, again.Header.Get("ETag"), etag)
		}

		// A copy the browser has is revalidated with a 304 and no body,
		// also when it is one of several tags or compared weakly.
		for _, inm := range []string{etag, `"other", ` + etag, "W/" + etag} {
			resp, body := assetDo(t, h, http.MethodGet, path, http.Header{"If-None-Match": {inm}})
			if resp.StatusCode != http.StatusNotModified || len(body) != 0 || resp.Header.Get("ETag") != etag || resp.Header.Get("Cache-Control") != "no-cache" {
				t.Errorf("GET %s with If-None-Match %s: %d, %d bytes, ETag %q, Cache-Control %q; want 304, no body, the same ETag and no-cache",
					path, inm, resp.StatusCode, len(body), resp.Header.Get("ETag"), resp.Header.Get("Cache-Control"))
			}
		}
		if resp, body := assetDo(t, h, http.MethodGet, path, http.Header{"If-None-Match": {`"outdated"`}}); resp.StatusCode != http.StatusOK || !bytes.Equal(body, file) {
			t.Errorf("GET %s with an outdated If-None-Match: %d, %d bytes; want 200 and the file", path, resp.StatusCode, len(body))
		}

		// HEAD: the header fields of GET, no body.
		head, body := assetDo(t, h, http.MethodHead, path, nil)
		if head.StatusCode != http.StatusOK || len(body) != 0 || head.Header.Get("ETag") != etag || head.Header.Get("Content-Length") != strconv.Itoa(len(file)) {
			t.Errorf("HEAD %s: %d, %d bytes, ETag %q, Content-Length %q; want 200, no body, ETag %s and Content-Length %d",
				path, head.StatusCode, len(body), head.Header.Get("ETag"), head.Header.Get("Content-Length"), etag, len(file))
		}
		if resp, _ := assetDo(t, h, http.MethodHead, path, http.Header{"If-None-Match": {etag}}); resp.StatusCode != http.StatusNotModified {
			t.Errorf("HEAD %s with If-None-Match of its ETag: %d, want 304", path, resp.StatusCode)
		}

		// gzip for a browser that accepts it, when it makes the file smaller.
		zipped, zbody := assetDo(t, h, http.MethodGet, path, http.Header{"Accept-Encoding": {"gzip, deflate, br, zstd"}})
		if len(file) < 200 && zipped.Header.Get("Content-Encoding") == "" {
			continue // Too small to shrink: sent as it is.
		}
		zetag := zipped.Header.Get("ETag")
		if zipped.StatusCode != http.StatusOK || zipped.Header.Get("Content-Encoding") != "gzip" || !bytes.Equal(gunzip(t, zbody), file) {
			t.Fatalf("GET %s accepting gzip: %d, Content-Encoding %q; want 200 and %s compressed with gzip", path, zipped.StatusCode, zipped.Header.Get("Content-Encoding"), name)
		}
		if len(zbody) >= len(file) || zipped.Header.Get("Content-Length") != strconv.Itoa(len(zbody)) {
			t.Errorf("GET %s accepting gzip: %d bytes (Content-Length %q) for a file of %d", path, len(zbody), zipped.Header.Get("Content-Length"), len(file))
		}
		for _, resp := range []*http.Response{plain, zipped, head} {
			if resp.Header.Get("Vary") != "Accept-Encoding" {
				t.Errorf("%s %s: Vary %q, want Accept-Encoding", resp.Request.Method, path, resp.Header.Get("Vary"))
			}
		}
		if !strings.HasPrefix(zetag, `"`) || zetag == etag || zipped.Header.Get("Cache-Control") != "no-cache" {
			t.Errorf("GET %s accepting gzip: ETag %q (the file's is %q), Cache-Control %q; want a strong ETag of its own and no-cache", path, zetag, etag, zipped.Header.Get("Cache-Control"))
		}
		resp, body := assetDo(t, h, http.MethodGet, path, http.Header{"Accept-Encoding": {"gzip"}, "If-None-Match": {zetag}})
		if resp.StatusCode != http.StatusNotModified || len(body) != 0 || resp.Header.Get("Content-Encoding") != "" || resp.Header.Get("Vary") != "Accept-Encoding" {
			t.Errorf("GET %s accepting gzip, If-None-Match of the gzip ETag: %d, %d bytes, Content-Encoding %q, Vary %q; want 304 without a body",
				path, resp.StatusCode, len(body), resp.Header.Get("Content-Encoding"), resp.Header.Get("Vary"))
		}
		// The gzip copy's tag does not revalidate the file as it is.
		if resp, _ := assetDo(t, h, http.MethodGet, path, http.Header{"If-None-Match": {zetag}}); resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s without gzip, If-None-Match of the gzip ETag: %d, want 200", path, resp.StatusCode)
		}
		for _, ae := range []string{"identity", "br", "gzip;q=0", "gzip;q=0, *", "*;q=0", "deflate, gzip;q=0.000"} {
			if resp, body := assetDo(t, h, http.MethodGet, path, http.Header{"Accept-Encoding": {ae}}); resp.Header.Get("Content-Encoding") != "" || !bytes.Equal(body, file) {
				t.Errorf("GET %s with Accept-Encoding %q: Content-Encoding %q; want the file as it is", path, ae, resp.Header.Get("Content-Encoding"))
			}
		}
		for _, ae := range []string{"GZIP", "br;q=1, gzip;q=0.5", "*", "x-gzip"} {
			if resp, body := assetDo(t, h, http.MethodGet, path, http.Header{"Accept-Encoding": {ae}}); resp.Header.Get("Content-Encoding") != "gzip" || !bytes.Equal(gunzip(t, body), file) {
				t.Errorf("GET %s with Accept-Encoding %q: Content-Encoding %q; want gzip", path, ae, resp.Header.Get("Content-Encoding"))
			}
		}
	}

	// The login page: the form's page, compressed too, but no-store and
	// without a validator.
	resp, body := assetDo(t, h, http.MethodGet, api.PathLogin+"?code=x", http.Header{"Sec-Fetch-Site": {"none"}, "Accept-Encoding": {"gzip"}})
	index, _ := web.Assets.ReadFile("index.html")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "gzip" || !bytes.Equal(gunzip(t, body), index) ||
		resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("ETag") != "" || resp.Header.Get("Vary") != "Accept-Encoding" {
		t.Errorf("login page accepting gzip: %d, Content-Encoding %q, Cache-Control %q, ETag %q, Vary %q; want index.html in gzip, no-store, no ETag",
			resp.StatusCode, resp.Header.Get("Content-Encoding"), resp.Header.Get("Cache-Control"), resp.Header.Get("ETag"), resp.Header.Get("Vary"))
	}
	if resp, body := assetDo(t, h, http.MethodHead, api.PathLogin+"?code=x", http.Header{"Sec-Fetch-Site": {"none"}}); resp.StatusCode != http.StatusOK || len(body) != 0 || resp.Header.Get("Content-Length") != strconv.Itoa(len(index)) {
		t.Errorf("HEAD of the login page: %d, %d bytes, Content-Length %q; want 200, no body, %d", resp.StatusCode, len(body), resp.Header.Get("Content-Length"), len(index))
	}
}
