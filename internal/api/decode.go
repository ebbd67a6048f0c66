package api

import (
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/strictjson"
)

// DecodeStrict decodes body with strictjson.Decode, the one strict decoder,
// and returns its refusal as a CodeRequestContract error with the same
// message.
func DecodeStrict(body []byte, members []strictjson.Member) error {
	if err := strictjson.Decode(body, members); err != nil {
		return engine.Errorf(engine.CodeRequestContract, "%s", err)
	}
	return nil
}

// DecodeRequest decodes a reservation body under the strict request contract:
// exactly one JSON object with exactly the members "workshop" (a workshop id)
// and "quantity" (a JSON integer literal of at least 1), in any order. Every
// violation is a CodeRequestContract error whose message names the member.
func DecodeRequest(body []byte) (engine.Request, error) {
	var r engine.Request
	err := DecodeStrict(body, []strictjson.Member{
		strictjson.StringMember("workshop", true, engine.ValidateWorkshopID, &r.Workshop),
		strictjson.IntMember("quantity", true, 1, engine.MaxQuantity, &r.Quantity),
	})
	return r, err
}

// DecodeHoldRequest decodes the body of a hold request under the strict
// request contract: exactly the members "workshop", "quantity" and
// "ttl_seconds" (a JSON integer from MinHoldTTLSeconds to
// MaxHoldTTLSeconds).
func DecodeHoldRequest(body []byte) (engine.HoldRequest, error) {
	var r engine.HoldRequest
	err := DecodeStrict(body, []strictjson.Member{
		strictjson.StringMember("workshop", true, engine.ValidateWorkshopID, &r.Workshop),
		strictjson.IntMember("quantity", true, 1, engine.MaxQuantity, &r.Quantity),
		strictjson.IntMember("ttl_seconds", true, engine.MinHoldTTLSeconds, engine.MaxHoldTTLSeconds, &r.TTLSeconds),
	})
	return r, err
}

// DecodeEmptyObject checks the body of a confirmation or release: exactly
// the empty JSON object.
func DecodeEmptyObject(body []byte) error { return DecodeStrict(body, nil) }

// DecodeWorkshopSpec decodes the body of PUT /api/v1/workshops/{id} with the
// same strict rules as reservation bodies.
func DecodeWorkshopSpec(body []byte) (engine.WorkshopSpec, error) {
	var s engine.WorkshopSpec
	err := DecodeStrict(body, []strictjson.Member{
		strictjson.IntMember("capacity", true, 0, engine.MaxQuantity, &s.Capacity),
		strictjson.IntMember("max_quantity", false, 1, engine.MaxQuantity, &s.MaxQuantity),
		strictjson.StringMember("title", false, engine.ValidateTitle, &s.Title),
		strictjson.OptionalBoolMember("hidden", &s.Hidden),
	})
	return s, err
}
