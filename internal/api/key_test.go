package api_test

import (
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

func TestParseOperationKey(t *testing.T) {
	const key = "f47ac10b-58cc-4372-a567-0e02b2c3d479"
	const v7 = "019ae0b4-6a1c-7d3e-9f21-3b4c5d6e7f80" // A UUIDv7 of 2026-12-02.
	for _, want := range []string{key, v7} {
		for _, raw := range []string{want, `"` + want + `"`} {
			got, err := api.ParseOperationKey(raw)
			if err != nil || string(got) != want {
				t.Errorf("ParseOperationKey(%q) = %q, %v; want %q", raw, got, err, want)
			}
		}
	}
	if !engine.OperationKey(v7).IsTimeOrdered() || engine.OperationKey(key).IsTimeOrdered() {
		t.Error("IsTimeOrdered does not tell a UUIDv7 from a UUIDv4")
	}
	if _, err := api.ParseOperationKey(""); engine.ErrorCode(err) != api.CodeMissingIdempotencyKey {
		t.Errorf("empty key: %v", err)
	}
	for _, raw := range []string{
		`""`, `"`, "F47AC10B-58CC-4372-A567-0E02B2C3D479", "f47ac10b-58cc-1372-a567-0e02b2c3d479",
		"f47ac10b-58cc-4372-c567-0e02b2c3d479", "f47ac10b58cc4372a5670e02b2c3d479",
		"{f47ac10b-58cc-4372-a567-0e02b2c3d479}", "f47ac10b-58cc-4372-a567-0e02b2c3d47", key + "0",
		`"` + key, key + `"`, `'` + key + `'`, " " + key, "f47ac10b-58cc-4372-a567-0e02b2c3d47g",
		"urn:uuid:" + key, "00000000-0000-0000-0000-000000000000",
		"019AE0B4-6A1C-7D3E-9F21-3B4C5D6E7F80", "019ae0b4-6a1c-6d3e-9f21-3b4c5d6e7f80", // Uppercase; version 6.
		"019ae0b4-6a1c-8d3e-9f21-3b4c5d6e7f80", "019ae0b4-6a1c-7d3e-cf21-3b4c5d6e7f80", // Version 8; variant c.
	} {
		if _, err := api.ParseOperationKey(raw); engine.ErrorCode(err) != engine.CodeInvalidIdempotencyKey {
			t.Errorf("ParseOperationKey(%q) error = %v, want %s", raw, err, engine.CodeInvalidIdempotencyKey)
		}
	}
}

// FuzzParseOperationKey feeds arbitrary Idempotency-Key values to the key
// parser. It must never panic; an accepted key is the lowercase canonical
// UUIDv4 or UUIDv7 the value holds (bare or quoted), and refusals carry one of the two
// key codes.
func FuzzParseOperationKey(f *testing.F) {
	for _, seed := range []string{
		"f47ac10b-58cc-4372-a567-0e02b2c3d479",
		`"f47ac10b-58cc-4372-a567-0e02b2c3d479"`,
		"019ae0b4-6a1c-7d3e-9f21-3b4c5d6e7f80",
		"F47AC10B-58CC-4372-A567-0E02B2C3D479",
		"f47ac10b-58cc-1372-a567-0e02b2c3d479",
		"f47ac10b-58cc-4372-c567-0e02b2c3d479",
		"f47ac10b58cc4372a5670e02b2c3d479",
		"{f47ac10b-58cc-4372-a567-0e02b2c3d479}",
		`"f47ac10b-58cc-4372-a567-0e02b2c3d479`,
		`""`, `"`, "", "\x00",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		key, err := api.ParseOperationKey(raw)
		if err != nil {
			switch code := engine.ErrorCode(err); {
			case raw == "" && code == api.CodeMissingIdempotencyKey:
			case raw != "" && code == engine.CodeInvalidIdempotencyKey:
			default:
				t.Fatalf("ParseOperationKey(%q) failed with code %s: %v", raw, code, err)
			}
			if key != "" {
				t.Fatalf("ParseOperationKey(%q) failed but returned %q", raw, key)
			}
			return
		}
		s := string(key)
		if s != raw && `"`+s+`"` != raw {
			t.Fatalf("ParseOperationKey(%q) = %q, which is not the value itself", raw, key)
		}
		if len(s) != 36 || (s[14] != '4' && s[14] != '7') || !strings.ContainsRune("89ab", rune(s[19])) || strings.ToLower(s) != s {
			t.Fatalf("ParseOperationKey(%q) = %q, not a lowercase canonical UUIDv4 or UUIDv7", raw, key)
		}
		for i, c := range s {
			isDash := i == 8 || i == 13 || i == 18 || i == 23
			if isDash != (c == '-') || (!isDash && !strings.ContainsRune("0123456789abcdef", c)) {
				t.Fatalf("ParseOperationKey(%q) = %q: character %d is %q", raw, key, i, c)
			}
		}
		if again, err := api.ParseOperationKey(`"` + s + `"`); err != nil || again != key {
			t.Fatalf("the quoted form of %q parses to %q, %v", key, again, err)
		}
	})
}
