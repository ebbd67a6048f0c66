package server

import (
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// SessionTTL is how long a browser session lasts after its sign-in.
const SessionTTL = 12 * time.Hour

// A browser session is a bearer credential like an API token: the form
// keeps it in its tab's sessionStorage and sends it as "Authorization:
// Bearer rss_…" with every API request. The daemon reads no cookie at all.
// Browsers scope cookies by host, not by port, so a cookie of this listener
// would also go to every other web server on the same host, which could
// replay it or set one of its own (and a cookie the browser sends by
// itself invites cross-site request forgery). Web storage is scoped by
// origin, which includes the port: no other server can read the session,
// plant one, or make the browser send it. (The one cookie the daemon sets
// binds a sign-in through an identity provider in progress to its browser,
// see oidcStart; it authenticates nothing.)

// sessionOf returns the browser session that the request's Authorization
// header carries, or "" when it carries none (no header, or an API token).
func sessionOf(r *http.Request) string {
	token, err := bearerToken(r.Header.Get("Authorization"))
	if err != nil || !strings.HasPrefix(token, engine.SessionPrefix) {
		return ""
	}
	return token
}

// loginPage is GET /login?code=…, where a login link leads: the form's
// page, which redeems the code itself (POST /api/v1/sessions), keeps the
// session in its tab and removes the code from the address bar. No answer
// of this route sets a cookie.
//
// A login link is opened from outside the browser (pasted, or handed over
// by a terminal): Sec-Fetch-Site "none". A page of another site, or of
// another port of this host (the same site), must not be able to sign the
// browser in to a session of its choosing (login CSRF) by sending it to a
// login link of its own, so such a navigation gets an explanation without
// the page's script, and the code stays unused. The page redeems a code
// only at this path, and this check stands before every load of it; codes
// anywhere else in a URL (another path, a fragment, which no server sees)
// are ignored, so there is no way around the check by navigation. The
// redeem route itself refuses requests from other origins (see
// crossOriginProtection), and what it answers them could only land in
// that other origin, never in the form's storage.
//
// A navigation without Sec-Fetch-Site is refused the same way: it cannot
// be told from one that another page caused. Browsers send Fetch metadata
// only to potentially trustworthy origins (https, localhost, loopback
// addresses), so a listener reached over plain HTTP on another address
// never sees the header. The form is meant for such a secure context
// anyway (its session and its intents are kept in sessionStorage of one
// origin), and every browser that runs it there sends the header.
func (s *Server) loginPage(w http.ResponseWriter, r *http.Request, _ engine.Principal) error {
	if err := tcpOnly(r); err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "none", "same-origin":
	case "":
		infoOf(r).outcome = "no_fetch_metadata"
		infoOf(r).code = engine.CodeForbidden
		return writePage(w, http.StatusForbidden, loginNoMetadataPage)
	default:
		infoOf(r).outcome = "cross_origin"
		infoOf(r).code = engine.CodeForbidden
		return writePage(w, http.StatusForbidden, loginCrossSitePage)
	}
	staticFileNamed("index.html").serve(w, r, false) // No-store: nothing to revalidate.
	return nil
}

// createSession is POST /api/v1/sessions: it redeems a one-time login code
// and answers a new browser session of the code's actor (never an admin).
// A session the request carries (the tab's previous sign-in) is ended once
// the new one is open. A bad, used or expired code is 401 and opens
// nothing.
func (s *Server) createSession(w http.ResponseWriter, r *http.Request, _ engine.Principal) error {
	if err := tcpOnly(r); err != nil {
		return err
	}
	req, err := decodeBody(w, r, api.DecodeSessionRequest)
	if err != nil {
		return err
	}
	session, who, expires, err := s.eng.RedeemLoginCode(r.Context(), req.Code, SessionTTL)
	if err != nil {
		return err
	}
	infoOf(r).actor = who.Actor
	s.profiles.move(engine.HashToken(req.Code), engine.HashToken(session), SessionTTL)
	if old := sessionOf(r); old != "" {
		if err := s.eng.EndSession(r.Context(), old); err != nil {
			s.log.Warn("could not end the tab's previous session at a new sign-in", "error", err)
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	return writeJSON(w, http.StatusCreated, api.SessionResponse{Session: session, Actor: who.Actor, ExpiresAt: expires.UTC()})
}

// endSession is DELETE /api/v1/sessions/current: it ends the browser
// session that the request's Authorization header carries and answers 204,
// also when that session had ended already, so signing out can be
// repeated.
func (s *Server) endSession(w http.ResponseWriter, r *http.Request, _ engine.Principal) error {
	if err := tcpOnly(r); err != nil {
		return err
	}
	session := sessionOf(r)
	if session == "" {
		return engine.Errorf(engine.CodeUnauthenticated, "this request ends the browser session it is authenticated with: it needs an Authorization: Bearer %s… header", engine.SessionPrefix)
	}
	if err := s.eng.EndSession(r.Context(), session); err != nil {
		return err
	}
	s.profiles.forget(engine.HashToken(session))
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// page is a small static HTML answer of the sign-in, in English and German.
type page struct {
	Title, Text, TitleDE, TextDE string
}

var loginCrossSitePage = page{
	Title:   "Open the login link yourself",
	Text:    "This login link was opened from another web page, which could sign your browser in to someone else's session, so it was not used. Copy the link that 'reservectl login-link' printed into the address bar.",
	TitleDE: "Öffnen Sie den Anmeldelink selbst",
	TextDE:  "Dieser Anmeldelink wurde von einer anderen Webseite aus geöffnet, die Ihren Browser so in die Sitzung eines anderen anmelden könnte; er wurde deshalb nicht benutzt. Kopieren Sie den Link, den 'reservectl login-link' ausgegeben hat, in die Adresszeile.",
}

var loginNoMetadataPage = page{
	Title:   "Sign in from a secure page",
	Text:    "Your browser did not say how this login link was opened (it sends no Fetch metadata to a page served over plain HTTP from another machine), so another web page could have opened it to sign you in to someone else's session; it was not used. Open the link in a current browser on the machine reserved runs on, or ask whoever runs reserved to serve the form over HTTPS or on a loopback address.",
	TitleDE: "Anmelden auf einer sicheren Seite",
	TextDE:  "Ihr Browser hat nicht angegeben, wie dieser Anmeldelink geöffnet wurde (einer Seite, die über unverschlüsseltes HTTP von einem anderen Rechner kommt, sendet er keine Fetch-Metadaten); eine andere Webseite könnte ihn also geöffnet haben, um Sie in die Sitzung eines anderen anzumelden. Er wurde deshalb nicht benutzt. Öffnen Sie den Link in einem aktuellen Browser auf dem Rechner, auf dem reserved läuft, oder bitten Sie den Betreiber, das Formular über HTTPS oder auf einer Loopback-Adresse anzubieten.",
}

var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>{{.Title}}</title>
<link rel="stylesheet" href="/style.css">
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
</head>
<body>
<main>
<section class="card">
<h1>{{.Title}}</h1>
<p>{{.Text}}</p>
<div lang="de">
<h2>{{.TitleDE}}</h2>
<p>{{.TextDE}}</p>
</div>
<p><a href="/">Reserve a place / Platz reservieren</a></p>
</section>
</main>
</body>
</html>
`))

// writePage answers a page with status. Once the status is sent a failing
// write cannot be answered any more, so it is not reported.
func writePage(w http.ResponseWriter, status int, p page) error {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	pageTemplate.Execute(w, p)
	return nil
}
