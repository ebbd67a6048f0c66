package cli

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// localLayouts are the forms of a time without a UTC offset that the
// time flags of "admin workshop set" read in the zone of --time-zone.
var localLayouts = []string{"2006-01-02 15:04", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02T15:04:05"}

// timeFormsInWords says in words what a time flag takes.
const timeFormsInWords = `a date and time with its UTC offset, like 2027-03-06T10:00:00+01:00 (RFC 3339), or a date and time like "2027-03-06 10:00" together with --time-zone`

// parseFlagTime reads the value of a time flag: an RFC 3339 time, or a
// date and time without an offset in zone (nil when --time-zone is not
// given, which such a time then needs).
func parseFlagTime(flag, value string, zone *time.Location) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, value); err == nil {
		return t, nil
	}
	for _, layout := range localLayouts {
		if _, err := time.Parse(layout, value); err != nil {
			continue
		}
		if zone == nil {
			return time.Time{}, usageErrorf("nothing sent: %s %q has no UTC offset: add one (like 2027-03-06T10:00:00+01:00) or name the workshop's time zone with --time-zone (like --time-zone Europe/Berlin)", flag, value)
		}
		wall, _ := time.Parse(layout, value)
		return inZone(flag, value, wall, zone)
	}
	return time.Time{}, usageErrorf("nothing sent: %s %q is not a time: give %s", flag, value, timeFormsInWords)
}

// inZone returns the one instant at which the clocks of zone show wall
// (a date and time of day, read as if in UTC), given as value to flag. A
// time the clocks skip when they are put forward, or show twice when they
// are put back, is refused: it names no instant, or two.
func inZone(flag, value string, wall time.Time, zone *time.Location) (time.Time, error) {
	var found []time.Time
	// Every offset the zone has within a day of wall: a clock change
	// near it shows as a second one.
	for _, near := range []time.Duration{-26 * time.Hour, 0, 26 * time.Hour} {
		_, offset := wall.Add(near).In(zone).Zone()
		at := wall.Add(-time.Duration(offset) * time.Second)
		if _, o := at.In(zone).Zone(); o == offset && !slices.ContainsFunc(found, at.Equal) {
			found = append(found, at)
		}
	}
	switch len(found) {
	case 0:
		return time.Time{}, usageErrorf("nothing sent: %s %q does not exist in %s: the clocks skip it when they are put forward; give a time with its UTC offset or another time", flag, value, zone)
	case 1:
		return found[0].In(zone), nil
	}
	slices.SortFunc(found, time.Time.Compare)
	return time.Time{}, usageErrorf("nothing sent: %s %q happens twice in %s, when the clocks are put back: give it with its UTC offset, %s or %s",
		flag, value, zone, found[0].In(zone).Format(time.RFC3339), found[1].In(zone).Format(time.RFC3339))
}

// workshopWhen says when w takes place, in its time zone: the day and
// the times of its start and end, the zone's abbreviation; "" without a
// start.
func workshopWhen(w engine.Workshop) string {
	if w.StartsAt.IsZero() {
		return ""
	}
	loc := workshopZone(w)
	start := w.StartsAt.In(loc)
	s := start.Format("Mon 2006-01-02 15:04")
	if !w.EndsAt.IsZero() {
		end := w.EndsAt.In(loc)
		if end.Format("2006-01-02") == start.Format("2006-01-02") {
			s += "-" + end.Format("15:04")
		} else {
			s += " to " + end.Format("Mon 2006-01-02 15:04")
		}
	}
	return s + " " + zoneName(start)
}

// workshopZone is w's time zone, or the zone of the offset its times
// were shown with (UTC without one).
func workshopZone(w engine.Workshop) *time.Location {
	if w.TimeZone != "" {
		if loc, err := time.LoadLocation(w.TimeZone); err == nil {
			return loc
		}
	}
	if !w.StartsAt.IsZero() {
		return w.StartsAt.Location()
	}
	return time.UTC
}

// zoneName is t's zone abbreviation, or its offset where the zone has no
// abbreviation of letters (such as "+03").
func zoneName(t time.Time) string {
	name := t.Format("MST")
	if strings.ContainsAny(name, "+-0123456789") || name == "" {
		return t.Format("-07:00")
	}
	return name
}

// workshopRegistration says w's registration state and when it next
// changes, in w's time zone; "" for a workshop without a schedule.
func workshopRegistration(w engine.Workshop) string {
	loc := workshopZone(w)
	at := func(t time.Time) string { return t.In(loc).Format("2006-01-02 15:04") }
	switch w.Registration {
	case engine.RegistrationNotOpen:
		return "opens " + at(w.RegistrationOpensAt)
	case engine.RegistrationOpen:
		if c := w.ClosesAt(); !c.IsZero() {
			return "open until " + at(c)
		}
		return "open"
	case engine.RegistrationClosed:
		return "closed"
	}
	return w.Registration
}

// workshopSchedule says w's schedule on a few indented lines for
// "admin workshop set"; "" for a workshop without one.
func workshopSchedule(w engine.Workshop) string {
	if w.Schedule.IsZero() {
		return ""
	}
	var b strings.Builder
	line := func(label, value string) {
		if value != "" {
			fmt.Fprintf(&b, "  %-13s %s\n", label+":", value)
		}
	}
	zone := w.TimeZone
	if zone != "" {
		zone = " (" + zone + ")"
	}
	if when := workshopWhen(w); when != "" {
		line("when", when+zone)
	}
	line("where", w.Location)
	line("registration", workshopRegistration(w))
	if w.MaxPerPerson != 0 {
		line("per person", fmt.Sprintf("at most %d places", w.MaxPerPerson))
	}
	if w.Description != "" {
		first, _, more := strings.Cut(w.Description, "\n")
		if more {
			first += " …"
		}
		line("description", first)
	}
	return b.String()
}
