// Package ical writes the iCalendar objects (RFC 5545) that mails carry
// as invitations (iMIP, RFC 6047): one VCALENDAR with a METHOD (REQUEST
// to put an event into the recipient's calendar, CANCEL to take it out)
// and one VEVENT, its text escaped, its lines folded at 75 octets on
// character boundaries, every line ended by CRLF.
//
// An event with a time zone has its start and end written as local times
// of that zone, with its IANA name as TZID (DTSTART;TZID=Europe/Berlin:
// 20261024T180000), and the calendar carries a VTIMEZONE of that name
// which spells the zone's offsets around them: one STANDARD or DAYLIGHT
// observance for each period of the zone from the one of the start to
// the one of the end (time.Time.ZoneBounds finds them in Go's zone data),
// each with its onset, the offsets before and after it, and the zone's
// abbreviation. A client that knows the zone by its name places the event
// as one that reads the VTIMEZONE does, and both show the workshop's own
// wall-clock times. A local time that a change back to standard time
// repeats means its first occurrence; an instant in the second one is
// written in UTC. An event without a time zone has its times in UTC
// ("Z"), which every client shows in the reader's own zone.
//
// It imports only the standard library.
package ical

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// The methods of a calendar object, as the iTIP scheduling messages name
// them.
const (
	MethodRequest = "REQUEST"
	MethodCancel  = "CANCEL"
)

// The statuses of an event.
const (
	StatusConfirmed = "CONFIRMED"
	StatusCancelled = "CANCELLED"
)

// Person is an organizer or attendee: a display name (may be empty) and a
// mail address.
type Person struct {
	Name    string
	Address string
}

// Event is the one VEVENT of a calendar object.
type Event struct {
	// UID names the event for good: a later object with the same UID and
	// a higher Sequence updates or cancels it in the recipient's calendar.
	UID      string
	Sequence int
	// Stamp is when this version of the event was made (DTSTAMP).
	Stamp time.Time
	// Start and End are the event's instants; End may be zero (the event
	// then ends when it starts), and Start may be zero only in a
	// cancellation.
	Start, End time.Time
	// TimeZone, if set and not UTC, is the zone Start and End are
	// written in: local times named by its TZID, with a VTIMEZONE of its
	// offsets around them. Its name must be an IANA name, not "Local".
	// Nil or UTC: they are written in UTC.
	TimeZone *time.Location
	Summary  string
	Location string
	// Description may have several lines.
	Description string
	// URL, if set, is a page about the event.
	URL       string
	Status    string
	Organizer Person
	Attendee  Person
}

// Calendar is a calendar object of one event.
type Calendar struct {
	// ProdID names the product that made it, e.g. "-//reserve//reserved//EN".
	ProdID string
	// Method is MethodRequest or MethodCancel.
	Method string
	Event  Event
}

