package api

import "github.com/reserve/reserve/internal/engine"

// ParseOperationKey parses the value of an Idempotency-Key header. It accepts
// a lowercase canonical UUIDv4 or UUIDv7 either bare or as a structured-field string
// (the IETF draft's form, `"…"`); both forms give the same key. An empty value
// is CodeMissingIdempotencyKey; anything else that is not such a UUID (the
// operation key's one form, engine.IsOperationKey) is
// CodeInvalidIdempotencyKey. Uppercase hex is refused rather than folded, so
// that one intent has exactly one spelling.
func ParseOperationKey(raw string) (engine.OperationKey, error) {
	if raw == "" {
		return "", engine.Errorf(CodeMissingIdempotencyKey, "the Idempotency-Key header is required: send a new UUIDv7 (or a random UUIDv4) that you keep for every retry of this reservation")
	}
	s := raw
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	if !engine.IsOperationKey(engine.OperationKey(s)) {
		return "", engine.Errorf(engine.CodeInvalidIdempotencyKey, "Idempotency-Key %q is not %s", engine.Truncate(raw, 80), engine.KeyForm)
	}
	return engine.OperationKey(s), nil
}
