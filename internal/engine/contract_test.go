package engine_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/engine"
)

func TestParseOperationKey(t *testing.T) {
	const key = "f47ac10b-58cc-4372-a567-0e02b2c3d479"
	for _, raw := range []string{key, `"` + key + `"`} {
		got, err := engine.ParseOperationKey(raw)
		if err != nil || got != key {
			t.Errorf("ParseOperationKey(%q) = %q, %v; want %q", raw, got, err, key)
		}
	}
	if _, err := engine.ParseOperationKey(""); engine.ErrorCode(err) != engine.CodeMissingIdempotencyKey {
		t.Errorf("empty key: %v", err)
	}
	for _, raw := range []string{
		`""`, `"`, "F47AC10B-58CC-4372-A567-0E02B2C3D479", "f47ac10b-58cc-1372-a567-0e02b2c3d479",
		"f47ac10b-58cc-4372-c567-0e02b2c3d479", "f47ac10b58cc4372a5670e02b2c3d479",
		"{f47ac10b-58cc-4372-a567-0e02b2c3d479}", "f47ac10b-58cc-4372-a567-0e02b2c3d47", key + "0",
		`"` + key, key + `"`, `'` + key + `'`, " " + key, "f47ac10b-58cc-4372-a567-0e02b2c3d47g",
		"urn:uuid:" + key, "00000000-0000-0000-0000-000000000000",
	} {
		if _, err := engine.ParseOperationKey(raw); engine.ErrorCode(err) != engine.CodeInvalidIdempotencyKey {
			t.Errorf("ParseOperationKey(%q) error = %v, want %s", raw, err, engine.CodeInvalidIdempotencyKey)
		}
	}
}

func TestFingerprint(t *testing.T) {
	a := engine.Fingerprint(engine.Request{Workshop: "go-basics", Quantity: 1})
	if len(a) != 64 || a != engine.Fingerprint(engine.Request{Workshop: "go-basics", Quantity: 1}) {
		t.Fatalf("fingerprint %q is not a stable hex SHA-256", a)
	}
	// The version-1 encoding is part of the stored format: pin it.
	const pinned = "reserve-request-v1\ngo-basics\n1\n"
	if want := engine.HashToken(pinned); a != want {
		t.Fatalf("fingerprint = %s, want SHA-256 of %q = %s", a, pinned, want)
	}
	for _, other := range []engine.Request{
		{Workshop: "go-basics", Quantity: 2},
		{Workshop: "go-basic", Quantity: 1},
		{Workshop: "go-basics1", Quantity: 1},
	} {
		if engine.Fingerprint(other) == a {
			t.Errorf("Fingerprint(%+v) equals that of go-basics×1", other)
		}
	}
}

func TestErrorHelpers(t *testing.T) {
	err := engine.Errorf(engine.CodeUnknownWorkshop, "workshop %q does not exist", "x")
	if engine.ErrorCode(err) != engine.CodeUnknownWorkshop || engine.ErrorMessage(err) != `workshop "x" does not exist` {
		t.Fatalf("code/message of %v", err)
	}
	wrapped := fmt.Errorf("reserve: %w", err)
	if engine.ErrorCode(wrapped) != engine.CodeUnknownWorkshop {
		t.Fatalf("wrapped code = %s", engine.ErrorCode(wrapped))
	}
	plain := errors.New("disk on fire at /var/lib/secret")
	if engine.ErrorCode(plain) != engine.CodeInternal || strings.Contains(engine.ErrorMessage(plain), "secret") {
		t.Fatalf("plain error leaks: %s", engine.ErrorMessage(plain))
	}
	if engine.ErrorCode(nil) != "" {
		t.Fatal("ErrorCode(nil) is not empty")
	}
}
