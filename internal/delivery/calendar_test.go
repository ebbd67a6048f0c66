package delivery_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/mail/mailtest"
)

// TestInvitationInTheWorkshopsZone: the confirmation's invitation and the
// cancellation's have the workshop's start and end as its own wall-clock
// times, with the zone's name as TZID and a VTIMEZONE of it, at the same
// instants as the workshop's; a workshop without a time zone, or in UTC,
// has them in UTC, without a VTIMEZONE.
func TestInvitationInTheWorkshopsZone(t *testing.T) {
	h := newHarness(t)
	sink := mailtest.Start(t)
	c := h.channel(sink, "")
	alice := h.emailActor("alice@example.org")
	sent := 0
	for i, tc := range []struct {
		zone        string
		start, end  time.Time // In UTC.
		local, tzid string    // What DTSTART says.
		localEnd    string
	}{
		{"Europe/Berlin", time.Date(2026, 10, 24, 16, 0, 0, 0, time.UTC), time.Date(2026, 10, 25, 11, 0, 0, 0, time.UTC),
			"20261024T180000", "Europe/Berlin", "20261025T120000"},
		{"America/New_York", time.Date(2026, 3, 8, 1, 0, 0, 0, time.UTC), time.Date(2026, 3, 8, 14, 30, 0, 0, time.UTC),
			"20260307T200000", "America/New_York", "20260308T103000"},
		{"Asia/Kolkata", time.Date(2027, 1, 15, 4, 30, 0, 0, time.UTC), time.Date(2027, 1, 15, 8, 0, 0, 0, time.UTC),
			"20270115T100000", "Asia/Kolkata", "20270115T133000"},
		{"", time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC), time.Date(2026, 6, 1, 11, 0, 0, 0, time.UTC),
			"20260601T090000Z", "", "20260601T110000Z"},
		{"UTC", time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC), time.Date(2026, 6, 1, 11, 0, 0, 0, time.UTC),
			"20260601T090000Z", "", "20260601T110000Z"},
	} {
		id := fmt.Sprintf("zoned-%d", i)
		spec := engine.WorkshopSpec{Capacity: 10, MaxQuantity: 1, Title: "Zoned", Schedule: engine.Schedule{
			Location: "Room 1", StartsAt: tc.start, EndsAt: tc.end, TimeZone: tc.zone}}
		if _, _, err := h.eng.PutWorkshop(h.ctx, id, spec, nil); err != nil {
			t.Fatal(err)
		}
		reservation := h.reserve(alice, id, 1)
		h.send(c, h.job())
		h.cancel(alice, reservation)
		h.send(c, h.job())
		sent += 2
		msgs := sink.Wait(t, sent)
		for _, raw := range msgs[sent-2 : sent] {
			m := mailtest.Parse(t, raw)
			method, ev := event(t, m)
			for _, p := range []struct {
				name, value string
				at          time.Time
			}{{"DTSTART", tc.local, tc.start}, {"DTEND", tc.localEnd, tc.end}} {
				prop := ev.Props.Get(p.name)
				if prop == nil || prop.Value != p.value || prop.Params.Get("TZID") != tc.tzid {
					t.Errorf("%q %s: %s %v, want %s with TZID %q", tc.zone, method, p.name, prop, p.value, tc.tzid)
					continue
				}
				if at, err := prop.DateTime(nil); err != nil || !at.Equal(p.at) {
					t.Errorf("%q %s: %s at %v (%v), want %v", tc.zone, method, p.name, at, err, p.at)
				}
			}
			vtimezone := bytes.Contains(m.Calendar, []byte("\r\nBEGIN:VTIMEZONE\r\nTZID:"+tc.tzid+"\r\n"))
			if vtimezone != (tc.tzid != "") || bytes.Count(m.Calendar, []byte("BEGIN:VTIMEZONE")) > 1 {
				t.Errorf("%q %s: VTIMEZONE %s is there: %v, want %v\n%s", tc.zone, method, tc.tzid, vtimezone, tc.tzid != "", m.Calendar)
			}
		}
	}
}
