package api

import (
	"time"

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
// exactly one JSON object with the members "workshop" (a workshop id) and
// "quantity" (a JSON integer literal of at least 1) and, optionally,
// "waitlist" (true or false, false by default: true joins the workshop's
// waiting list when the places cannot be reserved), in any order. Every
// violation is a CodeRequestContract error whose message names the member.
func DecodeRequest(body []byte) (engine.Request, error) {
	var r engine.Request
	err := DecodeStrict(body, requestMembers(&r))
	return r, err
}

// requestMembers are the members of a reservation request, the body of a
// single reservation and of each item of a batch (which adds its key).
func requestMembers(r *engine.Request) []strictjson.Member {
	return []strictjson.Member{
		strictjson.StringMember("workshop", true, engine.ValidateWorkshopID, &r.Workshop),
		strictjson.IntMember("quantity", true, 1, engine.MaxQuantity, &r.Quantity),
		strictjson.BoolMember("waitlist", false, &r.Waitlist),
	}
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
// same strict rules as reservation bodies: "capacity", and optionally
// "max_quantity", "title", "hidden", "offer_ttl_seconds" (how long an
// offer from the waiting list lasts, MinOfferTTLSeconds to
// MaxOfferTTLSeconds) and the members of a schedule.
func DecodeWorkshopSpec(body []byte) (engine.WorkshopSpec, error) {
	var s engine.WorkshopSpec
	members := []strictjson.Member{
		strictjson.IntMember("capacity", true, 0, engine.MaxQuantity, &s.Capacity),
		strictjson.IntMember("max_quantity", false, 1, engine.MaxQuantity, &s.MaxQuantity),
		strictjson.StringMember("title", false, engine.ValidateTitle, &s.Title),
		strictjson.OptionalBoolMember("hidden", &s.Hidden),
		strictjson.IntMember("offer_ttl_seconds", false, engine.MinOfferTTLSeconds, engine.MaxOfferTTLSeconds, &s.OfferTTLSeconds),
	}
	sc := &s.Schedule
	members = append(members,
		strictjson.StringMember("description", false, nil, &sc.Description),
		strictjson.StringMember("location", false, nil, &sc.Location),
		strictjson.StringMember("time_zone", false, engine.ValidateTimeZone, &sc.TimeZone),
		strictjson.TimeMember("starts_at", false, &sc.StartsAt),
		strictjson.TimeMember("ends_at", false, &sc.EndsAt),
		strictjson.TimeMember("registration_opens_at", false, &sc.RegistrationOpensAt),
		strictjson.TimeMember("registration_closes_at", false, &sc.RegistrationClosesAt),
		strictjson.IntMember("max_per_person", false, 1, engine.MaxQuantity, &sc.MaxPerPerson),
	)
	err := DecodeStrict(body, members)
	return s, err
}

// DecodeWorkshopPatch decodes the body of PATCH /api/v1/workshops/{id}, a
// JSON merge patch (RFC 7396) of a workshop: each member present changes
// the workshop; null clears an optional member (the members of a
// schedule, and "offer_ttl_seconds", which null sets back to the default)
// and is refused for the others. A workshop has no nested
// object, so a merge patch of it is one flat object.
func DecodeWorkshopPatch(body []byte) (engine.WorkshopPatch, error) {
	var p engine.WorkshopPatch
	var title string
	var capacity, maxQuantity, maxPerPerson, offerTTL int
	var hidden bool
	var description, location, timeZone string
	var startsAt, endsAt, opensAt, closesAt time.Time
	members := []strictjson.Member{
		present(strictjson.StringMember("title", false, engine.ValidateTitle, &title), &title, &p.Title),
		present(strictjson.IntMember("capacity", false, 0, engine.MaxQuantity, &capacity), &capacity, &p.Capacity),
		present(strictjson.IntMember("max_quantity", false, 1, engine.MaxQuantity, &maxQuantity), &maxQuantity, &p.MaxQuantity),
		present(strictjson.BoolMember("hidden", false, &hidden), &hidden, &p.Hidden),
		clearable(strictjson.StringMember("description", false, nil, &description), &description, &p.Description),
		clearable(strictjson.StringMember("location", false, nil, &location), &location, &p.Location),
		clearable(strictjson.StringMember("time_zone", false, engine.ValidateTimeZone, &timeZone), &timeZone, &p.TimeZone),
		clearable(strictjson.TimeMember("starts_at", false, &startsAt), &startsAt, &p.StartsAt),
		clearable(strictjson.TimeMember("ends_at", false, &endsAt), &endsAt, &p.EndsAt),
		clearable(strictjson.TimeMember("registration_opens_at", false, &opensAt), &opensAt, &p.OpensAt),
		clearable(strictjson.TimeMember("registration_closes_at", false, &closesAt), &closesAt, &p.ClosesAt),
		clearable(strictjson.IntMember("max_per_person", false, 1, engine.MaxQuantity, &maxPerPerson), &maxPerPerson, &p.MaxPerPerson),
		clearable(strictjson.IntMember("offer_ttl_seconds", false, engine.MinOfferTTLSeconds, engine.MaxOfferTTLSeconds, &offerTTL), &offerTTL, &p.OfferTTLSeconds),
	}
	err := DecodeStrict(body, members)
	return p, err
}

// present makes member m, which decodes into v, point *dst at v when it
// is present.
func present[T any](m strictjson.Member, v *T, dst **T) strictjson.Member {
	return strictjson.Then(m, func() { *dst = v })
}

// clearable is present for a member that null clears: null points *dst at
// the zero value.
func clearable[T any](m strictjson.Member, v *T, dst **T) strictjson.Member {
	return strictjson.Nullable(m, func() { var zero T; *v = zero }, func() { *dst = v })
}
