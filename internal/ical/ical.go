// Package ical writes the iCalendar objects (RFC 5545) that mails carry
// as invitations (iMIP, RFC 6047): one VCALENDAR with a METHOD (REQUEST
// to put an event into the recipient's calendar, CANCEL to take it out)
// and one VEVENT, its text escaped, its lines folded at 75 octets on
// character boundaries, every line ended by CRLF.
//
// Times are written in UTC ("Z"), never with a TZID: a TZID needs a
// VTIMEZONE that spells the zone's offset rules, which the standard
// library does not expose and which clients match against their own zone
// tables with different results, while an instant in UTC means the same
// to every client, which shows it in the reader's own zone. A single
// event, never repeated, loses nothing by it.
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
	Summary    string
	Location   string
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
	w.line("BEGIN", "VEVENT")
	w.line("UID", escape(ev.UID))
	w.line("SEQUENCE", fmt.Sprint(ev.Sequence))
	w.line("DTSTAMP", utc(ev.Stamp))
	if !ev.Start.IsZero() {
		w.line("DTSTART", utc(ev.Start))
	}
	if !ev.End.IsZero() {
		w.line("DTEND", utc(ev.End))
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
