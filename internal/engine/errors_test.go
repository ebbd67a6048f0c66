package engine_test

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/reserve/reserve/internal/engine"
)

// TestStoreUnavailable checks that a marked store failure carries the code
// and a message without its cause to the client, and the cause to the log
// and to errors.Is.
func TestStoreUnavailable(t *testing.T) {
	err := engine.StoreUnavailable(fmt.Errorf("dial /tmp/pg/.s.PGSQL.5432: %w", syscall.ECONNREFUSED))
	wrapped := fmt.Errorf("reserve: %w", err) // As callers add context.
	if got := engine.ErrorCode(wrapped); got != engine.CodeStoreUnavailable {
		t.Errorf("ErrorCode = %q, want %q", got, engine.CodeStoreUnavailable)
	}
	msg := engine.ErrorMessage(wrapped)
	if strings.Contains(msg, "dial") || strings.Contains(msg, "refused") || !strings.Contains(msg, "same Idempotency-Key") {
		t.Errorf("ErrorMessage = %q: want the retry advice without the cause", msg)
	}
	if !errors.Is(wrapped, syscall.ECONNREFUSED) {
		t.Error("errors.Is does not find the cause")
	}
	if s := wrapped.Error(); !strings.HasPrefix(s, "reserve: store_unavailable: ") || !strings.Contains(s, "dial /tmp/pg/.s.PGSQL.5432") {
		t.Errorf("Error() = %q: want the code first and the cause for the log", s)
	}
}
