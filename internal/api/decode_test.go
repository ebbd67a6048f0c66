package api_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/api"
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
		got, err := api.DecodeRequest([]byte(body))
		if err != nil || got != want {
			t.Errorf("DecodeRequest(%s) = %+v, %v; want %+v", body, got, err, want)
		}
	}
}

// TestDecodeRequestWaitlist: "waitlist" is optional, false by default, and
// a JSON true or false only; false asks what a request without it asks.
func TestDecodeRequestWaitlist(t *testing.T) {
	for body, want := range map[string]engine.Request{
		`{"workshop":"go-basics","quantity":2,"waitlist":true}`:  {Workshop: "go-basics", Quantity: 2, Waitlist: true},
		`{"waitlist":false,"workshop":"go-basics","quantity":2}`: {Workshop: "go-basics", Quantity: 2},
	} {
		got, err := api.DecodeRequest([]byte(body))
		if err != nil || got != want {
			t.Errorf("DecodeRequest(%s) = %+v, %v; want %+v", body, got, err, want)
		}
	}
	for _, body := range []string{
		`{"workshop":"go-basics","quantity":2,"waitlist":"true"}`,
		`{"workshop":"go-basics","quantity":2,"waitlist":1}`,
		`{"workshop":"go-basics","quantity":2,"waitlist":null}`,
		`{"workshop":"go-basics","quantity":2,"waitlist":true,"waitlist":true}`,
		`{"workshop":"go-basics","quantity":2,"wait_list":true}`,
	} {
		_, err := api.DecodeRequest([]byte(body))
		if engine.ErrorCode(err) != engine.CodeRequestContract || !strings.Contains(err.Error(), `member "wait`) {
			t.Errorf("DecodeRequest(%s) error = %v, want a request_contract error naming the member", body, err)
		}
	}
}

// TestDecodeBatchItemWaitlist: a batch's item takes "waitlist" as a
// single reservation does, on the fast path and on the token path alike.
func TestDecodeBatchItemWaitlist(t *testing.T) {
	const key = "f47ac10b-58cc-4372-a567-0e02b2c3d479"
	want := []engine.BatchEntry{
		{Key: key, Request: engine.Request{Workshop: "go", Quantity: 1, Waitlist: true}},
		{Key: key, Request: engine.Request{Workshop: "go", Quantity: 2}},
	}
	for _, body := range []string{
		`{"items":[{"key":"` + key + `","workshop":"go","quantity":1,"waitlist":true},{"key":"` + key + `","workshop":"go","quantity":2,"waitlist":false}]}`,
		`{"items":[{"key":"\u0066` + key[1:] + `","workshop":"go","quantity":1,"waitlist":true},{"waitlist":false,"key":"` + key + `","workshop":"go","quantity":2}]}`,
	} {
		_, entries, err := api.DecodeBatch([]byte(body))
		if err != nil || !slices.EqualFunc(entries, want, func(a, b engine.BatchEntry) bool { return a.Key == b.Key && a.Request == b.Request && a.Invalid == nil }) {
			t.Errorf("DecodeBatch(%s) = %+v, %v; want %+v", body, entries, err, want)
		}
	}
	_, entries, err := api.DecodeBatch([]byte(`{"items":[{"key":"` + key + `","workshop":"go","quantity":1,"waitlist":"yes"}]}`))
	if err != nil || len(entries) != 1 || engine.ErrorCode(entries[0].Invalid) != engine.CodeRequestContract || !strings.Contains(entries[0].Invalid.Error(), `member "waitlist"`) {
		t.Errorf("DecodeBatch with \"waitlist\":\"yes\" = %+v, %v; want the item refused naming the member", entries, err)
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
		_, err := api.DecodeRequest([]byte(c.body))
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
	s, err := api.DecodeWorkshopSpec([]byte(`{"title":"Go","max_quantity":2,"capacity":3}`))
	if err != nil || s != (engine.WorkshopSpec{Capacity: 3, MaxQuantity: 2, Title: "Go"}) {
		t.Fatalf("DecodeWorkshopSpec = %+v, %v", s, err)
	}
	s, err = api.DecodeWorkshopSpec([]byte(`{"capacity":3,"offer_ttl_seconds":7200}`))
	if err != nil || s != (engine.WorkshopSpec{Capacity: 3, OfferTTLSeconds: 7200}) {
		t.Fatalf("DecodeWorkshopSpec with offer_ttl_seconds = %+v, %v", s, err)
	}
	for _, body := range []string{
		`{"max_quantity":2}`, `{"capacity":-1}`, `{"capacity":3,"max_quantity":0}`,
		`{"capacity":3,"title":5}`, `{"capacity":3,"reserved":1}`, `{"capacity":"3"}`,
		`{"capacity":3,"title":"a\u0000b"}`,
		`{"capacity":3,"offer_ttl_seconds":59}`, `{"capacity":3,"offer_ttl_seconds":2592001}`, `{"capacity":3,"offer_ttl_seconds":0}`,
		`{"capacity":3,"offer_ttl_seconds":"3600"}`, `{"capacity":3,"offer_ttl_seconds":null}`,
	} {
		if _, err := api.DecodeWorkshopSpec([]byte(body)); engine.ErrorCode(err) != engine.CodeRequestContract {
			t.Errorf("DecodeWorkshopSpec(%s) error = %v, want %s", body, err, engine.CodeRequestContract)
		}
	}
}

// TestDecodeEmptyObject: the body of a confirmation or release is exactly
// {}, and a member in it is refused by saying so.
func TestDecodeEmptyObject(t *testing.T) {
	for _, ok := range []string{`{}`, ` { } `, "{}\n"} {
		if err := api.DecodeEmptyObject([]byte(ok)); err != nil {
			t.Errorf("DecodeEmptyObject(%q) = %v", ok, err)
		}
	}
	err := api.DecodeEmptyObject([]byte(`{"a":1}`))
	if engine.ErrorCode(err) != engine.CodeRequestContract || engine.ErrorMessage(err) != `member "a" is not allowed: the body must be the empty object {}` {
		t.Errorf("DecodeEmptyObject({\"a\":1}) = %v", err)
	}
	for _, bad := range []string{``, `[]`, `{}{}`, `null`} {
		if err := api.DecodeEmptyObject([]byte(bad)); engine.ErrorCode(err) != engine.CodeRequestContract {
			t.Errorf("DecodeEmptyObject(%q) = %v, want request_contract", bad, err)
		}
	}
}
