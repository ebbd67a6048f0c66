package server

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"net/mail"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
	rmail "github.com/reserve/reserve/internal/mail"
)

// EmailPolicy says which addresses may sign in by email links
// (--email-sign-in): none (the zero policy, "off"), those of some
// domains, or every address ("open").
type EmailPolicy struct {
	open    bool
	domains map[string]bool
}

// ParseEmailPolicy parses off, open or domains:a.org,b.org.
func ParseEmailPolicy(s string) (EmailPolicy, error) {
	switch {
	case s == "off":
		return EmailPolicy{}, nil
	case s == "open":
		return EmailPolicy{open: true}, nil
	case strings.HasPrefix(s, "domains:"):
		p := EmailPolicy{domains: map[string]bool{}}
		for d := range strings.SplitSeq(strings.TrimPrefix(s, "domains:"), ",") {
			d = strings.ToLower(strings.TrimSpace(d))
			if _, err := engine.NormalizeEmail("x@" + d); err != nil || strings.ContainsAny(d, "@") {
				return EmailPolicy{}, fmt.Errorf("--email-sign-in %q: %q is not a mail domain such as example.org", s, d)
			}
			p.domains[d] = true
		}
		return p, nil
	}
	return EmailPolicy{}, fmt.Errorf("--email-sign-in %q: use off, open, or domains:example.org,example.com", s)
}

// Enabled reports whether any address may sign in by email.
func (p EmailPolicy) Enabled() bool { return p.open || len(p.domains) > 0 }

// allows reports whether addr (normalized) may sign in by email.
func (p EmailPolicy) allows(addr string) bool {
	_, domain, _ := strings.Cut(addr, "@")
	return p.open || p.domains[domain]
}

// Mailer queues mail without waiting for it to be sent (mail.Queue).
type Mailer interface {
	Enqueue(rmail.Message) error
}

// Defaults of the sign-in rate limits: per address and per client, in
// each window.
const (
	DefaultSignInPerAddress = 3
	DefaultSignInPerClient  = 10
	DefaultSignInWindow     = 15 * time.Minute
	// signInKeys bounds the addresses and clients the limits remember;
	// when every one of them is in its window, further requests are
	// refused until some window ends.
	signInKeys = 100_000
)

// EmailSignIn configures sign-in by links mailed to people
// (POST /api/v1/sign-in/email).
type EmailSignIn struct {
	// Policy says which addresses get a link. The zero policy offers no
	// sign-in by email: the route answers 404 not_found.
	Policy EmailPolicy
	// Mailer queues the mails. Required when Policy is enabled.
	Mailer Mailer
	// From is the sender of the mails (--mail-from).
	From mail.Address
	// PerAddress and PerClient bound the requests per address (its
	// sub-addresses, "ada+x@" for "ada@", count as the address) and per
	// client address (an IPv6 client by its /64) in each Window. Zero
	// means the defaults.
	PerAddress, PerClient int
	Window                time.Duration
	// Now is the clock of the limits. Nil means time.Now.
	Now func() time.Time
}

// emailSignIn is the running sign-in by email of a server.
type emailSignIn struct {
	cfg                   EmailSignIn
	perAddress, perClient *rateLimiter
}

