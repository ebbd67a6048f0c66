package server

import (
	"net/http"
	"strconv"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// reserve is POST /api/v1/reservations, the idempotent operation. The checks
// run in the documented order (key, media type, size, body) and the first
// failure answers; only the engine's decision stores anything. Every answer
// carries Idempotent-Replayed.
func (s *Server) reserve(w http.ResponseWriter, r *http.Request, who engine.Principal) error {
	w.Header().Set(api.HeaderReplayed, "false")
	key, err := operationKeyHeader(r.Header)
	if err != nil {
		return err
	}
	info := infoOf(r)
	info.opKey = string(key)
	req, err := decodeBody(w, r, engine.DecodeRequest)
	if err != nil {
		return err
	}
	out, err := s.eng.Reserve(r.Context(), who.Actor, key, req)
	if err != nil {
		return err
	}
	switch {
	case out.Replayed:
		info.outcome = "replayed"
		w.Header().Set(api.HeaderReplayed, "true")
	case out.HTTPStatus == engine.StatusCodeReserved:
		info.outcome = "created"
	default:
		info.outcome = "unavailable"
	}
	if out.HTTPStatus == engine.StatusCodeReserved {
		w.Header().Set("Location", api.ReservationPath(out.ReservationID))
	}
	// The outcome is committed: injected faults now shape only the answer.
	if !s.applyFaults(w, r, out) {
		return nil
	}
	w.Header().Set("Content-Type", api.MediaJSON)
	w.Header().Set("Content-Length", strconv.Itoa(len(out.Body)))
	w.WriteHeader(out.HTTPStatus)
	w.Write(out.Body)
	return nil
}

// operationKeyHeader reads the one Idempotency-Key header.
func operationKeyHeader(h http.Header) (engine.OperationKey, error) {
	values := h.Values(api.HeaderIdempotencyKey)
	if len(values) > 1 {
		return "", engine.Errorf(engine.CodeInvalidIdempotencyKey, "send exactly one Idempotency-Key header, not %d", len(values))
	}
	raw := ""
	if len(values) == 1 {
		raw = values[0]
	}
	return engine.ParseOperationKey(raw)
}
