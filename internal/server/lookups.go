package server

import (
	"net/http"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// getOperation is GET /api/v1/operations/{key}: the caller's own receipt.
func (s *Server) getOperation(w http.ResponseWriter, r *http.Request, who engine.Principal) error {
	key := engine.OperationKey(r.PathValue("key"))
	if !engine.IsOperationKey(key) {
		return engine.Errorf(engine.CodeInvalidIdempotencyKey, "operation key %q in the path is not %s", engine.Truncate(string(key), 80), engine.KeyForm)
	}
	infoOf(r).opKey = string(key)
	rec, err := s.eng.Operation(r.Context(), who.Actor, key)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.OperationView{Operation: rec.OperationKey, HTTPStatus: StatusOfAnswer(rec.Answer), Response: rec.Answer.JSON(), CreatedAt: rec.CreatedAt})
}

// getReservation is GET /api/v1/reservations/{id}, for its owner or an
// admin; to anyone else it does not exist.
func (s *Server) getReservation(w http.ResponseWriter, r *http.Request, who engine.Principal) error {
	res, err := s.eng.Reservation(r.Context(), who, r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}
