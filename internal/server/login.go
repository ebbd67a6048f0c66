package server

import (
	"context"
	"net"
	"net/http"
	"net/url"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// createLoginLink is POST /api/v1/login-links, on the Unix socket only: it
// makes a one-time login code and answers the URL that opens a browser
// session with it. The link is for the caller's own actor; an admin may name
// another actor in the body ({"actor":"bob"}), as it may create a token for
// one.
func (s *Server) createLoginLink(w http.ResponseWriter, r *http.Request, who engine.Principal) error {
	if !connOf(r.Context()).socket {
		return engine.Errorf(engine.CodeForbidden, "login links are only made on the Unix socket: run 'reservectl login-link' on the machine that runs reserved")
	}
	base := s.loginBaseURL()
	if base == "" {
		return engine.Errorf(api.CodeNotFound, "reserved has no TCP listener to sign in on: start it with --listen")
	}
	var req api.LoginLinkRequest
	if r.ContentLength != 0 {
		var err error
		if req, err = decodeBody(w, r, api.DecodeLoginLinkRequest); err != nil {
			return err
		}
	}
	actor := who.Actor
	if req.Actor != "" && req.Actor != who.Actor {
		if !who.Admin {
			return engine.Errorf(engine.CodeForbidden, "%s is not an admin and may only get a login link for itself", who.Actor)
		}
		actor = req.Actor
	}
	if req.Admin && !who.Admin {
		return engine.Errorf(engine.CodeForbidden, "%s is not an admin and may not get a link to an admin's session", who.Actor)
	}
	code, expires, err := s.eng.CreateLoginCodeAs(r.Context(), engine.Principal{Actor: actor, Admin: req.Admin})
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	return writeJSON(w, http.StatusCreated, api.LoginLinkResponse{URL: LoginURL(base, code), Actor: actor, Admin: req.Admin, ExpiresAt: expires.UTC()})
}

// loginBaseURL is the configured base URL of login links, else the one of
// the first TCP listener served.
func (s *Server) loginBaseURL() string {
	if s.loginBase != "" {
		return s.loginBase
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tcpBase
}

// BaseURL returns the http:// base URL under which a browser on the same
// machine reaches a TCP listener bound to addr (host:port). An unspecified
// address (0.0.0.0, ::) becomes a loopback name.
func BaseURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if ip.To4() == nil {
			host = "localhost"
		}
	}
	return "http://" + net.JoinHostPort(host, port)
}

// LoginURL returns the login link of code under base.
func LoginURL(base, code string) string {
	return base + api.PathLogin + "?" + url.Values{"code": {code}}.Encode()
}

// OwnerActor returns the actor of the user uid on the Unix socket
// (SocketActor, with the system's user database): the daemon uses it for
// the login link it prints for its owner at start.
func OwnerActor(ctx context.Context, eng *engine.Engine, uid int) (string, error) {
	return SocketActor(ctx, eng, uint32(uid), lookupUsername)
}
