package server

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/reserve/reserve/internal/engine"
)

// OIDCConfig configures sign-in through an OpenID Connect provider for the
// browser form: the authorization code flow with PKCE (S256), state and
// nonce.
type OIDCConfig struct {
	// Issuer is the provider's issuer URL, where its discovery document
	// is found (Issuer + "/.well-known/openid-configuration").
	Issuer string
	// ClientID and ClientSecret are the credentials the provider gave
	// this daemon. The secret is never logged.
	ClientID, ClientSecret string
	// PublicURL is the base URL under which browsers reach the daemon,
	// e.g. https://reserve.example.org; the redirect URI registered at
	// the provider is PublicURL + OIDCCallbackPath.
	PublicURL string
	// AdminGroup, when set, makes admins of the people whose groups
	// claim holds it.
	AdminGroup string
	// Name is what the form calls the provider: "Sign in with <Name>".
	// Empty means the form's own words for "your organization".
	Name string
	// HTTPClient talks to the provider. Nil means one with a 10 s
	// timeout.
	HTTPClient *http.Client
}

// The paths of the sign-in through the provider.
const (
	OIDCStartPath    = "/oidc/start"
	OIDCCallbackPath = "/oidc/callback"
)

// OIDCFlowTTL bounds how long a person may take at the provider between
// starting a sign-in and coming back with its answer.
const OIDCFlowTTL = 10 * time.Minute

// maxOIDCFlows bounds the sign-ins in progress that the daemon remembers.
// When that many are in progress, a new one makes the daemon forget the
// oldest: a client that starts sign-ins without finishing them cannot
// lock everyone else out, it can only make the others finish faster.
const maxOIDCFlows = 10000

// oidcRetryAfter is what a sign-in answers while the provider's discovery
// document cannot be had: try again after this.
const oidcRetryAfter = 10 * time.Second

// oidcCookiePrefix names the cookie that binds a sign-in in progress to
// the browser that started it; the state follows the prefix, so several
// tabs can sign in at once. It holds a random value, nothing else, and is
// sent only to OIDCCallbackPath. It is the only cookie the daemon sets,
// and it never authenticates a request: the session stays in the tab.
const oidcCookiePrefix = "reserve_oidc_"

// oidcFlow is what the daemon remembers of one sign-in in progress.
type oidcFlow struct {
	browser  string // The value of the browser's cookie.
	nonce    string
	verifier string // The PKCE code verifier.
	expires  time.Time
}

// oidcFlows holds the sign-ins in progress by their state, each for
// OIDCFlowTTL and for one use, at most maxOIDCFlows of them.
type oidcFlows struct {
	mu    sync.Mutex
	now   func() time.Time
	flows map[string]oidcFlow
	// order holds the states in the order they were added, which is the
	// order they expire in (they all live OIDCFlowTTL), from order[head]
	// on; states taken meanwhile are passed over.
	order []string
	head  int
}

func newOIDCFlows(now func() time.Time) *oidcFlows {
	return &oidcFlows{now: now, flows: map[string]oidcFlow{}}
}

// add remembers a new flow and returns its state, forgetting the flows
// that have expired and, when maxOIDCFlows are still in progress, the
// oldest.
func (f *oidcFlows) add(fl oidcFlow) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	for f.head < len(f.order) {
		old, ok := f.flows[f.order[f.head]]
		if ok && now.Before(old.expires) && len(f.flows) < maxOIDCFlows {
			break
		}
		delete(f.flows, f.order[f.head])
		f.order[f.head] = ""
		f.head++
	}
	if f.head > len(f.order)/2 || len(f.order) > 2*maxOIDCFlows {
		live := f.order[:0]
		for _, state := range f.order[f.head:] {
			if _, ok := f.flows[state]; ok {
				live = append(live, state)
			}
		}
		clear(f.order[len(live):])
		f.order, f.head = live, 0
	}
	state := randomString()
	fl.expires = now.Add(OIDCFlowTTL)
	f.flows[state] = fl
	f.order = append(f.order, state)
	return state
}

// take forgets the flow of state and returns it, if it was there and has
// not expired: a flow is used once.
func (f *oidcFlows) take(state string) (oidcFlow, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl, ok := f.flows[state]
	delete(f.flows, state)
	if !ok || !f.now().Before(fl.expires) {
		return oidcFlow{}, false
	}
	return fl, true
}

