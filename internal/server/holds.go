package server

import (
	"context"
	"net/http"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// hold is POST /api/v1/holds, the idempotent hold request: the checks and
// answers of a reservation request, with the body of a hold request
// (workshop, quantity, ttl_seconds).
func (s *Server) hold(w http.ResponseWriter, r *http.Request, who engine.Principal) error {
	return serveOperation(s, w, r, api.DecodeHoldRequest, func(ctx context.Context, key engine.OperationKey, req engine.HoldRequest) (engine.Outcome, error) {
		return s.eng.Hold(ctx, who.Actor, key, req)
	})
}

// confirmHold is POST /api/v1/holds/{id}/confirm, the idempotent
// confirmation of one of the caller's holds. It is checked like a
// reservation request (key, media type, size, body), and its body is
// exactly the empty object; another actor's hold does not exist.
func (s *Server) confirmHold(w http.ResponseWriter, r *http.Request, who engine.Principal) error {
	return serveOperation(s, w, r, decodeEmptyObject, func(ctx context.Context, key engine.OperationKey, _ struct{}) (engine.Outcome, error) {
		return s.eng.Confirm(ctx, who, key, r.PathValue("id"))
	})
}

// releaseHold is POST /api/v1/holds/{id}/release, the idempotent release
// of one of the caller's holds, checked as confirmHold is.
func (s *Server) releaseHold(w http.ResponseWriter, r *http.Request, who engine.Principal) error {
	return serveOperation(s, w, r, decodeEmptyObject, func(ctx context.Context, key engine.OperationKey, _ struct{}) (engine.Outcome, error) {
		return s.eng.Release(ctx, who, key, r.PathValue("id"))
	})
}

// decodeEmptyObject decodes the body of a confirmation or release, which
// carries nothing.
func decodeEmptyObject(body []byte) (struct{}, error) {
	return struct{}{}, api.DecodeEmptyObject(body)
}

// getHold is GET /api/v1/holds/{id}: the hold with its state as of now,
// for its owner or an admin; to anyone else it does not exist.
func (s *Server) getHold(w http.ResponseWriter, r *http.Request, who engine.Principal) error {
	h, err := s.eng.HoldOf(r.Context(), who, r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, h)
}
