package strictjson_test

import (
	"errors"
	"fmt"
	"slices"
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
		`{"workshop":"go-basics","quantity":2,"tags":["a","b"]}`, `{"workshop":"go-basics","quantity":2,"tags":[1]}`,
	} {
		f.Add([]byte(seed))
	}
	type result struct {
		workshop string
		quantity int
		notify   bool
		tags     string
		err      string
	}
	decode := func(body []byte, fn func([]byte, []strictjson.Member) error) result {
		var r result
		var tags []string
		err := fn(body, []strictjson.Member{
			strictjson.StringMember("workshop", true, engine.ValidateWorkshopID, &r.workshop),
			strictjson.IntMember("quantity", true, 1, 100, &r.quantity),
			strictjson.BoolMember("notify", false, &r.notify),
			strictjson.StringsMember("tags", false, nil, &tags),
		})
		if err != nil {
			return result{err: err.Error()}
		}
		r.tags = fmt.Sprintf("%#v", tags)
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

// TestStringsMember checks the member whose value is an array of strings:
// its items in order, an empty array as an empty list, and a refusal,
// naming the member, of every other value.
func TestStringsMember(t *testing.T) {
	decode := func(body string) ([]string, string, error) {
		var items []string
		var url string
		err := strictjson.Decode([]byte(body), []strictjson.Member{
			strictjson.StringMember("url", true, nil, &url),
			strictjson.StringsMember("types", false, func(items []string) error {
				if len(items) > 2 {
					return errors.New("may hold at most 2 items")
				}
				return nil
			}, &items),
		})
		return items, url, err
	}
	for body, want := range map[string][]string{
		`{"url":"u","types":["a","b"]}`:         {"a", "b"},
		` { "types" : [ ] , "url" : "u" } `:     {},
		`{"url":"u","types":["\u0061"]}`:        {"a"},
		`{"url":"u"}`:                           nil,
		"{\"types\":[\"x\"]\n,\"url\":\"u\"}\n": {"x"},
	} {
		got, url, err := decode(body)
		if err != nil || url != "u" || (got == nil) != (want == nil) || !slices.Equal(got, want) {
			t.Errorf("Decode(%s) = %q %q %v, want %q", body, got, url, err, want)
		}
	}
	for body, message := range map[string]string{
		`{"url":"u","types":"a"}`:           `member "types" must be a JSON array of strings, not a string`,
		`{"url":"u","types":null}`:          `member "types" must be a JSON array of strings, not null`,
		`{"url":"u","types":[1]}`:           `member "types" must be a JSON array of strings, not an array holding the number 1`,
		`{"url":"u","types":[["a"]]}`:       `member "types" must be a JSON array of strings, not an array holding an array`,
		`{"url":"u","types":[{}]}`:          `member "types" must be a JSON array of strings, not an array holding an object`,
		`{"url":"u","types":{}}`:            `member "types" must be a JSON array of strings, not an object`,
		`{"url":"u","types":["a","b","c"]}`: `member "types" may hold at most 2 items`,
		`{"url":"u","types":["a"`:           `malformed value for member "types": the body ends too early`,
		`{"url":["u"]}`:                     `member "url" must be a JSON string, not an array`,
		`{"url":"u","types":[],"types":[]}`: `member "types" appears more than once`,
	} {
		_, _, err := decode(body)
		var e *strictjson.Error
		if !errors.As(err, &e) || e.Message != message || e.Member == "" {
			t.Errorf("Decode(%s) = %#v, want a refusal %q naming its member", body, err, message)
		}
	}
}
