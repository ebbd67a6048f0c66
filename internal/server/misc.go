package server

import (
	"net/http"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// health is GET /healthz.
func (s *Server) health(w http.ResponseWriter, _ *http.Request, _ engine.Principal) error {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte("ok\n"))
	return nil
}

// whoami is GET /api/v1/whoami.
func (s *Server) whoami(w http.ResponseWriter, _ *http.Request, who engine.Principal) error {
	return writeJSON(w, http.StatusOK, who)
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
	token, err := s.eng.CreateToken(r.Context(), req.Actor, req.Admin)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	return writeJSON(w, http.StatusCreated, api.TokenResponse{Token: token, Actor: req.Actor, Admin: req.Admin})
}
