package server

import (
	"html/template"
	"net/http"
	"time"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// SessionTTL is how long a browser session lasts after its sign-in.
const SessionTTL = 12 * time.Hour

// sessionPrincipal authenticates a TCP request by its session cookie; it
// is only asked when the request has no Authorization header. A session is
// never an admin.
func (s *Server) sessionPrincipal(r *http.Request) (engine.Principal, bool, error) {
	c, err := r.Cookie(api.SessionCookie)
	if err != nil {
		return engine.Principal{}, false, nil
	}
	p, err := s.eng.SessionPrincipal(r.Context(), c.Value)
	return p, true, err
}

// login is GET /login?code=…: it redeems a one-time login code, sets the
// session cookie and redirects to the form with 303, so the code leaves the
// address bar. A session the browser already had is ended. A bad, used or
// expired code gets an error page and no session.
func (s *Server) login(w http.ResponseWriter, r *http.Request, _ engine.Principal) error {
	if err := tcpOnly(r); err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	// A login link is opened from outside the browser (pasted, or handed
	// over by a terminal): Sec-Fetch-Site "none". A page of another site,
	// or of another port of this host, must not be able to sign the
	// browser in to a session of its choosing (login CSRF), so such a
	// navigation is refused before the code is used. Browsers without
	// Fetch metadata send no Sec-Fetch-Site and pass.
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "none" && site != "same-origin" {
		infoOf(r).outcome = "cross_origin"
		infoOf(r).code = engine.CodeForbidden
		return writePage(w, http.StatusForbidden, loginCrossSitePage)
	}
	session, who, expires, err := s.eng.RedeemLoginCode(r.Context(), r.URL.Query().Get("code"), SessionTTL)
	if engine.ErrorCode(err) == engine.CodeUnauthenticated {
		infoOf(r).code = engine.CodeUnauthenticated
		return writePage(w, http.StatusBadRequest, loginFailedPage)
	}
	if err != nil {
		return err
	}
	infoOf(r).actor = who.Actor
	if old, err := r.Cookie(api.SessionCookie); err == nil {
		if err := s.eng.EndSession(r.Context(), old.Value); err != nil {
			s.log.Warn("could not end the browser's previous session at a new sign-in", "error", err)
		}
	}
	http.SetCookie(w, sessionCookie(session, expires))
	http.Redirect(w, r, "/", http.StatusSeeOther)
	return nil
}

// logout is POST /logout: it ends the session of the cookie, expires the
// cookie and redirects to the form with 303. Without a session it only
// redirects.
func (s *Server) logout(w http.ResponseWriter, r *http.Request, _ engine.Principal) error {
	if err := tcpOnly(r); err != nil {
		return err
	}
	if c, err := r.Cookie(api.SessionCookie); err == nil {
		if err := s.eng.EndSession(r.Context(), c.Value); err != nil {
			return err
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	http.SetCookie(w, sessionCookie("", time.Time{}))
	http.Redirect(w, r, "/", http.StatusSeeOther)
	return nil
}

// sessionCookie returns the cookie of a session that ends at expires, or
// for an empty session the cookie that makes the browser forget it.
func sessionCookie(session string, expires time.Time) *http.Cookie {
	c := &http.Cookie{
		Name:     api.SessionCookie,
		Value:    session,
		Path:     "/",
		HttpOnly: true,
		SameSite: http.SameSiteStrictMode,
	}
	if session == "" {
		c.MaxAge = -1
		return c
	}
	c.Expires = expires.UTC()
	c.MaxAge = max(1, int(time.Until(expires).Seconds()))
	return c
}

// page is a small static HTML answer of the sign-in, in English and German.
type page struct {
	Title, Text, TitleDE, TextDE string
}

var loginFailedPage = page{
	Title:   "This login link is not valid",
	Text:    "It was used already, has expired (links last 5 minutes), or was copied incompletely. On the machine that runs reserved, run 'reservectl login-link' and open the new link.",
	TitleDE: "Dieser Anmeldelink ist ungültig",
	TextDE:  "Er wurde schon benutzt, ist abgelaufen (Links gelten 5 Minuten) oder wurde unvollständig kopiert. Führen Sie auf dem Rechner, auf dem reserved läuft, 'reservectl login-link' aus und öffnen Sie den neuen Link.",
}

var loginCrossSitePage = page{
	Title:   "Open the login link yourself",
	Text:    "This login link was opened from another web page, which could sign your browser in to someone else's session, so it was not used. Copy the link that 'reservectl login-link' printed into the address bar.",
	TitleDE: "Öffnen Sie den Anmeldelink selbst",
	TextDE:  "Dieser Anmeldelink wurde von einer anderen Webseite aus geöffnet, die Ihren Browser so in die Sitzung eines anderen anmelden könnte; er wurde deshalb nicht benutzt. Kopieren Sie den Link, den 'reservectl login-link' ausgegeben hat, in die Adresszeile.",
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
