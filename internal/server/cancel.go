package server

import (
	"net/http"

	"github.com/reserve/reserve/internal/engine"
)

// cancel is POST /api/v1/reservations/{id}/cancel, the idempotent
// cancellation, for the reservation's owner or an admin. The operation key
// is checked first; the request has no body (one sent is not read). Only
// the engine's decision stores anything. Every answer carries
// Idempotent-Replayed.
func (s *Server) cancel(w http.ResponseWriter, r *http.Request, who engine.Principal) error {
	key, info, err := startOperation(w, r)
	if err != nil {
		return err
	}
	out, err := s.eng.Cancel(r.Context(), who, key, r.PathValue("id"))
	if err != nil {
		return err
	}
	s.writeOutcome(w, info, out)
	return nil
}
