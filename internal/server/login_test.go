package server_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/server/servertest"
)

// TestLoginLinkRefusesCrossSiteNavigation is the login CSRF check: a page
// of another site (or of another port of this host, which is the same site)
// that sends the browser to a login link of its own must not sign the
// browser in, so that navigation gets an explanation without the form's
// script, which would redeem the code. The refused code stays usable when
// opened directly, as a pasted link is (Sec-Fetch-Site: none). No answer
// sets a cookie.
func TestLoginLinkRefusesCrossSiteNavigation(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	code := loginCode(t, h, "")
	path := api.PathLogin + "?" + url.Values{"code": {code}}.Encode()
	for _, site := range []string{"cross-site", "same-site"} {
		resp, body := browserDo(t, h, http.MethodGet, path, http.Header{"Sec-Fetch-Site": {site}}, "")
		if resp.StatusCode != http.StatusForbidden || resp.Header["Set-Cookie"] != nil || !strings.Contains(body, "Open the login link yourself") || strings.Contains(body, "<script") {
			t.Errorf("login link opened with Sec-Fetch-Site %s: %d, cookies %v, body %s; want 403 with an explanation, no script and no cookie", site, resp.StatusCode, resp.Header["Set-Cookie"], body)
		}
	}
	for _, header := range []http.Header{{"Sec-Fetch-Site": {"none"}}, {"Sec-Fetch-Site": {"same-origin"}}} {
		resp, body := browserDo(t, h, http.MethodGet, path, header, "")
		if resp.StatusCode != http.StatusOK || resp.Header["Set-Cookie"] != nil || !strings.Contains(body, `<script src="/app.js"`) || resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("login link opened with %v: %d, cookies %v, Cache-Control %q, body %s; want 200, the form's page, no-store and no cookie", header, resp.StatusCode, resp.Header["Set-Cookie"], resp.Header.Get("Cache-Control"), body)
		}
	}
	// Loading the page used nothing: the code is redeemed only by the
	// page's own request.
	if resp, body := redeem(t, h, code, nil); resp.StatusCode != http.StatusCreated {
		t.Errorf("redeem after the page loads: %d %s, want 201", resp.StatusCode, body)
	}
}

// TestLoginLinkRefusedWithoutFetchMetadata: browsers send no Sec-Fetch-Site
// to a listener reached over plain HTTP on an address that is not loopback,
// so there a navigation another page caused looks like every other one. A
// login link opened without the header is refused with an explanation and
// without the form's script, and the code stays usable.
func TestLoginLinkRefusedWithoutFetchMetadata(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	code := loginCode(t, h, "")
	path := api.PathLogin + "?" + url.Values{"code": {code}}.Encode()
	resp, body := browserDo(t, h, http.MethodGet, path, nil, "")
	if resp.StatusCode != http.StatusForbidden || resp.Header["Set-Cookie"] != nil || resp.Header.Get("Cache-Control") != "no-store" ||
		!strings.Contains(body, "Sign in from a secure page") || !strings.Contains(body, "HTTPS") || !strings.Contains(body, `lang="de"`) || strings.Contains(body, "<script") {
		t.Errorf("login link opened without Sec-Fetch-Site: %d, cookies %v, Cache-Control %q, body %s; want 403 with an explanation in English and German, no script, no-store and no cookie", resp.StatusCode, resp.Header["Set-Cookie"], resp.Header.Get("Cache-Control"), body)
	}
	if resp, body := redeem(t, h, code, nil); resp.StatusCode != http.StatusCreated {
		t.Errorf("redeem after the refusal: %d %s, want 201 (the code stays unused)", resp.StatusCode, body)
	}
}
