package server

import (
	"context"
	"net/http"
	"strconv"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/failpoint"
)

// reserve is POST /api/v1/reservations, the idempotent operation.
func (s *Server) reserve(w http.ResponseWriter, r *http.Request, who engine.Principal) error {
	return serveOperation(s, w, r, api.DecodeRequest, func(ctx context.Context, key engine.OperationKey, req engine.Request) (engine.Outcome, error) {
		return s.eng.Reserve(ctx, who.Actor, key, req)
	})
}

// serveOperation answers an idempotent operation that has a request body.
// The checks run in the documented order (operation key, media type, size,
// body, decoded strictly by decode) and the first failure answers; only
// decide's decision stores anything. Every answer carries
// Idempotent-Replayed.
func serveOperation[T any](s *Server, w http.ResponseWriter, r *http.Request, decode func([]byte) (T, error), decide func(context.Context, engine.OperationKey, T) (engine.Outcome, error)) error {
	key, info, err := startOperation(w, r)
	if err != nil {
		return err
	}
	req, err := decodeBody(w, r, decode)
	if err != nil {
		return err
	}
	out, err := decide(r.Context(), key, req)
	if err != nil {
		return err
	}
	s.writeOutcome(w, info, out)
	return nil
}

// writeOutcome writes the committed answer of an idempotent operation with
// its replay marker, and a Location for the reservation or hold it made;
// it records the outcome for the request log (replayed, created for a
// reservation made, or else the answer's status) and counts a first
// decision about a hold in the metrics.
func (s *Server) writeOutcome(w http.ResponseWriter, info *requestInfo, out engine.Outcome) {
	failpoint.Hit(failpoint.ServerAfterCommit)
	a := out.Answer
	switch {
	case out.Replayed:
		info.outcome = engine.OutcomeReplayed
		w.Header().Set(api.HeaderReplayed, "true")
	case a.Status == engine.StatusReserved:
		info.outcome = engine.OutcomeCreated
	default:
		info.outcome = a.Status
	}
	if !out.Replayed {
		s.metrics.countHold(out)
	}
	switch {
	case a.Status == engine.StatusReserved:
		w.Header().Set("Location", api.ReservationPath(a.ReservationID))
	case a.Kind == engine.OperationHold && a.Status == engine.StatusHeld:
		w.Header().Set("Location", api.HoldPath(a.HoldID))
	}
	body := a.JSON()
	w.Header().Set("Content-Type", api.MediaJSON)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(StatusOfAnswer(a))
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
	return api.ParseOperationKey(raw)
}