// Encode returns c as an iCalendar object: CRLF line ends, lines folded
// at 75 octets. It refuses a calendar that lacks what its method
// requires: a UID, a DTSTAMP, an organizer and an attendee, and a start
// for a request.
func (c Calendar) Encode() ([]byte, error) {
	ev := c.Event
	switch {
	case c.Method != MethodRequest && c.Method != MethodCancel:
		return nil, fmt.Errorf("calendar method %q is neither %s nor %s", c.Method, MethodRequest, MethodCancel)
	case c.ProdID == "":
		return nil, errors.New("the calendar has no PRODID")
	case ev.UID == "":
		return nil, errors.New("the event has no UID")
	case ev.Stamp.IsZero():
		return nil, errors.New("the event has no DTSTAMP")
	case ev.Organizer.Address == "" || ev.Attendee.Address == "":
		return nil, fmt.Errorf("a %s needs an organizer and an attendee", c.Method)
	case c.Method == MethodRequest && ev.Start.IsZero():
		return nil, errors.New("a REQUEST needs the event's start")
	case !ev.End.IsZero() && !ev.End.After(ev.Start):
		return nil, fmt.Errorf("the event ends (%s) before it starts (%s)", utc(ev.End), utc(ev.Start))
	case ev.Sequence < 0:
		return nil, fmt.Errorf("SEQUENCE %d is negative", ev.Sequence)
	}
	if z := ev.TimeZone; z != nil && z != time.UTC && !isZoneName(z.String()) {
		return nil, fmt.Errorf("the time zone %q has no IANA name such as Europe/Berlin", z)
	}
	for _, v := range []string{c.ProdID, ev.UID, ev.URL, ev.Organizer.Address, ev.Attendee.Address, ev.Status} {
		if strings.ContainsFunc(v, isControl) {
			return nil, fmt.Errorf("the value %q holds a control character", v)
		}
	}
	var w writer
	w.line("BEGIN", "VCALENDAR")
	w.line("PRODID", escape(c.ProdID))
	w.line("VERSION", "2.0")
	w.line("CALSCALE", "GREGORIAN")
	w.line("METHOD", c.Method)
	startParam, start := dateTime(ev.Start, ev.TimeZone)
	endParam, end := dateTime(ev.End, ev.TimeZone)
	if startParam != "" || endParam != "" {
		last := ev.End
		if last.IsZero() {
			last = ev.Start
		}
		w.timeZone(ev.TimeZone, ev.Start, last)
	}
	w.line("BEGIN", "VEVENT")
	w.line("UID", escape(ev.UID))
	w.line("SEQUENCE", fmt.Sprint(ev.Sequence))
	w.line("DTSTAMP", utc(ev.Stamp))
	if !ev.Start.IsZero() {
		w.line("DTSTART"+startParam, start)
	}
	if !ev.End.IsZero() {
		w.line("DTEND"+endParam, end)
	}
	if ev.Summary != "" {
		w.line("SUMMARY", escape(ev.Summary))
	}
	if ev.Location != "" {
		w.line("LOCATION", escape(ev.Location))
	}
	if ev.Description != "" {
		w.line("DESCRIPTION", escape(ev.Description))
	}
	if ev.URL != "" {
		w.line("URL", ev.URL)
	}
	if ev.Status != "" {
		w.line("STATUS", ev.Status)
	}
	w.line("TRANSP", "OPAQUE")
	w.line("ORGANIZER"+cn(ev.Organizer.Name), "mailto:"+ev.Organizer.Address)
	w.line("ATTENDEE"+cn(ev.Attendee.Name)+";ROLE=REQ-PARTICIPANT;PARTSTAT=ACCEPTED;RSVP=FALSE", "mailto:"+ev.Attendee.Address)
	w.line("END", "VEVENT")
	w.line("END", "VCALENDAR")
	return w.Bytes(), nil
}

// utc formats t as a UTC DATE-TIME (FORM #2).
func utc(t time.Time) string { return t.UTC().Format("20060102T150405Z") }

// localForm is the layout of a local DATE-TIME (FORM #1 and #3).
const localForm = "20060102T150405"

// dateTime returns the TZID parameter (";TZID=name", or "" for none) and
// the value of a DATE-TIME property for t: its local time in zone (FORM
// #3), or UTC (FORM #2) when zone is nil or UTC, or when t is the second
// occurrence of a local time that a change back repeats, which a TZID
// would name the first occurrence of.
func dateTime(t time.Time, zone *time.Location) (param, value string) {
	if t.IsZero() || zone == nil || zone == time.UTC {
		return "", utc(t)
	}
	t = t.In(zone)
	if repeated(t) {
		return "", utc(t)
	}
	return ";TZID=" + zone.String(), t.Format(localForm)
}

// repeated reports whether t is the second occurrence of its local time:
// within the span after a change that set the clocks back, whose local
// times the period before it showed already.
func repeated(t time.Time) bool {
	onset, _ := t.ZoneBounds()
	if onset.IsZero() {
		return false
	}
	_, offset := t.Zone()
	_, before := onset.Add(-time.Nanosecond).Zone()
	return before > offset && t.Sub(onset) < time.Duration(before-offset)*time.Second
}

// isZoneName reports whether name can stand as a TZID unquoted and names
// a zone of the IANA database (not "Local", nor a fixed zone without a
// name).
func isZoneName(name string) bool {
	if name == "" || name == "Local" {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/_+-", r)) {
			return false
		}
	}
	return true
}

// maxObservances bounds the observances of a VTIMEZONE: an event that
// spans more changes of its zone gets those of its first periods and that
// of its end, which are all its start and end need.
const maxObservances = 8

