package engine_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/engine"
)

func TestDecodeRequestAccepts(t *testing.T) {
	want := engine.Request{Workshop: "go-basics", Quantity: 2}
	for _, body := range []string{
		`{"workshop":"go-basics","quantity":2}`,
		`{"quantity":2,"workshop":"go-basics"}`,
		" \n\t{ \"workshop\" : \"go-basics\" , \"quantity\" : 2 } \n",
		`{"\u0077orkshop":"go-basics","quantity":2}`,
	} {
		got, err := engine.DecodeRequest([]byte(body))
		if err != nil || got != want {
			t.Errorf("DecodeRequest(%s) = %+v, %v; want %+v", body, got, err, want)
		}
	}
}

func TestDecodeRequestRejects(t *testing.T) {
	cases := []struct {
		body, mention string
	}{
		{``, "ends too early"},
		{`   `, "ends too early"},
		{`null`, "not null"},
		{`[]`, "not an array"},
		{`[{"workshop":"go-basics","quantity":1}]`, "not an array"},
		{`"x"`, "not a string"},
		{`1`, "not the number 1"},
		{`{`, "ends too early"},
		{`{"workshop":"go-basics","quantity":1`, "ends too early"},
		{`{"workshop":"go-basics","quantity":1,}`, "malformed"},
		{`{"workshop":"go-basics" "quantity":1}`, "malformed"},
		{`{"workshop":"go-basics","quantity":01}`, `member "quantity"`},
		{`{"workshop":"go-basics","quantity":1 1}`, "malformed"},
		{`{"workshop":"go-basics","quantity":1}{}`, "unexpected data after the JSON object"},
		{`{"workshop":"go-basics","quantity":1} x`, "unexpected data after the JSON object"},
		{`{"workshop":"go-basics","quantity":1}]`, "unexpected data after the JSON object"},
		{`{"workshop":"go-basics"}`, `member "quantity" is missing`},
		{`{"quantity":1}`, `member "workshop" is missing`},
		{`{}`, `member "workshop" is missing`},
		{`{"workshop":"go-basics","quantity":1,"note":"hi"}`, `member "note" is not allowed`},
		{`{"workshop":"go-basics","quantity":1,"Quantity":1}`, `member "Quantity" is not allowed`},
		{`{"workshop":"go-basics","quantity":1,"quantity":1}`, `member "quantity" appears more than once`},
		{`{"workshop":"go-basics","workshop":"go-basics","quantity":1}`, `member "workshop" appears more than once`},
		{`{"workshop":"go-basics","quantity":"1"}`, `member "quantity" must be a JSON integer`},
		{`{"workshop":"go-basics","quantity":true}`, `member "quantity" must be a JSON integer`},
		{`{"workshop":"go-basics","quantity":null}`, `member "quantity" must be a JSON integer`},
		{`{"workshop":"go-basics","quantity":1.5}`, `member "quantity" must be a JSON integer`},
		{`{"workshop":"go-basics","quantity":1.0}`, `member "quantity" must be a JSON integer`},
		{`{"workshop":"go-basics","quantity":1e0}`, `member "quantity" must be a JSON integer`},
		{`{"workshop":"go-basics","quantity":1E0}`, `member "quantity" must be a JSON integer`},
		{`{"workshop":"go-basics","quantity":[1]}`, `member "quantity" must be a JSON integer`},
		{`{"workshop":"go-basics","quantity":{"n":1}}`, `member "quantity" must be a JSON integer`},
		{`{"workshop":"go-basics","quantity":0}`, `member "quantity" must be an integer from 1`},
		{`{"workshop":"go-basics","quantity":-1}`, `member "quantity" must be an integer from 1`},
		{`{"workshop":"go-basics","quantity":-0}`, `member "quantity" must be an integer from 1`},
		{`{"workshop":"go-basics","quantity":99999999999999999999999}`, `member "quantity" must be an integer from 1`},
		{`{"workshop":"go-basics","quantity":1000000001}`, `member "quantity" must be an integer from 1`},
		{`{"workshop":1,"quantity":1}`, `member "workshop" must be a JSON string`},
		{`{"workshop":null,"quantity":1}`, `member "workshop" must be a JSON string`},
		{`{"workshop":"Go-Basics","quantity":1}`, `member "workshop" must match`},
		{`{"workshop":"g","quantity":1}`, `member "workshop" must match`},
		{`{"workshop":"1go","quantity":1}`, `member "workshop" must match`},
		{`{"workshop":"go_basics","quantity":1}`, `member "workshop" must match`},
		{`{"workshop":"go basics","quantity":1}`, `member "workshop" must match`},
		{`{"workshop":"` + strings.Repeat("a", 42) + `","quantity":1}`, `member "workshop" must match`},
		{`{"workshop":"go-basics\n","quantity":1}`, `member "workshop" must match`},
	}
	for _, c := range cases {
		_, err := engine.DecodeRequest([]byte(c.body))
		if engine.ErrorCode(err) != engine.CodeRequestContract {
			t.Errorf("DecodeRequest(%q) error = %v, want code %s", c.body, err, engine.CodeRequestContract)
			continue
		}
		if !strings.Contains(err.Error(), c.mention) {
			t.Errorf("DecodeRequest(%q) error = %q, want it to mention %q", c.body, err, c.mention)
		}
	}
}

func TestDecodeWorkshopSpec(t *testing.T) {
	s, err := engine.DecodeWorkshopSpec([]byte(`{"title":"Go","max_quantity":2,"capacity":3}`))
	if err != nil || s != (engine.WorkshopSpec{Capacity: 3, MaxQuantity: 2, Title: "Go"}) {
		t.Fatalf("DecodeWorkshopSpec = %+v, %v", s, err)
	}
	for _, body := range []string{
		`{"max_quantity":2}`, `{"capacity":-1}`, `{"capacity":3,"max_quantity":0}`,
		`{"capacity":3,"title":5}`, `{"capacity":3,"reserved":1}`, `{"capacity":"3"}`,
		`{"capacity":3,"title":"a\u0000b"}`,
	} {
		if _, err := engine.DecodeWorkshopSpec([]byte(body)); engine.ErrorCode(err) != engine.CodeRequestContract {
			t.Errorf("DecodeWorkshopSpec(%s) error = %v, want %s", body, err, engine.CodeRequestContract)
		}
	}
}

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

// TestDecodeEmptyObject: the body of a confirmation or release is exactly
// {}, and a member in it is refused by saying so.
func TestDecodeEmptyObject(t *testing.T) {
	for _, ok := range []string{`{}`, ` { } `, "{}\n"} {
		if err := engine.DecodeEmptyObject([]byte(ok)); err != nil {
			t.Errorf("DecodeEmptyObject(%q) = %v", ok, err)
		}
	}
	err := engine.DecodeEmptyObject([]byte(`{"a":1}`))
	if engine.ErrorCode(err) != engine.CodeRequestContract || engine.ErrorMessage(err) != `member "a" is not allowed: the body must be the empty object {}` {
		t.Errorf("DecodeEmptyObject({\"a\":1}) = %v", err)
	}
	for _, bad := range []string{``, `[]`, `{}{}`, `null`} {
		if err := engine.DecodeEmptyObject([]byte(bad)); engine.ErrorCode(err) != engine.CodeRequestContract {
			t.Errorf("DecodeEmptyObject(%q) = %v, want request_contract", bad, err)
		}
	}
}
