package daemon

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/reserve/reserve/internal/server"
)

// oidcFlags are the flags of the sign-in through an OpenID Connect
// provider.
type oidcFlags struct {
	issuer, clientID, secretFile, publicURL, adminGroup, name string
	// cfg is what load made of them; nil without --oidc-issuer.
	cfg *server.OIDCConfig
}

func (o *oidcFlags) register(f *pflag.FlagSet) {
	f.StringVar(&o.issuer, "oidc-issuer", "", "offer the browser form sign-in through this OpenID Connect provider, by its issuer URL, e.g. --oidc-issuer https://id.example.org/realms/staff; needs --oidc-client-id, --oidc-client-secret-file and --public-url")
	f.StringVar(&o.clientID, "oidc-client-id", "", "the client id the OpenID Connect provider gave reserved")
	f.StringVar(&o.secretFile, "oidc-client-secret-file", "", "a file that holds the client secret the OpenID Connect provider gave reserved (its first line; never give the secret itself as a flag)")
	f.StringVar(&o.publicURL, "public-url", "", "the base URL under which browsers reach reserved, e.g. https://reserve.example.org: the base of login links (printed and mailed) and, with --oidc-issuer, of the redirect URI to register at the provider, this plus "+server.OIDCCallbackPath+" (default: the address of the TCP listener)")
	f.StringVar(&o.adminGroup, "oidc-admin-group", "", "people whose OpenID Connect groups claim holds this group are admins, e.g. --oidc-admin-group reserve-admins")
	f.StringVar(&o.name, "oidc-name", "", `what the form calls the provider on its button "Sign in with <name>" (default "your organization")`)
}

// load checks the flags and reads the client secret. The secret is never
// part of an error or a log line.
func (o *oidcFlags) load() error {
	if o.publicURL != "" {
		if err := checkHTTPURL("--public-url", o.publicURL); err != nil {
			return err
		}
	}
	if o.issuer == "" {
		for flag, v := range map[string]string{"--oidc-client-id": o.clientID, "--oidc-client-secret-file": o.secretFile, "--oidc-admin-group": o.adminGroup, "--oidc-name": o.name} {
			if v != "" {
				return fmt.Errorf("%s needs --oidc-issuer", flag)
			}
		}
		return nil
	}
	if err := checkHTTPURL("--oidc-issuer", o.issuer); err != nil {
		return err
	}
	// Over plain HTTP anyone on the way could answer for the provider
	// (its keys, the token exchange) and sign anyone in, admins too.
	if u, _ := url.Parse(o.issuer); u.Scheme == "http" && !isLoopbackHost(u.Hostname()) {
		return fmt.Errorf("--oidc-issuer must be an https:// URL unless the provider runs on this machine (a loopback address), not %q", o.issuer)
	}
	if err := checkHTTPURL("--public-url", o.publicURL); err != nil {
		return err
	}
	if o.clientID == "" {
		return fmt.Errorf("--oidc-issuer needs --oidc-client-id")
	}
	if o.secretFile == "" {
		return fmt.Errorf("--oidc-issuer needs --oidc-client-secret-file")
	}
	data, err := os.ReadFile(o.secretFile)
	if err != nil {
		return fmt.Errorf("--oidc-client-secret-file: %w", err)
	}
	secret, _, _ := strings.Cut(string(data), "\n")
	secret = strings.TrimSpace(secret)
	if secret == "" {
		return fmt.Errorf("--oidc-client-secret-file %s: the file's first line is empty", o.secretFile)
	}
	o.cfg = &server.OIDCConfig{Issuer: o.issuer, ClientID: o.clientID, ClientSecret: secret, PublicURL: o.publicURL, AdminGroup: o.adminGroup, Name: o.name}
	return nil
}

// checkHTTPURL checks that v is an absolute http or https URL without
// query, fragment or whitespace.
func checkHTTPURL(flag, v string) error {
	if v == "" {
		return fmt.Errorf("--oidc-issuer needs %s", flag)
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(v, " \t\r\n") {
		return fmt.Errorf("%s must be an http:// or https:// URL without query or fragment, e.g. https://id.example.org, not %q", flag, v)
	}
	return nil
}

// isLoopbackHost reports whether host is localhost or a loopback address.
func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
