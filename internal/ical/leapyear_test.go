package ical_test

import (
	"testing"
	"time"

	goical "github.com/emersion/go-ical"
)

// TestLastDayOfALeapYear: on the last day of a leap year in the years
// that Go computes from a zone's rules rather than lists (from 2038 with
// the system's zone files, and much earlier with the slim ones of
// time/tzdata), time.Time.ZoneBounds reports a period that ends at the
// start of that day, not after the time asked about. An event ending that
// day must still be encoded, once, with each observance once, and its
// times placed where they are.
func TestLastDayOfALeapYear(t *testing.T) {
	for _, tc := range []struct {
		name       string
		start, end time.Time
	}{
		{"ends on the day", time.Date(2040, 12, 31, 18, 0, 0, 0, berlin), time.Date(2040, 12, 31, 23, 0, 0, 0, berlin)},
		{"starts the day before", time.Date(2040, 12, 30, 18, 0, 0, 0, berlin), time.Date(2040, 12, 31, 12, 0, 0, 0, berlin)},
		{"into the next year", time.Date(2040, 12, 31, 22, 0, 0, 0, berlin), time.Date(2041, 1, 1, 2, 0, 0, 0, berlin)},
		{"into the next summer", time.Date(2040, 6, 1, 18, 0, 0, 0, berlin), time.Date(2041, 7, 6, 18, 0, 0, 0, berlin)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := request()
			c.Event.Start, c.Event.End, c.Event.TimeZone = tc.start, tc.end, berlin
			type result struct {
				raw []byte
				err error
			}
			done := make(chan result, 1)
			go func() {
				raw, err := c.Encode()
				done <- result{raw, err}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("Encode did not return: its walk over the zone's periods does not end")
			}
			if r.err != nil {
				t.Fatal(r.err)
			}
			cal, ev := decode(t, r.raw)
			zones := timezones(t, cal)
			obs := zones["Europe/Berlin"]
			for i := 1; i < len(obs); i++ {
				if obs[i].onset.Equal(obs[i-1].onset) {
					t.Errorf("two observances begin at %v\n%s", obs[i].onset, r.raw)
				}
			}
			for _, p := range []struct {
				name string
				want time.Time
			}{{goical.PropDateTimeStart, tc.start}, {goical.PropDateTimeEnd, tc.end}} {
				if at, _ := resolve(t, zones, ev.Props.Get(p.name)); !at.Equal(p.want) {
					t.Errorf("%s is %v, want %v\n%s", p.name, at, p.want.UTC(), r.raw)
				}
			}
		})
	}
}
