package api

import (
	"time"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/strictjson"
)

// Paths of the browser sign-in.
const (
	// PathLoginLinks makes a one-time browser login link (Unix socket only).
	PathLoginLinks = "/api/v1/login-links"
	// PathLogin is where a login link leads: the form's page, which redeems
	// the link's code itself.
	PathLogin = "/login"
	// PathSessions redeems a login code for a browser session.
	PathSessions = "/api/v1/sessions"
	// PathCurrentSession is the session that authenticates the request;
	// DELETE ends it.
	PathCurrentSession = "/api/v1/sessions/current"
)

// LoginLinkRequest is the optional body of POST /api/v1/login-links. An
// empty Actor means the caller's own actor; another actor needs an admin.
type LoginLinkRequest struct {
	Actor string `json:"actor,omitempty"`
	// Admin asks for an admin's session (the organizer's page); only an
	// admin may ask for one.
	Admin bool `json:"admin,omitempty"`
}

// DecodeLoginLinkRequest decodes a LoginLinkRequest strictly: "actor" is
// optional.
func DecodeLoginLinkRequest(body []byte) (LoginLinkRequest, error) {
	var r LoginLinkRequest
	err := DecodeStrict(body, []strictjson.Member{
		strictjson.StringMember("actor", false, engine.ValidateActor, &r.Actor),
		strictjson.BoolMember("admin", false, &r.Admin),
	})
	return r, err
}

// LoginLinkResponse is the answer to POST /api/v1/login-links: a URL on the
// daemon's TCP listener that signs a browser in as Actor once, until
// ExpiresAt.
type LoginLinkResponse struct {
	URL       string    `json:"url"`
	Actor     string    `json:"actor"`
	Admin     bool      `json:"admin,omitempty"`
	ExpiresAt time.Time `json:"expires_at"`
}

// SessionRequest is the body of POST /api/v1/sessions: the one-time code
// of a login link.
type SessionRequest struct {
	Code string `json:"code"`
}

// DecodeSessionRequest decodes a SessionRequest strictly: "code" is
// required. Whether the code is valid is the engine's decision.
func DecodeSessionRequest(body []byte) (SessionRequest, error) {
	var r SessionRequest
	err := DecodeStrict(body, []strictjson.Member{
		strictjson.StringMember("code", true, nil, &r.Code),
	})
	return r, err
}

// SessionResponse is the answer to POST /api/v1/sessions: a browser
// session of Actor, sent as "Authorization: Bearer <session>", until
// ExpiresAt. It is shown once and never again.
type SessionResponse struct {
	Session   string    `json:"session"`
	Actor     string    `json:"actor"`
	ExpiresAt time.Time `json:"expires_at"`
}
