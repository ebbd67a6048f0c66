package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// EncodeWorkshopPatch encodes p as the JSON merge patch that
// DecodeWorkshopPatch decodes back to p: a member for each field that is
// not nil, and null for an optional member that p clears (one that points
// at its zero value). Times keep their offsets.
func EncodeWorkshopPatch(p engine.WorkshopPatch) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	add := func(name string, v any) error {
		data, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode member %q: %w", name, err)
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:%s", name, data)
		return nil
	}
	clock := func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return t.Format(time.RFC3339)
	}
	for _, m := range []struct {
		name   string
		set    bool
		value  any
		clears bool
	}{
		{"title", p.Title != nil, deref(p.Title), false},
		{"capacity", p.Capacity != nil, deref(p.Capacity), false},
		{"max_quantity", p.MaxQuantity != nil, deref(p.MaxQuantity), false},
		{"hidden", p.Hidden != nil, deref(p.Hidden), false},
		{"description", p.Description != nil, deref(p.Description), deref(p.Description) == ""},
		{"location", p.Location != nil, deref(p.Location), deref(p.Location) == ""},
		{"time_zone", p.TimeZone != nil, deref(p.TimeZone), deref(p.TimeZone) == ""},
		{"starts_at", p.StartsAt != nil, clock(p.StartsAt), deref(p.StartsAt).IsZero()},
		{"ends_at", p.EndsAt != nil, clock(p.EndsAt), deref(p.EndsAt).IsZero()},
		{"registration_opens_at", p.OpensAt != nil, clock(p.OpensAt), deref(p.OpensAt).IsZero()},
		{"registration_closes_at", p.ClosesAt != nil, clock(p.ClosesAt), deref(p.ClosesAt).IsZero()},
		{"max_per_person", p.MaxPerPerson != nil, deref(p.MaxPerPerson), deref(p.MaxPerPerson) == 0},
		{"offer_ttl_seconds", p.OfferTTLSeconds != nil, deref(p.OfferTTLSeconds), deref(p.OfferTTLSeconds) == 0},
	} {
		if !m.set {
			continue
		}
		if m.clears {
			m.value = nil
		}
		if err := add(m.name, m.value); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// deref returns *v, or the zero value for nil.
func deref[T any](v *T) T {
	if v == nil {
		var zero T
		return zero
	}
	return *v
}
