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
	key, info, err := startOperation(w, r)
	if err != nil {
		return err
	}
	req, err := decodeBody(w, r, engine.DecodeRequest)
	if err != nil {
		return err
	}
	out, err := s.eng.Reserve(r.Context(), who.Actor, key, req)
	if err != nil {
		return err
	}
	if out.Answer.Status == engine.StatusReserved {
		w.Header().Set("Location", api.ReservationPath(out.Answer.ReservationID))
	}
	writeOutcome(w, info, out)
	return nil
}

// writeOutcome writes the committed answer of an idempotent operation with
// its replay marker and records its outcome for the request log: replayed,
// created for a reservation made, or else the answer's status.
func writeOutcome(w http.ResponseWriter, info *requestInfo, out engine.Outcome) {
	switch {
	case out.Replayed:
		info.outcome = "replayed"
		w.Header().Set(api.HeaderReplayed, "true")
	case out.Answer.Status == engine.StatusReserved:
		info.outcome = "created"
	default:
		info.outcome = out.Answer.Status
	}
	body := out.Answer.JSON()
	w.Header().Set("Content-Type", api.MediaJSON)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(StatusOfAnswer(out.Answer))
	w.Write(body)
}

// startOperation begins the answer of an idempotent operation: it marks it
// not replayed (until it is), reads its operation key and records the key
// for the request log.
func startOperation(w http.ResponseWriter, r *http.Request) (engine.OperationKey, *requestInfo, error) {
	w.Header().Set(api.HeaderReplayed, "false")
	key, err := operationKeyHeader(r.Header)
	if err != nil {
		return "", nil, err
	}
	info := infoOf(r)
	info.opKey = string(key)
	return key, info, nil
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
