package strictjson_test

import (
	"errors"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/strictjson"
)

// TestDecodeStrictFastPath makes sure the bodies clients send take the fast
// path (FuzzDecodeStrictPaths checks that it agrees with the token decoder),
// and that escapes, fractions and errors leave it.
func TestDecodeStrictFastPath(t *testing.T) {
	for body, plain := range map[string]bool{
		`{"workshop":"go-basics","quantity":2}`:                       true,
		" \n\t{ \"quantity\" : 2 , \"workshop\" : \"go-basics\" } \n": true,
		`{"\u0077orkshop":"go-basics","quantity":2}`:                  false,
		`{"workshop":"go-basics","quantity":2.0}`:                     false,
		`{"workshop":"go-basics","quantity":0}`:                       false,
		`{"workshop":"go-basics"}`:                                    false,
		`{"workshop":"go-basics","quantity":2,"quantity":2}`:          false,
	} {
		var r engine.Request
		members := []strictjson.Member{
			strictjson.StringMember("workshop", true, engine.ValidateWorkshopID, &r.Workshop),
			strictjson.IntMember("quantity", true, 1, 10, &r.Quantity),
		}
		if got := strictjson.DecodePlain([]byte(body), members); got != plain {
			t.Errorf("fast path for %s = %v, want %v", body, got, plain)
		}
	}
}

// FuzzDecodeStrictPaths checks Decode's fast path against the full
// token decoder: whatever body the fast path accepts, the token decoder
// accepts with the same values, and Decode's answer (values and error
// text) is always the token decoder's.
func FuzzDecodeStrictPaths(f *testing.F) {
	for _, seed := range []string{
		`{"workshop":"go-basics","quantity":2,"notify":true}`,
		`{ "quantity" : -0 , "workshop" : "go-basics" }`,
		"{\"workshop\":\"go-basics\",\"quantity\":2}\n",
		`{"workshop":"go-basics","quantity":02}`,
		`{"workshop":"go-basics","quantity":2,"notify":truex}`,
		`{"workshop":"go-b\u0061sics","quantity":2}`,
		`{"workshop":"go-basics","quantity":2,}`,
		`{"workshop":"go-basics","quantity":2 3}`,
		`{"workshop":"gö","quantity":2}`,
		`{}`, `{"notify":false}`, `{"quantity":1e3}`,
	} {
		f.Add([]byte(seed))
	}
	type result struct {
		workshop string
		quantity int
		notify   bool
		err      string
	}
	decode := func(body []byte, fn func([]byte, []strictjson.Member) error) result {
		var r result
		err := fn(body, []strictjson.Member{
			strictjson.StringMember("workshop", true, engine.ValidateWorkshopID, &r.workshop),
			strictjson.IntMember("quantity", true, 1, 100, &r.quantity),
			strictjson.BoolMember("notify", false, &r.notify),
		})
		if err != nil {
			r = result{err: err.Error()}
		}
		return r
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		slow := decode(body, strictjson.DecodeTokens)
		if got := decode(body, strictjson.Decode); got != slow {
			t.Fatalf("Decode(%q) = %+v, the token decoder says %+v", body, got, slow)
		}
		plain := decode(body, func(b []byte, m []strictjson.Member) error {
			if !strictjson.DecodePlain(b, m) {
				return errors.New("not plain")
			}
			return nil
		})
		if plain.err == "" && plain != slow {
			t.Fatalf("the fast path accepted %q as %+v, the token decoder says %+v", body, plain, slow)
		}
	})
}

// TestErrorNamesTheMember checks that a refusal is an *Error whose Member
// is the member its message names, and empty where it names none.
func TestErrorNamesTheMember(t *testing.T) {
	for body, want := range map[string]struct{ member, message string }{
		`{"n":"1"}`:        {"n", `member "n" must be a JSON integer (no fraction, no exponent, no quotes), not a string`},
		`{"n":0}`:          {"n", `member "n" must be an integer from 1 to 9`},
		`{"n":1,"n":1}`:    {"n", `member "n" appears more than once`},
		`{"x":1}`:          {"x", `member "x" is not allowed (allowed: "n", "at", "on")`},
		`{}`:               {"n", `member "n" is missing`},
		`{"n":1,"at":"x"}`: {"at", `member "at" must be an RFC 3339 time`},
		`{"n":`:            {"n", `malformed value for member "n": the body ends too early`},
		`[]`:               {"", `body must be one JSON object, not an array`},
		`{"n":1} 2`:        {"", `unexpected data after the JSON object: the number 2`},
	} {
		var n int
		var at time.Time
		var on *bool
		err := strictjson.Decode([]byte(body), []strictjson.Member{
			strictjson.IntMember("n", true, 1, 9, &n),
			strictjson.TimeMember("at", false, &at),
			strictjson.OptionalBoolMember("on", &on),
		})
		var e *strictjson.Error
		if !errors.As(err, &e) || e.Member != want.member || e.Message != want.message || err.Error() != want.message {
			t.Errorf("Decode(%s) = %#v, want member %q and message %q", body, err, want.member, want.message)
		}
	}
}

// TestOptionalBoolMember checks that an absent member leaves its pointer
// nil and a present one points it at the value.
func TestOptionalBoolMember(t *testing.T) {
	for body, want := range map[string]string{`{}`: "nil", `{"on":true}`: "true", `{"on":false}`: "false", ` { "on" : false } `: "false"} {
		var on *bool
		if err := strictjson.Decode([]byte(body), []strictjson.Member{strictjson.OptionalBoolMember("on", &on)}); err != nil {
			t.Fatalf("Decode(%s) = %v", body, err)
		}
		got := "nil"
		if on != nil {
			got = map[bool]string{true: "true", false: "false"}[*on]
		}
		if got != want {
			t.Errorf("Decode(%s) sets %s, want %s", body, got, want)
		}
	}
	var on *bool
	if err := strictjson.Decode([]byte(`{"on":1}`), []strictjson.Member{strictjson.OptionalBoolMember("on", &on)}); err == nil || on != nil {
		t.Errorf("a number for a boolean = %v, %v; want a refusal and nil", err, on)
	}
}
