package daemon_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/client"

	"github.com/reserve/reserve/internal/server/servertest"
)

// oidcSecret is the client secret of these tests; it must never show in a
// log line or an error.
const oidcSecret = "s3cr3t-never-logged-7f1c"

// TestOIDCFlagsRefused: incomplete or malformed sign-in flags are a usage
// error (exit 2) that names the flag, before anything is opened, and the
// secret is in no message.
func TestOIDCFlagsRefused(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte(oidcSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	full := func(drop string, over ...string) []string {
		flags := map[string]string{"--oidc-issuer": "https://id.example", "--oidc-client-id": "reserve", "--oidc-client-secret-file": secret, "--public-url": "https://reserve.example"}
		delete(flags, drop)
		for i := 0; i+1 < len(over); i += 2 {
			flags[over[i]] = over[i+1]
		}
		var args []string
		for k, v := range flags {
			args = append(args, k, v)
		}
		return args
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"NoClientID", full("--oidc-client-id"), "--oidc-issuer needs --oidc-client-id"},
		{"NoSecretFile", full("--oidc-client-secret-file"), "--oidc-issuer needs --oidc-client-secret-file"},
		{"NoPublicURL", full("--public-url"), "--oidc-issuer needs --public-url"},
		{"IssuerNotHTTP", full("", "--oidc-issuer", "ftp://id.example"), "--oidc-issuer must be an http:// or https:// URL"},
		{"IssuerPlainHTTPOffLoopback", full("", "--oidc-issuer", "http://id.example"), "--oidc-issuer must be an https:// URL unless the provider runs on this machine"},
		{"PublicURLWithQuery", full("", "--public-url", "https://reserve.example/?x=1"), "--public-url must be an http:// or https:// URL"},
		{"MissingSecretFile", full("", "--oidc-client-secret-file", filepath.Join(dir, "nope")), "--oidc-client-secret-file: open"},
		{"EmptySecretFile", full("", "--oidc-client-secret-file", empty), "the file's first line is empty"},
		{"ClientIDWithoutIssuer", []string{"--oidc-client-id", "reserve"}, "--oidc-client-id needs --oidc-issuer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := t.TempDir()
			socket := filepath.Join(servertest.ShortTempDir(t), "r.sock")
			db := filepath.Join(run, "reserved.db")
			p := launch(t, env(run), append([]string{"serve", "--socket", socket, "--listen", "", "--db", db}, tc.args...)...)
			if code := p.wait(t); code != 2 {
				t.Fatalf("exit %d, want 2: %s", code, p.logs)
			}
			logs := p.logs.String()
			if !strings.Contains(logs, tc.want) {
				t.Errorf("the refusal does not say %q: %s", tc.want, logs)
			}
			if strings.Contains(logs, oidcSecret) {
				t.Errorf("the client secret is in the output: %s", logs)
			}
			mustNotExist(t, db)
		})
	}
}

// TestOIDCProviderDownStillServes: a daemon whose provider cannot be
// reached starts and serves; its sign-in methods name the provider, and
// the secret is in no log line.
func TestOIDCProviderDownStillServes(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte(oidcSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := launch(t, env(dir), "serve", "--socket", filepath.Join(servertest.ShortTempDir(t), "r.sock"), "--listen", "127.0.0.1:0",
		"--log-format", "json", "--db", filepath.Join(dir, "reserved.db"), "--oidc-issuer", "http://127.0.0.1:1", "--oidc-client-id", "reserve",
		"--oidc-client-secret-file", secret, "--public-url", "http://127.0.0.1:8080", "--oidc-name", "Example SSO")
	p.waitServing(t)
	resp, err := http.Get(p.url + "/api/v1/sign-in")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := `{"methods":["oidc","link"],"oidc_name":"Example SSO"}`; strings.TrimSpace(string(body)) != want {
		t.Errorf("sign-in methods: %s, want %s", body, want)
	}
	resp, err = http.Get(p.url + "/oidc/start")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a sign-in with the provider down: %s, want 503", resp.Status)
	}
	p.stop(t)
	if strings.Contains(p.logs.String(), oidcSecret) {
		t.Errorf("the client secret is in the log: %s", p.logs)
	}
}

// TestPublicURLIsTheBaseOfLoginLinks: with --public-url (a proxy in front
// of the TCP listener), the login links the daemon makes start with it,
// not with the listener's own address; a bad one refuses the start.
func TestPublicURLIsTheBaseOfLoginLinks(t *testing.T) {
	dir := t.TempDir()
	socket := filepath.Join(servertest.ShortTempDir(t), "r.sock")
	p := launch(t, env(dir), "serve", "--socket", socket, "--listen", "127.0.0.1:0", "--log-format", "json",
		"--db", filepath.Join(dir, "reserved.db"), "--public-url", "https://reserve.example.org/")
	p.waitServing(t)
	link, err := (&client.Client{Socket: socket}).LoginLink(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(link.URL, "https://reserve.example.org/login?code=") {
		t.Errorf("login link %q, want it under --public-url", link.URL)
	}
	p.stop(t)
	out, err := exec.Command(reservedBin, "serve", "--db", filepath.Join(dir, "other.db"), "--socket", socket+"2", "--public-url", "ftp://x").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--public-url must be an http:// or https:// URL") {
		t.Errorf("a bad --public-url: %v\n%s", err, out)
	}
}
