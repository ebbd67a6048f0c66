package client

import (
	"context"
	"net/http"

	"github.com/reserve/reserve/internal/api"
)

// LoginLink asks the daemon (over its Unix socket) for a one-time browser
// login link. An empty actor means the caller's own; another actor needs an
// admin.
func (c *Client) LoginLink(ctx context.Context, actor string) (api.LoginLinkResponse, error) {
	return c.LoginLinkFor(ctx, api.LoginLinkRequest{Actor: actor})
}

// LoginLinkFor is LoginLink with every member of the request: an admin may
// ask for a link to an admin's session (the organizer's page).
func (c *Client) LoginLinkFor(ctx context.Context, req api.LoginLinkRequest) (api.LoginLinkResponse, error) {
	var out api.LoginLinkResponse
	_, err := c.call(ctx, http.MethodPost, api.PathLoginLinks, nil, req, &out, http.StatusCreated)
	return out, err
}

// OpenSession redeems a one-time login code over TCP, as the browser form
// does, and returns the browser session it opens. The session works as the
// Token of a Client.
func (c *Client) OpenSession(ctx context.Context, code string) (api.SessionResponse, error) {
	var out api.SessionResponse
	_, err := c.call(ctx, http.MethodPost, api.PathSessions, nil, api.SessionRequest{Code: code}, &out, http.StatusCreated)
	return out, err
}
