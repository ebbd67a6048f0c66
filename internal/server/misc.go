package server

import (
	"net/http"
	"time"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// ReadyTimeout is how long GET /readyz waits for the store to answer a
// read before it answers 503.
const ReadyTimeout = time.Second

// ready is GET /readyz: 200 once the store answers a read within
// ReadyTimeout, else 503 store_unavailable, so that a load balancer sends
// requests only to a daemon whose store can decide them.
func (s *Server) ready(w http.ResponseWriter, r *http.Request, _ engine.Principal) error {
	if err := s.eng.Ping(r.Context(), ReadyTimeout); err != nil {
		return err
	}
	return s.health(w, r, engine.Principal{})
}

// health is GET /healthz and GET /livez: 200 whenever the process serves,
// whatever the state of the store.
func (s *Server) health(w http.ResponseWriter, _ *http.Request, _ engine.Principal) error {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte("ok\n"))
	return nil
}

// whoami is GET /api/v1/whoami.
func (s *Server) whoami(w http.ResponseWriter, r *http.Request, who engine.Principal) error {
	body, err := s.whoamiOf(r, who)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, body)
}

// serveMetrics is GET /metrics in the Prometheus text format.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request, _ engine.Principal) error {
	s.metrics.handler().ServeHTTP(w, r)
	return nil
}

// createToken is POST /api/v1/tokens. The token is in this answer only; the
// store keeps its hash.
func (s *Server) createToken(w http.ResponseWriter, r *http.Request, _ engine.Principal) error {
	req, err := decodeBody(w, r, api.DecodeTokenRequest)
	if err != nil {
		return err
	}
	token, info, err := s.eng.IssueToken(r.Context(), req.Spec())
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	return writeJSON(w, http.StatusCreated, api.TokenResponse{ID: info.ID, Token: token, Actor: info.Actor, Admin: info.Admin, ExpiresAt: info.ExpiresAt})
}

// listTokens is GET /api/v1/tokens: the API tokens, never a secret or a
// hash.
func (s *Server) listTokens(w http.ResponseWriter, r *http.Request, _ engine.Principal) error {
	list, err := s.eng.Tokens(r.Context())
	if err != nil {
		return err
	}
	if list == nil {
		list = []engine.TokenInfo{}
	}
	w.Header().Set("Cache-Control", "no-store")
	return writeJSON(w, http.StatusOK, api.TokenList{Tokens: list})
}

// revokeToken is DELETE /api/v1/tokens/{id}: 204 once the token is refused
// everywhere; 404 unknown_token for an id that names no token, also one
// revoked already (so a repeated revocation says that the token is gone).
func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request, _ engine.Principal) error {
	if err := s.eng.RevokeToken(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
