package api_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

func ptr[T any](v T) *T { return &v }

// TestEncodeWorkshopPatchRoundTrips: every patch encodes to the merge
// patch that decodes back to it, with null for each member it clears.
func TestEncodeWorkshopPatchRoundTrips(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	starts := time.Date(2027, 3, 6, 10, 0, 0, 0, berlin)
	for _, c := range []struct {
		patch engine.WorkshopPatch
		json  string
	}{
		{engine.WorkshopPatch{}, `{}`},
		{engine.WorkshopPatch{Title: ptr("Go"), Capacity: ptr(0), MaxQuantity: ptr(2), Hidden: ptr(false)}, `{"title":"Go","capacity":0,"max_quantity":2,"hidden":false}`},
		{engine.WorkshopPatch{Description: ptr("Bring \"a\" laptop.\n"), Location: ptr("Room 1"), TimeZone: ptr("Europe/Berlin"), StartsAt: &starts, EndsAt: ptr(starts.Add(6 * time.Hour)),
			OpensAt: ptr(starts.Add(-30 * 24 * time.Hour).UTC()), ClosesAt: ptr(starts.Add(-time.Hour)), MaxPerPerson: ptr(2)},
			`{"description":"Bring \"a\" laptop.\n","location":"Room 1","time_zone":"Europe/Berlin","starts_at":"2027-03-06T10:00:00+01:00","ends_at":"2027-03-06T16:00:00+01:00",` +
				`"registration_opens_at":"2027-02-04T09:00:00Z","registration_closes_at":"2027-03-06T09:00:00+01:00","max_per_person":2}`},
		{engine.WorkshopPatch{Description: ptr(""), Location: ptr(""), TimeZone: ptr(""), StartsAt: &time.Time{}, EndsAt: &time.Time{}, OpensAt: &time.Time{}, ClosesAt: &time.Time{}, MaxPerPerson: ptr(0)},
			`{"description":null,"location":null,"time_zone":null,"starts_at":null,"ends_at":null,"registration_opens_at":null,"registration_closes_at":null,"max_per_person":null}`},
		{engine.WorkshopPatch{OfferTTLSeconds: ptr(3600)}, `{"offer_ttl_seconds":3600}`},
		{engine.WorkshopPatch{OfferTTLSeconds: ptr(0)}, `{"offer_ttl_seconds":null}`},
	} {
		data, err := api.EncodeWorkshopPatch(c.patch)
		if err != nil || string(data) != c.json {
			t.Errorf("EncodeWorkshopPatch(%+v) = %s, %v; want %s", c.patch, data, err, c.json)
			continue
		}
		back, err := api.DecodeWorkshopPatch(data)
		if err != nil {
			t.Errorf("DecodeWorkshopPatch(%s): %v", data, err)
			continue
		}
		if !samePatch(back, c.patch) {
			t.Errorf("DecodeWorkshopPatch(%s) = %+v, want %+v", data, back, c.patch)
		}
	}
}

// TestDecodeWorkshopPatchOfferTTL: offer_ttl_seconds is an integer within
// its bounds, or null for the default; anything else is refused naming it.
func TestDecodeWorkshopPatchOfferTTL(t *testing.T) {
	for _, body := range []string{`{"offer_ttl_seconds":59}`, `{"offer_ttl_seconds":2592001}`, `{"offer_ttl_seconds":0}`, `{"offer_ttl_seconds":1.5}`, `{"offer_ttl_seconds":"60"}`} {
		_, err := api.DecodeWorkshopPatch([]byte(body))
		if engine.ErrorCode(err) != engine.CodeRequestContract || !strings.Contains(err.Error(), `member "offer_ttl_seconds"`) {
			t.Errorf("DecodeWorkshopPatch(%s) = %v, want a request_contract error naming the member", body, err)
		}
	}
}

// samePatch compares two patches member by member, times as instants.
func samePatch(a, b engine.WorkshopPatch) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	for i := range va.NumField() {
		fa, fb := va.Field(i), vb.Field(i)
		if fa.IsNil() != fb.IsNil() {
			return false
		}
		if fa.IsNil() {
			continue
		}
		if ta, ok := fa.Interface().(*time.Time); ok {
			if !ta.Equal(*fb.Interface().(*time.Time)) {
				return false
			}
			continue
		}
		if !reflect.DeepEqual(fa.Elem().Interface(), fb.Elem().Interface()) {
			return false
		}
	}
	return true
}