// timeZone writes the VTIMEZONE of zone for an event from first to last:
// an observance for each period of the zone from the one that holds first
// to the one that holds last, each from its onset (a local time in the
// offset before it) with the offsets before and after, its abbreviation,
// and whether it is daylight saving time. A period that began with the
// zone's records gets the onset 1601-01-01 and no change of offset.
func (w *writer) timeZone(zone *time.Location, first, last time.Time) {
	w.line("BEGIN", "VTIMEZONE")
	w.line("TZID", zone.String())
	t := first.In(zone)
	var prev time.Time // The onset of the observance written last.
	for n := 0; ; {
		onset, end := t.ZoneBounds()
		if !end.IsZero() && !end.After(t) {
			// On the last day of a leap year, in the years Go computes
			// from the zone's rules, ZoneBounds ends the period at the
			// start of that day; it goes on into the next year at least.
			end = time.Date(t.UTC().Year()+1, 1, 1, 0, 0, 0, 0, time.UTC).In(zone)
		}
		if n > 0 && onset.Equal(prev) {
			// The period of the observance written last, reached again
			// past such a day.
			if end.IsZero() || last.Before(end) {
				w.line("END", "VTIMEZONE")
				return
			}
			t = end
			continue
		}
		prev, n = onset, n+1
		abbrev, offset := t.Zone()
		before, since := offset, "16010101T000000"
		if !onset.IsZero() {
			_, before = onset.Add(-time.Nanosecond).Zone()
			since = onset.In(time.FixedZone("", before)).Format(localForm)
		}
		kind := "STANDARD"
		if t.IsDST() {
			kind = "DAYLIGHT"
		}
		w.line("BEGIN", kind)
		w.line("DTSTART", since)
		w.line("TZOFFSETFROM", utcOffset(before))
		w.line("TZOFFSETTO", utcOffset(offset))
		w.line("TZNAME", escape(abbrev))
		w.line("END", kind)
		switch {
		case end.IsZero() || last.Before(end):
			w.line("END", "VTIMEZONE")
			return
		case n == maxObservances-1:
			t = last.In(zone) // Skip to the period of the end.
		default:
			t = end
		}
	}
}

// utcOffset formats an offset in seconds east of UTC as a UTC-OFFSET:
// +hhmm, with seconds only when it has some, and +0000 for none (-0000
// is not allowed).
func utcOffset(seconds int) string {
	sign := "+"
	if seconds < 0 {
		sign, seconds = "-", -seconds
	}
	s := fmt.Sprintf("%s%02d%02d", sign, seconds/3600, seconds/60%60)
	if seconds%60 != 0 {
		s += fmt.Sprintf("%02d", seconds%60)
	}
	return s
}

// cn returns the CN parameter of a person's name, "" for none. A
// parameter value is quoted, so it may hold commas, semicolons and
// colons, but it has no escape for a double quote, nor room for control
// characters: those become a space, as do line breaks.
func cn(name string) string {
	name = strings.Map(func(r rune) rune {
		if r == '"' || isControl(r) {
			return ' '
		}
		return r
	}, name)
	name = strings.Join(strings.Fields(name), " ")
	if name == "" {
		return ""
	}
	return `;CN="` + name + `"`
}

// escape returns s as an iCalendar TEXT value: a backslash, a semicolon
// and a comma escaped with a backslash, every line break (CRLF, LF or CR)
// as \n, and the other control characters, which TEXT cannot hold,
// dropped (a tab stays).
func escape(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\' || r == ';' || r == ',':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n' || r == '\r':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteRune(r)
		case isControl(r):
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isControl reports whether r is a control character (C0, DEL or C1).
func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }

// maxLine is the most octets of a content line before its line break.
const maxLine = 75

// writer builds the content lines.
type writer struct{ bytes.Buffer }

// line writes "name:value" folded: a line longer than maxLine octets goes
// on after CRLF and a space, never inside a UTF-8 sequence.
func (w *writer) line(name, value string) {
	s := name + ":" + value
	room := maxLine
	for len(s) > room {
		cut := room
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		w.WriteString(s[:cut])
		w.WriteString("\r\n ")
		s = s[cut:]
		room = maxLine - 1 // The leading space counts.
	}
	w.WriteString(s)
	w.WriteString("\r\n")
}
