package server

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// BodyTimeout is how long a request body may take to arrive after its
// header; API bodies are at most api.MaxBodyBytes, a batch's at most
// api.MaxBatchBytes.
const BodyTimeout = 5 * time.Second

// readJSONBody checks that the request carries application/json and reads at
// most api.MaxBodyBytes of it (readJSONBodyUpTo).
func readJSONBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return readJSONBodyUpTo(w, r, api.MaxBodyBytes)
}

// readJSONBodyUpTo checks that the request carries application/json and
// reads at most max bytes of it. A body announced or found to be larger is
// refused with CodeBodyTooLarge without reading the rest, and the connection
// is closed after the answer so the server does not drain it either.
func readJSONBodyUpTo(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); !isJSON(ct, api.MediaJSON) {
		return nil, engine.Errorf(api.CodeUnsupportedMediaType, "Content-Type must be application/json, not %q", engine.Truncate(ct, 60))
	}
	return readBodyUpTo(w, r, max)
}

// readBodyUpTo reads at most max bytes of the body of r, whose media type
// the caller checked, as readJSONBodyUpTo does.
func readBodyUpTo(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	tooLarge := engine.Errorf(api.CodeBodyTooLarge, "the body must be at most %d bytes", max)
	if r.ContentLength > max {
		w.Header().Set("Connection", "close")
		return nil, tooLarge
	}
	// A body this small travels with its header: it gets as long to arrive
	// as a header does, not the whole read timeout, so that a client
	// sending it a byte at a time cannot hold its connection busy, where
	// the connection cap cannot close it, on routes that read the body
	// before they authenticate (a login code's redemption).
	// Once the body is in, the deadline goes again: net/http then reads
	// only to notice a client that hangs up, which must not be mistaken
	// for one while the request is decided.
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(BodyTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err == nil {
		rc.SetReadDeadline(time.Time{})
	}
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		// MaxBytesReader cannot mark the connection for closing through
		// the middleware's wrapped writer; without this header net/http
		// would drain up to 256 KiB of an unannounced (chunked) body
		// before it sends the answer.
		w.Header().Set("Connection", "close")
		return nil, tooLarge
	case err != nil:
		return nil, engine.Errorf(api.CodeBodyIncomplete, "the body could not be read to its end; nothing was decided, send the request again")
	}
	return body, nil
}

// isJSON reports whether a Content-Type names one of the JSON media types,
// with no parameter but an optional charset=utf-8.
func isJSON(contentType string, media ...string) bool {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || !slices.Contains(media, mt) {
		return false
	}
	for k, v := range params {
		if k != "charset" || !strings.EqualFold(v, "utf-8") {
			return false
		}
	}
	return true
}

// decodeBody reads a JSON body with readJSONBody and decodes it with one of
// the strict decoders of package api.
func decodeBody[T any](w http.ResponseWriter, r *http.Request, decode func([]byte) (T, error)) (T, error) {
	body, err := readJSONBody(w, r)
	if err != nil {
		var zero T
		return zero, err
	}
	return decode(body)
}
