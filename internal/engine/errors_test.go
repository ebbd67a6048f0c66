package engine_test

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/reserve/reserve/internal/engine"
)

// TestUndecidedCodes pins which answers decide nothing: exactly these codes
// make a client keep its key and retry, every other code is a decision.
func TestUndecidedCodes(t *testing.T) {
	undecided := map[string]bool{
		engine.CodeBodyIncomplete:     true,
		engine.CodeStoreUnavailable:   true,
		engine.CodeTooManyConnections: true,
		engine.CodeInternal:           true,
	}
	for _, code := range engine.Codes {
		if got := engine.Undecided(code); got != undecided[code] {
			t.Errorf("Undecided(%s) = %v, want %v", code, got, undecided[code])
		}
	}
	for code := range undecided {
		if !strings.Contains(" "+strings.Join(engine.Codes, " ")+" ", " "+code+" ") {
			t.Errorf("%s is not in engine.Codes", code)
		}
	}
	if engine.Undecided("") || engine.Undecided("no_such_code") {
		t.Error("an empty or unknown code is undecided; only the listed codes are")
	}
}

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
