package server_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/server/servertest"
)

// TestLoginLinkRefusesCrossSiteNavigation is the login CSRF check: a page
// of another site (or of another port of this host, which is the same site)
// that sends the browser to a login link of its own must not sign the
// browser in. The refused code stays usable when opened directly, as a
// pasted link is (Sec-Fetch-Site: none), and by clients without Fetch
// metadata.
func TestLoginLinkRefusesCrossSiteNavigation(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	link := func() string {
		t.Helper()
		l, err := h.SocketClient().LoginLink(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		u, err := url.Parse(l.URL)
		if err != nil {
			t.Fatal(err)
		}
		return u.RequestURI()
	}
	path := link()
	for _, site := range []string{"cross-site", "same-site"} {
		resp, body := browserDo(t, h, http.MethodGet, path, http.Header{"Sec-Fetch-Site": {site}}, "")
		if resp.StatusCode != http.StatusForbidden || resp.Header["Set-Cookie"] != nil || !strings.Contains(body, "Open the login link yourself") {
			t.Errorf("login link opened with Sec-Fetch-Site %s: %d, cookies %v, body %s; want 403 with an explanation and no session", site, resp.StatusCode, resp.Header["Set-Cookie"], body)
		}
	}
	for i, header := range []http.Header{{"Sec-Fetch-Site": {"none"}}, {"Sec-Fetch-Site": {"same-origin"}}, nil} {
		if i > 0 {
			path = link()
		}
		resp, body := browserDo(t, h, http.MethodGet, path, header, "")
		if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) == 0 {
			t.Errorf("login link opened with %v: %d, cookies %v, body %s; want 303 and a session", header, resp.StatusCode, resp.Header["Set-Cookie"], body)
		}
	}
}