// randomString is 256 random bits in base64url.
func randomString() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// oidcSignIn is the sign-in through one provider. The provider's discovery
// document is fetched at the first sign-in, and again at each later one
// until it has been had once; its keys are fetched, and fetched again when
// a token names a key they lack, by the library.
type oidcSignIn struct {
	cfg    OIDCConfig
	client *http.Client
	flows  *oidcFlows

	mu       sync.Mutex // Held while discovering.
	provider *oidc.Provider
	verifier *oidc.IDTokenVerifier
	oauth    oauth2.Config
}

func newOIDCSignIn(cfg OIDCConfig, now func() time.Time) *oidcSignIn {
	cfg.PublicURL = strings.TrimSuffix(cfg.PublicURL, "/")
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	return &oidcSignIn{cfg: cfg, client: client, flows: newOIDCFlows(now)}
}

// errProviderDown is what a sign-in answers while the provider cannot be
// discovered.
var errProviderDown = errors.New("the identity provider cannot be reached")

// discover returns the provider, fetching its discovery document if it has
// not been had yet.
func (o *oidcSignIn) discover(ctx context.Context) (*oidc.Provider, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.provider != nil {
		return o.provider, nil
	}
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, o.client), o.cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("%w: discover %s: %w", errProviderDown, o.cfg.Issuer, err)
	}
	o.provider = p
	o.verifier = p.Verifier(&oidc.Config{ClientID: o.cfg.ClientID})
	o.oauth = oauth2.Config{
		ClientID:     o.cfg.ClientID,
		ClientSecret: o.cfg.ClientSecret,
		Endpoint:     p.Endpoint(),
		RedirectURL:  o.cfg.PublicURL + OIDCCallbackPath,
		Scopes:       []string{oidc.ScopeOpenID, "profile", "email"},
	}
	if o.cfg.AdminGroup != "" {
		// The groups claim is behind a scope of that name at many
		// providers; others ignore it or put groups in profile.
		o.oauth.Scopes = append(o.oauth.Scopes, "groups")
	}
	return p, nil
}

// oidcRoutes are the routes of the sign-in through the provider, if one
// is configured.
func (s *Server) oidcRoutes() []route {
	if s.oidc == nil {
		return nil
	}
	return []route{
		{"GET " + OIDCStartPath, anyone, s.oidcStart},
		{"GET " + OIDCCallbackPath, anyone, s.oidcCallback},
	}
}

// oidcStart is GET /oidc/start: it remembers a new sign-in (state, nonce,
// PKCE verifier), binds it to this browser with a cookie that only the
// callback gets, and sends the browser to the provider.
func (s *Server) oidcStart(w http.ResponseWriter, r *http.Request, _ engine.Principal) error {
	if err := tcpOnly(r); err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	o := s.oidc
	if _, err := o.discover(r.Context()); err != nil {
		return s.oidcRefuse(w, r, err)
	}
	fl := oidcFlow{browser: randomString(), nonce: randomString(), verifier: oauth2.GenerateVerifier()}
	state := o.flows.add(fl)
	http.SetCookie(w, &http.Cookie{
		Name: oidcCookiePrefix + state, Value: fl.browser, Path: OIDCCallbackPath,
		MaxAge: int(OIDCFlowTTL / time.Second), HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: strings.HasPrefix(o.cfg.PublicURL, "https://"),
	})
	http.Redirect(w, r, o.oauth.AuthCodeURL(state, oidc.Nonce(fl.nonce), oauth2.S256ChallengeOption(fl.verifier)), http.StatusFound)
	return nil
}

// oidcFailure is a sign-in through the provider that opened no session:
// its status, the page that explains it, and the reason for the log.
type oidcFailure struct {
	status int
	page   page
	reason error
}

func (f *oidcFailure) Error() string { return f.reason.Error() }

func oidcFail(status int, p page, format string, args ...any) *oidcFailure {
	return &oidcFailure{status: status, page: p, reason: fmt.Errorf(format, args...)}
}

// oidcCallback is GET /oidc/callback, where the provider sends the browser
// back. It takes the flow of the state (once), checks that this browser
// started it, exchanges the code with the PKCE verifier, verifies the ID
// token (signature by a key of the provider, issuer, audience, expiry)
// and its nonce, binds the person's (issuer, sub) to an actor, and hands
// the browser a one-time login code, which the form redeems as it does a
// login link's.
func (s *Server) oidcCallback(w http.ResponseWriter, r *http.Request, _ engine.Principal) error {
	if err := tcpOnly(r); err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	code, err := s.oidcSignInCode(w, r)
	if err != nil {
		return s.oidcRefuse(w, r, err)
	}
	infoOf(r).outcome = "signed_in"
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	oidcDoneTemplate.Execute(w, LoginURL("", code))
	return nil
}

