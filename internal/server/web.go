package server

import (
	"net/http"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// contentSecurityPolicy allows the form only its own scripts, styles and
// images, no inline code, no frames around it and no form posts elsewhere.
const contentSecurityPolicy = "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'"

// webRoutes are the routes of the browser form, its sign-in and the
// organizer's page, served on TCP only (the handlers refuse the socket).
// The organizer's page is served to anyone: it holds no data, and asks the
// API, as the tab's session, for everything it shows.
func (s *Server) webRoutes() []route {
	return []route{
		{"GET /{$}", anyone, s.asset("index.html")},
		{"GET /app.js", anyone, s.asset("app.js")},
		{"GET /answers.js", anyone, s.asset("answers.js")},
		{"GET /common.js", anyone, s.asset("common.js")},
		{"GET /style.css", anyone, s.asset("style.css")},
		{"GET /favicon.svg", anyone, s.asset("favicon.svg")},
		{"GET /admin", anyone, s.asset("admin.html")},
		{"GET /admin.js", anyone, s.asset("admin.js")},
		{"GET /admin.css", anyone, s.asset("admin.css")},
		{"GET " + api.PathLogin, anyone, s.loginPage},
		{"POST " + api.PathSessions, anyone, s.createSession},
		{"DELETE " + api.PathCurrentSession, anyone, s.endSession},
		{"POST " + api.PathLoginLinks, actor, s.createLoginLink},
	}
}

// asset serves one file of the embedded pages (see staticFile.serve):
// compressed with gzip for browsers that accept it, with a strong ETag,
// and Cache-Control no-cache, so a browser keeps its copy but asks at
// every load whether it is still the current one; while it is, the answer
// is a 304 without a body. The files keep their names across versions
// (the routes are part of the described API, and a page loads its
// scripts by name), so revalidation, not a lifetime, is what makes a
// browser load the new app.js together with the new index.html after an
// upgrade.
func (s *Server) asset(name string) handlerFunc {
	f := staticFileNamed(name)
	return func(w http.ResponseWriter, r *http.Request, _ engine.Principal) error {
		if err := tcpOnly(r); err != nil {
			return err
		}
		w.Header().Set("Cache-Control", "no-cache")
		f.serve(w, r, true)
		return nil
	}
}

// tcpOnly refuses the browser routes on the Unix socket: the form and its
// sessions belong to the TCP listener.
func tcpOnly(r *http.Request) error {
	if connOf(r.Context()).socket {
		return engine.Errorf(api.CodeNotFound, "the browser form is served on the TCP listener, not on the Unix socket")
	}
	return nil
}

// browserHeaders sets the headers that keep browsers strict with every
// answer of a TCP listener: the content security policy, no MIME sniffing,
// no referrer (a login link's code must not leak), and no framing.
func browserHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		for name, values := range securityHeaders {
			h[name] = values
		}
		next.ServeHTTP(w, r)
	})
}

// securityHeaders are set on every TCP response. The value slices are shared
// by all responses (saving an allocation per header and request), which is
// safe: Header.Set and Header.Del replace or drop a slice, Header.Add
// appends to one whose capacity equals its length, and net/http copies the
// map before writing it.
var securityHeaders = map[string][]string{
	"Content-Security-Policy":      {contentSecurityPolicy},
	"X-Content-Type-Options":       {"nosniff"},
	"Referrer-Policy":              {"no-referrer"},
	"X-Frame-Options":              {"DENY"},
	"Cross-Origin-Opener-Policy":   {"same-origin"},
	"Cross-Origin-Resource-Policy": {"same-origin"},
}

// crossOriginProtection refuses unsafe requests (POST, PUT, DELETE, …) that
// a browser sends from another origin, another port of this host included.
// No credential goes along with such a request by itself (the daemon reads
// no cookies), so this is a second wall, and the one that keeps a page
// elsewhere from redeeming a login code here: its code stays unused.
// Requests without Sec-Fetch-Site and Origin headers, as non-browser
// clients with a bearer token send them, pass.
func crossOriginProtection(next http.Handler) http.Handler {
	p := http.NewCrossOriginProtection()
	p.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		infoOf(r).outcome = "cross_origin"
		fail(w, r, engine.Errorf(engine.CodeForbidden, "cross-origin %s refused: a browser may only send it from the form's own origin", r.Method))
	}))
	return p.Handler(next)
}
