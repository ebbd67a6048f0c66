package api_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/reserve/reserve/internal/api"
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
		`{"workshop":"go-basics","quantity":1,"waitlist":true}`,
		`{"waitlist":false,"workshop":"go-basics","quantity":1}`,
		`{"workshop":"go-basics","quantity":1,"waitlist":"true"}`,
		`[]`, `null`, ``, `{`, "\xff",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := api.DecodeRequest(body)
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
		again, err := api.DecodeRequest(canonical)
		if err != nil || again != req || engine.Fingerprint(again) != engine.Fingerprint(req) {
			t.Fatalf("canonical %s of %q decodes to %+v, %v", canonical, body, again, err)
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
		`{"items":[{"key":"f47ac10b-58cc-4372-a567-0e02b2c3d479","workshop":"go","quantity":1,"waitlist":true}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		atomic, entries, err := api.DecodeBatch(body)
		if pa, pe, ok := api.DecodeBatchPlain(body); ok {
			ta, te, terr := api.DecodeBatchTokens(body)
			if terr != nil || ta != pa || !reflect.DeepEqual(te, pe) {
				t.Fatalf("the plain path decoded %q as %t %+v, the token path as %t %+v, %v", body, pa, pe, ta, te, terr)
			}
		} else if ta, te, terr := api.DecodeBatchTokens(body); ta != atomic || !reflect.DeepEqual(te, entries) || (terr == nil) != (err == nil) {
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
			if _, err := api.DecodeRequest(single); err != nil {
				t.Fatalf("entry %d %+v is not a valid request: %v", i, en, err)
			}
		}
	})
}