// oidcSignInCode does the work of oidcCallback and returns the login code.
func (s *Server) oidcSignInCode(w http.ResponseWriter, r *http.Request) (string, error) {
	o := s.oidc
	q := r.URL.Query()
	state := q.Get("state")
	fl, ok := o.flows.take(state)
	cookie := oidcCookiePrefix + state
	http.SetCookie(w, &http.Cookie{Name: cookie, Value: "", Path: OIDCCallbackPath, MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	if !ok {
		return "", oidcFail(http.StatusBadRequest, oidcStalePage, "unknown, used or expired state")
	}
	c, err := r.Cookie(cookie)
	if err != nil || subtle.ConstantTimeCompare([]byte(c.Value), []byte(fl.browser)) != 1 {
		return "", oidcFail(http.StatusForbidden, oidcOtherBrowserPage, "the sign-in was started in another browser")
	}
	if e := q.Get("error"); e != "" {
		return "", oidcFail(http.StatusForbidden, oidcProviderRefusedPage, "the provider answered %s: %s", engine.Truncate(e, 80), engine.Truncate(q.Get("error_description"), 200))
	}
	if _, err := o.discover(r.Context()); err != nil {
		return "", err
	}
	ctx := oidc.ClientContext(r.Context(), o.client)
	tok, err := o.oauth.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(fl.verifier))
	if err != nil {
		return "", oidcFail(http.StatusBadGateway, oidcProviderRefusedPage, "exchange the code: %w", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return "", oidcFail(http.StatusBadGateway, oidcBadTokenPage, "the token answer holds no ID token")
	}
	idt, err := o.verifier.Verify(ctx, raw)
	if err != nil {
		return "", oidcFail(http.StatusForbidden, oidcBadTokenPage, "verify the ID token: %w", err)
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(fl.nonce)) != 1 {
		return "", oidcFail(http.StatusForbidden, oidcBadTokenPage, "the ID token's nonce is not the one this sign-in sent")
	}
	var claims struct {
		PreferredUsername string `json:"preferred_username"`
		Name              string `json:"name"`
		Email             string `json:"email"`
		EmailVerified     any    `json:"email_verified"`
		Groups            any    `json:"groups"`
	}
	if err := idt.Claims(&claims); err != nil {
		return "", oidcFail(http.StatusForbidden, oidcBadTokenPage, "read the ID token's claims: %w", err)
	}
	if idt.Subject == "" {
		return "", oidcFail(http.StatusForbidden, oidcBadTokenPage, "the ID token has no sub")
	}
	actor, err := s.eng.ActorOf(r.Context(), engine.OIDCSubject(idt.Issuer, idt.Subject), func() (string, error) {
		return engine.FitActorName(claims.PreferredUsername, "user"), nil
	})
	if err != nil {
		return "", err
	}
	infoOf(r).actor = actor
	// The provider's name fills an empty display name; a name the person
	// chose stays.
	if err := s.eng.FillDisplayName(r.Context(), actor, claims.Name); err != nil {
		return "", err
	}
	// An address the provider says it verified is where the person's
	// mails go; one it did not verify is never stored.
	if isTrue(claims.EmailVerified) {
		if err := s.eng.KeepVerifiedEmail(r.Context(), actor, claims.Email); err != nil {
			return "", err
		}
	}
	admin := o.cfg.AdminGroup != "" && slices.Contains(stringsOf(claims.Groups), o.cfg.AdminGroup)
	code, _, err := s.eng.CreateLoginCodeAs(r.Context(), engine.Principal{Actor: actor, Admin: admin})
	if err != nil {
		return "", err
	}
	p := profile{DisplayName: engine.Truncate(strings.TrimSpace(claims.Name), 200)}
	if isTrue(claims.EmailVerified) {
		p.Email = engine.Truncate(claims.Email, 320)
	}
	s.profiles.put(engine.HashToken(code), p, engine.LoginCodeTTL)
	return code, nil
}

// stringsOf returns a claim that is a string or a list of strings as a
// list (providers send a single group either way).
func stringsOf(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// isTrue reports whether a boolean claim is true; some providers send
// email_verified as the string "true".
func isTrue(v any) bool {
	b, ok := v.(bool)
	return (ok && b) || v == "true"
}

// oidcRefuse answers a sign-in through the provider that opened no
// session with a page that says why, and logs the reason.
func (s *Server) oidcRefuse(w http.ResponseWriter, r *http.Request, err error) error {
	var f *oidcFailure
	switch {
	case errors.As(err, &f):
	case errors.Is(err, errProviderDown):
		w.Header().Set("Retry-After", fmt.Sprint(int(oidcRetryAfter/time.Second)))
		f = &oidcFailure{status: http.StatusServiceUnavailable, page: oidcDownPage, reason: err}
	default:
		return err
	}
	infoOf(r).outcome = "oidc_refused"
	infoOf(r).code = "oidc_refused"
	s.log.Warn("a sign-in through the identity provider opened no session", "reason", f.reason.Error())
	return writePage(w, f.status, f.page)
}

// oidcDoneTemplate is the callback's answer after a sign-in: it sends the
// browser on to the login path with the one-time code (a navigation of
// this page, so the browser calls it same-origin), where the form redeems
// it. The code is in the answer only.
var oidcDoneTemplate = template.Must(template.New("done").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="0;url={{.}}">
<title>Signed in</title>
<link rel="stylesheet" href="/style.css">
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
</head>
<body>
<main>
<section class="card">
<h1>Signed in</h1>
<p><a href="{{.}}">Continue / Weiter</a></p>
</section>
</main>
</body>
</html>
`))

var (
	oidcStalePage = page{
		Title:   "This sign-in has expired",
		Text:    "This sign-in was used already, took longer than 10 minutes, or was started before reserved restarted, so it opened no session. Go back to the form and sign in again.",
		TitleDE: "Diese Anmeldung ist abgelaufen",
		TextDE:  "Diese Anmeldung wurde schon benutzt, hat länger als 10 Minuten gedauert oder wurde vor einem Neustart von reserved begonnen; sie hat deshalb keine Sitzung geöffnet. Gehen Sie zurück zum Formular und melden Sie sich erneut an.",
	}
	oidcOtherBrowserPage = page{
		Title:   "Finish the sign-in in the browser that started it",
		Text:    "This answer of the identity provider belongs to a sign-in that another browser started (or this browser does not keep cookies for reserved), so it opened no session. Start the sign-in again from the form.",
		TitleDE: "Beenden Sie die Anmeldung im Browser, der sie begonnen hat",
		TextDE:  "Diese Antwort des Identitätsanbieters gehört zu einer Anmeldung, die ein anderer Browser begonnen hat (oder dieser Browser speichert keine Cookies für reserved); sie hat deshalb keine Sitzung geöffnet. Beginnen Sie die Anmeldung erneut im Formular.",
	}
	oidcProviderRefusedPage = page{
		Title:   "The identity provider did not sign you in",
		Text:    "The identity provider refused this sign-in or its code, so no session was opened. Start the sign-in again from the form; if it keeps failing, ask whoever runs reserved.",
		TitleDE: "Der Identitätsanbieter hat Sie nicht angemeldet",
		TextDE:  "Der Identitätsanbieter hat diese Anmeldung oder ihren Code abgelehnt; es wurde keine Sitzung geöffnet. Beginnen Sie die Anmeldung erneut im Formular; scheitert sie weiter, wenden Sie sich an den Betreiber von reserved.",
	}
	oidcBadTokenPage = page{
		Title:   "The sign-in could not be verified",
		Text:    "The identity provider's answer did not pass verification (its signature, issuer, audience, expiry or nonce was wrong), so no session was opened. Start the sign-in again from the form; if it keeps failing, ask whoever runs reserved.",
		TitleDE: "Die Anmeldung konnte nicht geprüft werden",
		TextDE:  "Die Antwort des Identitätsanbieters hat die Prüfung nicht bestanden (Signatur, Aussteller, Empfänger, Ablauf oder Nonce waren falsch); es wurde keine Sitzung geöffnet. Beginnen Sie die Anmeldung erneut im Formular; scheitert sie weiter, wenden Sie sich an den Betreiber von reserved.",
	}
	oidcDownPage = page{
		Title:   "Sign-in is not available right now",
		Text:    "reserved cannot reach the identity provider at the moment, so it cannot sign you in. Try again in a minute; nothing was changed.",
		TitleDE: "Die Anmeldung ist gerade nicht möglich",
		TextDE:  "reserved erreicht den Identitätsanbieter gerade nicht und kann Sie deshalb nicht anmelden. Versuchen Sie es in einer Minute erneut; es wurde nichts geändert.",
	}
)
