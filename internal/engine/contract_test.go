package engine_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/engine"
)

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
