package server_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/engine/memstore"
	"github.com/reserve/reserve/internal/server"
	"github.com/reserve/reserve/internal/tools/testop/testoptest"
)

// startTestOP builds the test OpenID Provider and runs it until the test
// ends; it returns its issuer URL.
func startTestOP(t *testing.T) string {
	t.Helper()
	bin, err := testoptest.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return testoptest.Start(t, bin, "127.0.0.1:0")
}

// oidcServer serves an engine on a memory store with sign-in through the
// provider at issuer, on a loopback TCP listener, until the test ends.
func oidcServer(t *testing.T, issuer string) (*engine.Engine, string) {
	t.Helper()
	eng := engine.New(memstore.New(memstore.Options{}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	srv := server.New(server.Config{Engine: eng, OIDC: &server.OIDCConfig{
		Issuer: issuer, ClientID: "reserve", ClientSecret: "reserve-secret", PublicURL: base,
	}})
	done := make(chan error, 1)
	go func() { done <- srv.ServeTCP(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return eng, base
}

// oidcSignIn goes through a sign-in as user the way a browser does: the
// start, the provider's login form, and the callback with the flow's
// cookie, which must answer 200.
func oidcSignIn(t *testing.T, base, issuer, user string) {
	t.Helper()
	host := strings.TrimPrefix(base, "http://")
	// The client follows the provider's redirects and stops at the
	// server's.
	c := &http.Client{CheckRedirect: func(r *http.Request, _ []*http.Request) error {
		if r.URL.Host == host {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	get := func(req *http.Request) (*http.Response, string) {
		t.Helper()
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(b)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(base + server.OIDCStartPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cookies := resp.Cookies()
	if resp.StatusCode != http.StatusFound || len(cookies) != 1 {
		t.Fatalf("start: %s with cookies %v", resp.Status, cookies)
	}
	login, _ := http.NewRequest(http.MethodGet, resp.Header.Get("Location"), nil)
	_, page := get(login)
	_, rest, _ := strings.Cut(page, `name="id" value="`)
	id, _, _ := strings.Cut(rest, `"`)
	resp, err = c.PostForm(issuer+"/login/username", url.Values{"id": {id}, "username": {user}, "password": {"secret"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	callback := resp.Header.Get("Location")
	if !strings.HasPrefix(callback, base+server.OIDCCallbackPath+"?") {
		t.Fatalf("the provider sent the browser to %q (%s), want the callback", callback, resp.Status)
	}
	req, _ := http.NewRequest(http.MethodGet, callback, nil)
	req.AddCookie(cookies[0])
	if resp, page := get(req); resp.StatusCode != http.StatusOK {
		t.Fatalf("the callback: %s\n%s", resp.Status, page)
	}
}

// TestOIDCKeepsVerifiedEmail: a sign-in through the provider stores the
// address in the person's profile, where mails are sent, when the ID
// token says the provider verified it (alice), and stores none when it
// says it did not (bob).
func TestOIDCKeepsVerifiedEmail(t *testing.T) {
	issuer := startTestOP(t)
	eng, base := oidcServer(t, issuer)
	for _, tc := range []struct{ user, email string }{{"alice", "alice@example.org"}, {"bob", ""}} {
		oidcSignIn(t, base, issuer, tc.user)
		p, err := eng.ProfileOf(context.Background(), tc.user)
		if err != nil {
			t.Fatal(err)
		}
		if p.Email != tc.email {
			t.Errorf("%s's stored address after the sign-in = %q, want %q", tc.user, p.Email, tc.email)
		}
	}
}
