package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// statusByCode is the one table from error codes (api.Codes: the engine's
// and the HTTP edge's) to HTTP status.
var statusByCode = map[string]int{
	api.CodeMissingIdempotencyKey:    http.StatusBadRequest,
	engine.CodeInvalidIdempotencyKey: http.StatusBadRequest,
	api.CodeUnsupportedMediaType:     http.StatusUnsupportedMediaType,
	api.CodeBodyTooLarge:             http.StatusRequestEntityTooLarge,
	engine.CodeRequestContract:       http.StatusUnprocessableEntity,
	engine.CodeOperationConflict:     http.StatusConflict,
	engine.CodeOperationExpired:      http.StatusGone,
	engine.CodeBatchRefused:          http.StatusConflict,
	engine.CodeUnknownWorkshop:       http.StatusNotFound,
	engine.CodeUnknownOperation:      http.StatusNotFound,
	engine.CodeUnknownReservation:    http.StatusNotFound,
	engine.CodeUnknownHold:           http.StatusNotFound,
	engine.CodeUnknownToken:          http.StatusNotFound,
	engine.CodeVersionMismatch:       http.StatusPreconditionFailed,
	engine.CodeCapacityBelowReserved: http.StatusConflict,
	engine.CodeWorkshopInUse:         http.StatusConflict,
	engine.CodeUnknownWebhook:        http.StatusNotFound,
	engine.CodeWebhookExists:         http.StatusConflict,
	engine.CodeUnknownDelivery:       http.StatusNotFound,
	engine.CodeUnknownEntry:          http.StatusNotFound,
	engine.CodeUnauthenticated:       http.StatusUnauthorized,
	engine.CodeForbidden:             http.StatusForbidden,
	api.CodeNotFound:                 http.StatusNotFound,
	api.CodeMethodNotAllowed:         http.StatusMethodNotAllowed,
	api.CodeNotImplemented:           http.StatusNotImplemented,
	engine.CodeInsufficientStorage:   http.StatusInsufficientStorage,
	api.CodeBodyIncomplete:           http.StatusRequestTimeout,
	engine.CodeStoreUnavailable:      http.StatusServiceUnavailable,
	engine.CodeIdentityUnavailable:   http.StatusServiceUnavailable,
	api.CodeTooManyConnections:       http.StatusServiceUnavailable,
	api.CodeTooManyRequests:          http.StatusTooManyRequests,
	api.CodeRateLimited:              http.StatusTooManyRequests,
	api.CodeBadFraming:               http.StatusBadRequest,
	engine.CodeInternal:              http.StatusInternalServerError,
}

// StatusOfAnswer returns the HTTP status of an answer (api.StatusOfAnswer),
// and 500 for a (kind, status) it does not know.
func StatusOfAnswer(a engine.Answer) int {
	if s := api.StatusOfAnswer(a.Kind, a.Status); s != 0 {
		return s
	}
	return http.StatusInternalServerError
}

// storeRetryAfter is the Retry-After of a store_unavailable answer, in
// seconds: a restarting or failing-over database usually serves again
// within seconds, and a client that waits this long before it retries with
// the same key does not add to the load of one that is still down. An
// identity_unavailable answer has the same: a name service (LDAP, SSSD)
// that failed one lookup usually answers the next.
const storeRetryAfter = "1"

// StatusOf returns the HTTP status of an error code, and 500 for a
// code it does not know.
func StatusOf(code string) int {
	if s, ok := statusByCode[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// fail answers err as a problem detail. The detail is engine.ErrorMessage,
// so errors that are not *engine.Error never show their text to the client;
// the request log gets the full error of every 5xx instead.
func fail(w http.ResponseWriter, r *http.Request, err error) {
	code := engine.ErrorCode(err)
	status := StatusOf(code)
	info := infoOf(r)
	info.code = code
	if status >= 500 {
		info.err = err
	}
	switch code {
	case engine.CodeUnauthenticated:
		w.Header().Set("WWW-Authenticate", `Bearer realm="reserved"`)
	case engine.CodeStoreUnavailable, engine.CodeIdentityUnavailable:
		w.Header().Set("Retry-After", storeRetryAfter)
	}
	if later := (*retryLater)(nil); errors.As(err, &later) {
		w.Header().Set("Retry-After", strconv.Itoa(int((later.wait+time.Second-1)/time.Second)))
	}
	writeProblem(w, status, code, problemDetail(err))
}

// problemDetail is the detail of the problem that answers err:
// engine.ErrorMessage, and for an expired operation what its tombstone
// says it was answered.
func problemDetail(err error) string {
	var expired *engine.ExpiredError
	if errors.As(err, &expired) {
		a := expired.Tombstone.Answer
		return expired.Describe(fmt.Sprintf("%d %s", StatusOfAnswer(a), a.Status)).Message
	}
	return engine.ErrorMessage(err)
}

// problemJSON is the JSON of an RFC 9457 problem detail with a stable code.
func problemJSON(status int, code, detail string) []byte {
	return problemJSONWith(api.Problem{Status: status, Code: code, Detail: detail})
}

// problemJSONWith is the JSON of p with its type and title filled in.
func problemJSONWith(p api.Problem) []byte {
	p.Type, p.Title = "about:blank", http.StatusText(p.Status)
	body, _ := json.Marshal(p)
	return body
}

// writeProblem writes an RFC 9457 problem detail with a stable code.
func writeProblem(w http.ResponseWriter, status int, code, detail string) {
	body := problemJSON(status, code, detail)
	h := w.Header()
	h.Set("Content-Type", api.MediaProblem)
	h.Set("Cache-Control", "no-store")
	h.Del("Location")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// writeJSON writes v as a JSON answer with status.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", api.MediaJSON)
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
	return nil
}
