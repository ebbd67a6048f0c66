package api

import (
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// Paths and names of the browser sign-in.
const (
	// PathLoginLinks makes a one-time browser login link (Unix socket only).
	PathLoginLinks = "/api/v1/login-links"
	// PathLogin redeems a login code and opens a browser session.
	PathLogin = "/login"
	// PathLogout ends the browser session.
	PathLogout = "/logout"
	// SessionCookie is the name of the cookie that carries a browser session.
	SessionCookie = "reserved_session"
)

// LoginLinkRequest is the optional body of POST /api/v1/login-links. An
// empty Actor means the caller's own actor; another actor needs an admin.
type LoginLinkRequest struct {
	Actor string `json:"actor,omitempty"`
}

// DecodeLoginLinkRequest decodes a LoginLinkRequest strictly: "actor" is
// optional.
func DecodeLoginLinkRequest(body []byte) (LoginLinkRequest, error) {
	var r LoginLinkRequest
	err := engine.DecodeStrict(body, []engine.Member{
		engine.StringMember("actor", false, engine.ValidateActor, &r.Actor),
	})
	return r, err
}

// LoginLinkResponse is the answer to POST /api/v1/login-links: a URL on the
// daemon's TCP listener that signs a browser in as Actor once, until
// ExpiresAt.
type LoginLinkResponse struct {
	URL       string    `json:"url"`
	Actor     string    `json:"actor"`
	ExpiresAt time.Time `json:"expires_at"`
}