func newEmailSignIn(cfg *EmailSignIn) *emailSignIn {
	if cfg == nil || !cfg.Policy.Enabled() {
		return nil
	}
	c := *cfg
	if c.PerAddress <= 0 {
		c.PerAddress = DefaultSignInPerAddress
	}
	if c.PerClient <= 0 {
		c.PerClient = DefaultSignInPerClient
	}
	if c.Window <= 0 {
		c.Window = DefaultSignInWindow
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return &emailSignIn{cfg: c, perAddress: newRateLimiter(c.PerAddress, c.Window), perClient: newRateLimiter(c.PerClient, c.Window)}
}

// signInRoutes are the routes of signing in without a login link made on
// the machine.
func (s *Server) signInRoutes() []route {
	return []route{
		{"GET " + api.PathSignIn, anyone, s.signInMethods},
		{"POST " + api.PathSignInEmail, anyone, s.signInByEmail},
	}
}

// The sign-in methods that GET /api/v1/sign-in can name besides
// api.SignInMethodEmail.
const (
	// SignInOIDC is the sign-in through an OpenID Connect provider, at
	// OIDCStartPath.
	SignInOIDC = "oidc"
	// SignInLink is a login link made by 'reservectl login-link'; it is
	// always offered.
	SignInLink = "link"
)

// signInMethods is GET /api/v1/sign-in: the sign-in methods offered, so
// that the form can show them before anyone has signed in.
func (s *Server) signInMethods(w http.ResponseWriter, r *http.Request, _ engine.Principal) error {
	m := api.SignInMethods{Methods: []string{}}
	if s.oidc != nil {
		m.Methods = append(m.Methods, SignInOIDC)
		m.OIDCName = s.oidc.cfg.Name
	}
	if s.emailSignIn != nil {
		m.Methods = append(m.Methods, api.SignInMethodEmail)
	}
	m.Methods = append(m.Methods, SignInLink)
	w.Header().Set("Cache-Control", "no-store")
	return writeJSON(w, http.StatusOK, m)
}

// signInByEmail is POST /api/v1/sign-in/email, on TCP: it answers 202
// whatever the address, so that nobody learns from it which addresses
// have an actor or may sign in, and mails a one-time link valid for
// engine.EmailCodeTTL when the policy allows the address. Requests are
// limited per address and per client (429 too_many_requests with
// Retry-After). Nothing is bound until the link is redeemed.
func (s *Server) signInByEmail(w http.ResponseWriter, r *http.Request, _ engine.Principal) error {
	if err := tcpOnly(r); err != nil {
		return err
	}
	es := s.emailSignIn
	if es == nil {
		return engine.Errorf(api.CodeNotFound, "this reserved does not offer sign-in by email (it runs with --email-sign-in=off); ask whoever runs it for a login link")
	}
	req, err := decodeBody(w, r, api.DecodeEmailSignInRequest)
	if err != nil {
		return err
	}
	addr, err := engine.NormalizeEmail(req.Email)
	if err != nil {
		return err
	}
	now := es.cfg.Now()
	if wait, ok := es.perClient.allow(clientKey(r.RemoteAddr), now); !ok {
		return tooManyRequests(w, wait, "this client asked for %d sign-in links within %v", es.cfg.PerClient, es.cfg.Window)
	}
	if wait, ok := es.perAddress.allow(engine.EmailMailbox(addr), now); !ok {
		return tooManyRequests(w, wait, "%d sign-in links were asked for this address within %v; use the newest one that arrived", es.cfg.PerAddress, es.cfg.Window)
	}
	if es.cfg.Policy.allows(addr) {
		if err := s.mailSignInLink(r.Context(), addr, languageOf(req.Language, r.Header.Get("Accept-Language"))); err != nil {
			return err
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	return writeJSON(w, http.StatusAccepted, api.EmailSignInResponse{Status: "accepted", ExpiresIn: int(engine.EmailCodeTTL / time.Second)})
}

// mailSignInLink makes a sign-in code for addr and queues the mail with
// its link in lang.
func (s *Server) mailSignInLink(ctx context.Context, addr, lang string) error {
	code, expires, err := s.eng.CreateEmailCode(ctx, addr)
	if err != nil {
		return err
	}
	m, err := signInMail(s.emailSignIn.cfg.From, addr, LoginURL(s.loginBaseURL(), code), expires, lang)
	if err != nil {
		return err
	}
	if err := s.emailSignIn.cfg.Mailer.Enqueue(m); err != nil {
		return tooManyRequestsError(time.Minute, "the daemon's mail queue is full; ask again in a minute")
	}
	return nil
}

// tooManyRequests sets Retry-After (whole seconds, rounded up) and
// returns the refusal.
func tooManyRequests(w http.ResponseWriter, wait time.Duration, format string, args ...any) error {
	w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
	return engine.Errorf(api.CodeTooManyRequests, "too many sign-in requests: "+format+"; ask again after Retry-After seconds", args...)
}

// tooManyRequestsError is a too_many_requests refusal whose Retry-After
// fail sets from the error.
func tooManyRequestsError(wait time.Duration, detail string) error {
	return &retryLater{err: engine.Errorf(api.CodeTooManyRequests, "%s", detail), wait: wait}
}

// retryLater is a refusal with a Retry-After.
type retryLater struct {
	err  *engine.Error
	wait time.Duration
}

func (e *retryLater) Error() string { return e.err.Error() }
func (e *retryLater) Unwrap() error { return e.err }

// clientKey is what the per-client limit counts by: the client's IP
// address, an IPv6 address by its /64 (one customer's network).
func clientKey(remote string) string {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return remote
	}
	a := ap.Addr().Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// languageOf is the language of a sign-in mail: the request's "language"
// member, else the first of en and de in Accept-Language by its q values,
// else English.
func languageOf(member, acceptLanguage string) string {
	if member != "" {
		return member
	}
	best, bestQ := "en", 0.0
	for part := range strings.SplitSeq(acceptLanguage, ",") {
		tag, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				q = f
			}
		}
		primary, _, _ := strings.Cut(strings.ToLower(tag), "-")
		if (primary == "en" || primary == "de") && q > bestQ {
			best, bestQ = primary, q
		}
	}
	return best
}

// rateLimiter allows each key limit events in any window (a sliding
// window), remembering at most signInKeys keys; once a window it forgets
// the keys whose events have all left it.
type rateLimiter struct {
	mu     sync.Mutex
	limit  int
	window time.Duration
	hits   map[string][]time.Time
	swept  time.Time // When keys were last forgotten.
}

func newRateLimiter(limit int, window time.Duration) *rateLimiter {
	return &rateLimiter{limit: limit, window: window, hits: map[string][]time.Time{}}
}

// allow records an event of key at now and reports whether it is within
// the limit; if not, it records nothing and says how long until it would
// be.
func (l *rateLimiter) allow(key string, now time.Time) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.swept) >= l.window || len(l.hits) >= signInKeys {
		for k := range l.hits {
			l.live(k, now)
		}
		l.swept = now
	}
	recent := l.live(key, now)
	if len(recent) >= l.limit {
		return recent[0].Add(l.window).Sub(now), false
	}
	if len(l.hits) >= signInKeys && recent == nil {
		return l.window, false
	}
	l.hits[key] = append(recent, now)
	return 0, true
}

