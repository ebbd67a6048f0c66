package api

import (
	"slices"

	"github.com/reserve/reserve/internal/engine"
)

// The codes of the refusals that only the HTTP edge makes: the request's
// operation key header, its media type, its body's size and framing, its
// route. They are stable like the engine's codes (they appear in problem
// details, logs and the CLI's exit-code mapping): never rename one.
const (
	// CodeMissingIdempotencyKey means the request carried no operation key.
	CodeMissingIdempotencyKey = "missing_idempotency_key"
	// CodeUnsupportedMediaType means the body is not application/json.
	CodeUnsupportedMediaType = "unsupported_media_type"
	// CodeBodyTooLarge means the body exceeds the request limit.
	CodeBodyTooLarge = "body_too_large"
	// CodeBodyIncomplete means the body could not be read to its end (the
	// client stalled or the connection broke). It is undecided: nothing was
	// decided, so a client treats it as no answer and retries with the same
	// key.
	CodeBodyIncomplete = "body_incomplete"
	// CodeBadFraming means the request's length is framed ambiguously
	// (Content-Length with Transfer-Encoding, say) or where it begins on
	// its connection is uncertain; it was not read, nothing was decided,
	// and the connection is closed.
	CodeBadFraming = "bad_framing"
	// CodeNotFound means no such route or resource.
	CodeNotFound = "not_found"
	// CodeMethodNotAllowed means the route exists but not for this method.
	CodeMethodNotAllowed = "method_not_allowed"
	// CodeNotImplemented means the store behind this daemon cannot do what
	// was asked (an online backup of a PostgreSQL store).
	CodeNotImplemented = "not_implemented"
	// CodeTooManyConnections means the listener was at a connection cap
	// with every connection that could have made room busy with a request
	// (the listener's cap, the slots not kept for admins, or the caller's
	// own share of the socket), so it closed the new connection without
	// reading a request from it. Nothing was read or done: it is
	// undecided, and the client retries with the same key.
	CodeTooManyConnections = "too_many_connections"
	// CodeTooManyRequests means the caller asked too often (sign-in links
	// per address or per client): a decided refusal of this request, after
	// which nothing was done; the answer's Retry-After says when a new
	// request would be accepted.
	CodeTooManyRequests = "too_many_requests"
	// CodeRateLimited means the caller (an actor that is not an admin, or
	// an address without credentials) sent more API requests than the
	// daemon's rate limit allows. It was refused before anything was
	// decided or stored: it is undecided, and the client sends the same
	// request, with the same key, again after the answer's Retry-After.
	CodeRateLimited = "rate_limited"
)

// transportCodes lists the codes of the HTTP edge.
var transportCodes = []string{
	CodeMissingIdempotencyKey, CodeUnsupportedMediaType, CodeBodyTooLarge, CodeBodyIncomplete,
	CodeBadFraming, CodeNotFound, CodeMethodNotAllowed, CodeNotImplemented, CodeTooManyConnections,
	CodeTooManyRequests, CodeRateLimited,
}

// undecidedTransport are the codes of the HTTP edge whose answers decide
// nothing for the client.
var undecidedTransport = map[string]bool{
	CodeBodyIncomplete:     true,
	CodeTooManyConnections: true,
	CodeRateLimited:        true,
}

// Undecided reports whether an answer with code leaves its request
// undecided (engine.Undecided says what that means): a code of the domain
// by the engine's table, a code of the HTTP edge by the table above. Every
// other code is a decision. It is the one rule every client applies,
// through internal/client.
func Undecided(code string) bool { return engine.Undecided(code) || undecidedTransport[code] }

// Codes lists every stable error code an answer may carry, the domain's
// (engine.Codes) and the HTTP edge's, for documentation and tests.
var Codes = slices.Concat(engine.Codes, transportCodes)
