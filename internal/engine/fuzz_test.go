package engine_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/engine"
)

// FuzzDecodeRequest feeds arbitrary bodies to the strict request decoder.
// It must never panic; every refusal is a request_contract error; every
// accepted body is a valid Request that plain encoding/json reads the same
// way, and whose canonical encoding decodes to the same Request.
func FuzzDecodeRequest(f *testing.F) {
	for _, seed := range []string{
		`{"workshop":"go-basics","quantity":2}`,
		`{"quantity":1,"workshop":"workshop-demo"}`,
		` {"workshop":"w1","quantity":1000000000} `,
		`{"\u0077orkshop":"go-basics","quantity":2}`,
		`{"workshop":"go-basics","quantity":1.0}`,
		`{"workshop":"go-basics","quantity":1e0}`,
		`{"workshop":"go-basics","quantity":"1"}`,
		`{"workshop":"go-basics","quantity":1,"quantity":1}`,
		`{"workshop":"go-basics","quantity":1}{}`,
		`{"workshop":"go-basics","quantity":-1}`,
		`{"workshop":"Go","quantity":1}`,
		`{"workshop":null,"quantity":[1]}`,
		`[]`, `null`, ``, `{`, "\xff",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := engine.DecodeRequest(body)
		if err != nil {
			if code := engine.ErrorCode(err); code != engine.CodeRequestContract {
				t.Fatalf("DecodeRequest(%q) failed with code %s: %v", body, code, err)
			}
			return
		}
		if err := req.Validate(); err != nil {
			t.Fatalf("DecodeRequest(%q) = %+v, which is not valid: %v", body, req, err)
		}
		var loose engine.Request
		if err := json.Unmarshal(body, &loose); err != nil || loose != req {
			t.Fatalf("DecodeRequest(%q) = %+v, but encoding/json reads %+v, %v", body, req, loose, err)
		}
		canonical, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		again, err := engine.DecodeRequest(canonical)
		if err != nil || again != req || engine.Fingerprint(again) != engine.Fingerprint(req) {
			t.Fatalf("canonical %s of %q decodes to %+v, %v", canonical, body, again, err)
		}
	})
}

// FuzzParseOperationKey feeds arbitrary Idempotency-Key values to the key
// parser. It must never panic; an accepted key is the lowercase canonical
// UUIDv4 the value holds (bare or quoted), and refusals carry one of the two
// key codes.
func FuzzParseOperationKey(f *testing.F) {
	for _, seed := range []string{
		"f47ac10b-58cc-4372-a567-0e02b2c3d479",
		`"f47ac10b-58cc-4372-a567-0e02b2c3d479"`,
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
		key, err := engine.ParseOperationKey(raw)
		if err != nil {
			switch code := engine.ErrorCode(err); {
			case raw == "" && code == engine.CodeMissingIdempotencyKey:
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
		if len(s) != 36 || s[14] != '4' || !strings.ContainsRune("89ab", rune(s[19])) || strings.ToLower(s) != s {
			t.Fatalf("ParseOperationKey(%q) = %q, not a lowercase canonical UUIDv4", raw, key)
		}
		for i, c := range s {
			isDash := i == 8 || i == 13 || i == 18 || i == 23
			if isDash != (c == '-') || (!isDash && !strings.ContainsRune("0123456789abcdef", c)) {
				t.Fatalf("ParseOperationKey(%q) = %q: character %d is %q", raw, key, i, c)
			}
		}
		if again, err := engine.ParseOperationKey(`"` + s + `"`); err != nil || again != key {
			t.Fatalf("the quoted form of %q parses to %q, %v", key, again, err)
		}
	})
}

// FuzzDecodeBatch: DecodeBatch never panics, accepts only valid JSON, and
// an accepted batch has from 1 to MaxBatchItems entries, each either
// refused on its own or a request that DecodeRequest accepts as the
// single reservation's body.
func FuzzDecodeBatch(f *testing.F) {
	for _, seed := range []string{
		`{"items":[{"key":"f47ac10b-58cc-4372-a567-0e02b2c3d479","workshop":"go","quantity":1}]}`,
		`{"atomic":true,"items":[{"key":"k","workshop":"go","quantity":1},{"workshop":"go"},5,null]}`,
		`{"items":[]}`, `{"items":{}}`, `{"atomic":1}`, `[]`, `{"items":[{"key":}]}`, `{"items":[{}]} x`,
		`{"items":[{"key":"a","workshop":"go","quantity":1,"key":"b"}]}`,
		` { "atomic" : false , "items" : [ {"key":"f47ac10b-58cc-4372-a567-0e02b2c3d479","workshop":"go","quantity":2} , {"quantity":1,"key":"x","workshop":"go"} ] } `,
		`{"items":[{"key":"\u0041","workshop":"go","quantity":1}],"atomic":true}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		atomic, entries, err := engine.DecodeBatch(body)
		if pa, pe, ok := engine.DecodeBatchPlain(body); ok {
			ta, te, terr := engine.DecodeBatchTokens(body)
			if terr != nil || ta != pa || !reflect.DeepEqual(te, pe) {
				t.Fatalf("the plain path decoded %q as %t %+v, the token path as %t %+v, %v", body, pa, pe, ta, te, terr)
			}
		} else if ta, te, terr := engine.DecodeBatchTokens(body); ta != atomic || !reflect.DeepEqual(te, entries) || (terr == nil) != (err == nil) {
			t.Fatalf("DecodeBatch = %t %+v %v, the token path %t %+v %v", atomic, entries, err, ta, te, terr)
		}
		if err != nil {
			if engine.ErrorCode(err) != engine.CodeRequestContract {
				t.Fatalf("error %v is not request_contract", err)
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		if len(entries) < 1 || len(entries) > engine.MaxBatchItems {
			t.Fatalf("accepted %d entries", len(entries))
		}
		for i, en := range entries {
			if en.Invalid != nil {
				continue
			}
			single, _ := json.Marshal(en.Request)
			if _, err := engine.DecodeRequest(single); err != nil {
				t.Fatalf("entry %d %+v is not a valid request: %v", i, en, err)
			}
		}
	})
}