// live drops the events of key that left the window before now and
// returns the others, oldest first.
func (l *rateLimiter) live(key string, now time.Time) []time.Time {
	ts := l.hits[key]
	i := 0
	for i < len(ts) && !now.Before(ts[i].Add(l.window)) {
		i++
	}
	if i == len(ts) {
		delete(l.hits, key)
		return nil
	}
	l.hits[key] = ts[i:]
	return ts[i:]
}

// The sign-in mail, in English and German.
var signInTexts = map[string]struct{ Subject, Hello, Open, Valid, Ignore string }{
	"en": {
		Subject: "Your sign-in link for Reserve",
		Hello:   "Hello,",
		Open:    "open this link to sign in to Reserve as %s:",
		Valid:   "The link works once and until %s (UTC), 15 minutes from when you asked for it.",
		Ignore:  "If you did not ask for it, ignore this mail: nobody can sign in without the link.",
	},
	"de": {
		Subject: "Ihr Anmeldelink für Reserve",
		Hello:   "Guten Tag,",
		Open:    "öffnen Sie diesen Link, um sich bei Reserve als %s anzumelden:",
		Valid:   "Der Link gilt einmal und bis %s (UTC), 15 Minuten nachdem Sie ihn angefordert haben.",
		Ignore:  "Wenn Sie ihn nicht angefordert haben, ignorieren Sie diese Mail: ohne den Link kann sich niemand anmelden.",
	},
}

var signInHTML = template.Must(template.New("signin").Parse(`<!doctype html>
<html lang="{{.Lang}}"><head><meta charset="utf-8"><title>{{.Subject}}</title></head>
<body>
<p>{{.Hello}}</p>
<p>{{.Open}}</p>
<p><a href="{{.Link}}">{{.Link}}</a></p>
<p>{{.Valid}}</p>
<p>{{.Ignore}}</p>
</body></html>
`))

// signInMail is the mail with a sign-in link to addr, in lang.
func signInMail(from mail.Address, addr, link string, expires time.Time, lang string) (rmail.Message, error) {
	t, ok := signInTexts[lang]
	if !ok {
		lang, t = "en", signInTexts["en"]
	}
	data := struct {
		Lang, Subject, Hello, Open, Link, Valid, Ignore string
	}{lang, t.Subject, t.Hello, fmt.Sprintf(t.Open, addr), link, fmt.Sprintf(t.Valid, expires.UTC().Format("15:04")), t.Ignore}
	html, err := rmail.HTMLBody(signInHTML, data)
	if err != nil {
		return rmail.Message{}, err
	}
	text := strings.Join([]string{data.Hello, "", data.Open, "", data.Link, "", data.Valid, "", data.Ignore, ""}, "\n")
	return rmail.Message{From: from, To: mail.Address{Address: addr}, Subject: t.Subject, Text: text, HTML: html, Lang: lang, Deadline: expires}, nil
}
