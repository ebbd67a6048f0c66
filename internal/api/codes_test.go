package api_test

import (
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// TestUndecidedCodes pins which answers decide nothing: exactly these codes
// make a client keep its key and retry, every other code is a decision.
func TestUndecidedCodes(t *testing.T) {
	undecided := map[string]bool{
		api.CodeBodyIncomplete:         true,
		api.CodeTooManyConnections:     true,
		api.CodeRateLimited:            true,
		engine.CodeStoreUnavailable:    true,
		engine.CodeIdentityUnavailable: true,
		engine.CodeInternal:            true,
	}
	for _, code := range api.Codes {
		if got := api.Undecided(code); got != undecided[code] {
			t.Errorf("Undecided(%s) = %v, want %v", code, got, undecided[code])
		}
	}
	for code := range undecided {
		if !strings.Contains(" "+strings.Join(api.Codes, " ")+" ", " "+code+" ") {
			t.Errorf("%s is not in api.Codes", code)
		}
	}
	if api.Undecided("") || api.Undecided("no_such_code") {
		t.Error("an empty or unknown code is undecided; only the listed codes are")
	}
	// The engine's table says the same of the domain's codes.
	for _, code := range engine.Codes {
		if got := engine.Undecided(code); got != undecided[code] {
			t.Errorf("engine.Undecided(%s) = %v, want %v", code, got, undecided[code])
		}
	}
}

// TestCodesOnce checks that api.Codes names every code once: the domain's
// and the HTTP edge's are apart.
func TestCodesOnce(t *testing.T) {
	seen := map[string]bool{}
	for _, code := range api.Codes {
		if seen[code] {
			t.Errorf("%s is in api.Codes twice", code)
		}
		seen[code] = true
	}
	for _, code := range engine.Codes {
		if !seen[code] {
			t.Errorf("engine's %s is not in api.Codes", code)
		}
	}
}
