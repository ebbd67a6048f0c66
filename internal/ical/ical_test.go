package ical_test

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	goical "github.com/emersion/go-ical"

	"github.com/reserve/reserve/internal/ical"
)

var berlin, _ = time.LoadLocation("Europe/Berlin")

func request() ical.Calendar {
	return ical.Calendar{
		ProdID: "-//reserve//reserved//EN",
		Method: ical.MethodRequest,
		Event: ical.Event{
			UID:         "0190aabbccddeeff0011223344556677@example.org",
			Stamp:       time.Date(2026, 2, 1, 8, 30, 0, 123, time.UTC),
			Start:       time.Date(2026, 3, 2, 9, 0, 0, 0, berlin),
			End:         time.Date(2026, 3, 2, 12, 30, 0, 0, berlin),
			Summary:     "Töpfern, Glasieren; Brennen \\ mit Anna",
			Location:    "Werkstatt 3, Hinterhof; Eingang B",
			Description: "Erste Zeile\r\nzweite Zeile, mit Komma\nund ein sehr langer Satz über Öfen, Glasuren und Ton — der ganz sicher weit über fünfundsiebzig Oktette hinausreicht, damit gefaltet wird: äöüß€😀😀😀😀😀😀😀😀😀😀😀😀",
			Status:      ical.StatusConfirmed,
			Organizer:   ical.Person{Name: `Reserve "Bot"`, Address: "reserve@example.org"},
			Attendee:    ical.Person{Name: "Jörg Müller; Kurs, A", Address: "joerg@example.org"},
			URL:         "https://reserve.example.org/",
		},
	}
}

// decode parses raw with a real iCalendar parser and returns its one
// event, failing the test unless raw is a well-formed calendar object
// that the parser also encodes again (which checks the components'
// required properties).
func decode(t *testing.T, raw []byte) (*goical.Calendar, goical.Event) {
	t.Helper()
	cal, err := goical.NewDecoder(bytes.NewReader(raw)).Decode()
	if err != nil {
		t.Fatalf("parse the calendar: %v\n%s", err, raw)
	}
	if err := goical.NewEncoder(new(bytes.Buffer)).Encode(cal); err != nil {
		t.Fatalf("the parsed calendar is not valid: %v\n%s", err, raw)
	}
	evs := cal.Events()
	if len(evs) != 1 {
		t.Fatalf("%d events, want 1", len(evs))
	}
	return cal, evs[0]
}

func text(t *testing.T, ev goical.Event, name string) string {
	t.Helper()
	p := ev.Props.Get(name)
	if p == nil {
		t.Fatalf("no %s", name)
	}
	s, err := p.Text()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

// A request round-trips through a real parser: the tricky texts
// (commas, semicolons, backslashes, line breaks of every kind, characters
// of several octets) come back as they were, with CRLF line breaks as LF;
// the times are the instants given, in UTC; names with quotes and
// semicolons stay one parameter.
func TestRequestRoundTrips(t *testing.T) {
	c := request()
	raw, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	cal, ev := decode(t, raw)
	if m := cal.Props.Get("METHOD"); m == nil || m.Value != "REQUEST" {
		t.Errorf("METHOD = %v", m)
	}
	if v := cal.Props.Get("VERSION"); v == nil || v.Value != "2.0" {
		t.Errorf("VERSION = %v", v)
	}
	if got := text(t, ev, "SUMMARY"); got != c.Event.Summary {
		t.Errorf("SUMMARY = %q, want %q", got, c.Event.Summary)
	}
	if got := text(t, ev, "LOCATION"); got != c.Event.Location {
		t.Errorf("LOCATION = %q", got)
	}
	if got, want := text(t, ev, "DESCRIPTION"), strings.ReplaceAll(c.Event.Description, "\r\n", "\n"); got != want {
		t.Errorf("DESCRIPTION = %q, want %q", got, want)
	}
	if got := text(t, ev, "UID"); got != c.Event.UID {
		t.Errorf("UID = %q", got)
	}
	start, err := ev.DateTimeStart(nil)
	if err != nil || !start.Equal(c.Event.Start) {
		t.Errorf("DTSTART = %v, %v; want %v", start, err, c.Event.Start)
	}
	end, err := ev.DateTimeEnd(nil)
	if err != nil || !end.Equal(c.Event.End) {
		t.Errorf("DTEND = %v, %v; want %v", end, err, c.Event.End)
	}
	if p := ev.Props.Get("DTSTART"); p.Value != "20260302T080000Z" || p.Params.Get("TZID") != "" {
		t.Errorf("DTSTART is %q (TZID %q), want the UTC form", p.Value, p.Params.Get("TZID"))
	}
	if p := ev.Props.Get("DTSTAMP"); p.Value != "20260201T083000Z" {
		t.Errorf("DTSTAMP = %q", p.Value)
	}
	if s, err := ev.Status(); err != nil || s != goical.EventConfirmed {
		t.Errorf("STATUS = %v, %v", s, err)
	}
	if seq, err := ev.Props.Get("SEQUENCE").Int(); err != nil || seq != 0 {
		t.Errorf("SEQUENCE = %d, %v", seq, err)
	}
	org := ev.Props.Get("ORGANIZER")
	if org.Value != "mailto:reserve@example.org" || org.Params.Get("CN") != "Reserve Bot" {
		t.Errorf("ORGANIZER = %q CN %q", org.Value, org.Params.Get("CN"))
	}
	att := ev.Props.Get("ATTENDEE")
	if att.Value != "mailto:joerg@example.org" || att.Params.Get("CN") != "Jörg Müller; Kurs, A" || att.Params.Get("PARTSTAT") != "ACCEPTED" {
		t.Errorf("ATTENDEE = %q %v", att.Value, att.Params)
	}
}

// Every line ends with CRLF, none is longer than 75 octets, and none is
// cut inside a character: each line is valid UTF-8 by itself.
func TestLinesAreFoldedSafely(t *testing.T) {
	c := request()
	c.Event.Summary = strings.Repeat("ü", 100)          // Two octets each, odd offsets after "SUMMARY:".
	c.Event.Location = strings.Repeat("a€", 60)         // Three octets.
	c.Event.Description = strings.Repeat("😀,;\\\n", 40) // Four octets, and escapes.
	raw, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(raw, []byte("END:VCALENDAR\r\n")) {
		t.Errorf("the object does not end with END:VCALENDAR and CRLF")
	}
	lines := strings.Split(strings.TrimSuffix(string(raw), "\r\n"), "\r\n")
	folded := 0
	for i, l := range lines {
		if strings.ContainsAny(l, "\r\n") {
			t.Errorf("line %d holds a bare line break: %q", i, l)
		}
		if len(l) > 75 {
			t.Errorf("line %d has %d octets: %q", i, len(l), l)
		}
		if !utf8.ValidString(l) {
			t.Errorf("line %d is cut inside a character: %q", i, l)
		}
		if strings.HasPrefix(l, " ") {
			folded++
		}
	}
	if folded < 10 {
		t.Errorf("only %d continuation lines; the long values were not folded", folded)
	}
	_, ev := decode(t, raw)
	for name, want := range map[string]string{"SUMMARY": c.Event.Summary, "LOCATION": c.Event.Location, "DESCRIPTION": c.Event.Description} {
		if got := text(t, ev, name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
}

// A cancellation has METHOD:CANCEL, STATUS:CANCELLED and its higher
// SEQUENCE, and needs no start; control characters other than line
// breaks and tabs are dropped from text, which cannot hold them.
func TestCancel(t *testing.T) {
	c := request()
	c.Method, c.Event.Status, c.Event.Sequence = ical.MethodCancel, ical.StatusCancelled, 1
	c.Event.Start, c.Event.End = time.Time{}, time.Time{}
	c.Event.Summary = "bell\x07 and\x00 escape\x1b[31m\ttab"
	raw, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	cal, ev := decode(t, raw)
	if m := cal.Props.Get("METHOD"); m.Value != "CANCEL" {
		t.Errorf("METHOD = %q", m.Value)
	}
	if s, _ := ev.Status(); s != goical.EventCancelled {
		t.Errorf("STATUS = %v", s)
	}
	if seq, _ := ev.Props.Get("SEQUENCE").Int(); seq != 1 {
		t.Errorf("SEQUENCE = %d", seq)
	}
	if ev.Props.Get("DTSTART") != nil {
		t.Errorf("a cancellation without a start has a DTSTART")
	}
	if got := text(t, ev, "SUMMARY"); got != "bell and escape[31m\ttab" {
		t.Errorf("SUMMARY = %q", got)
	}
}

// What a method requires is checked, and a value that would break a line
// is refused.
func TestEncodeRefuses(t *testing.T) {
	for name, change := range map[string]func(*ical.Calendar){
		"unknown method":      func(c *ical.Calendar) { c.Method = "PUBLISH" },
		"no UID":              func(c *ical.Calendar) { c.Event.UID = "" },
		"no stamp":            func(c *ical.Calendar) { c.Event.Stamp = time.Time{} },
		"no attendee":         func(c *ical.Calendar) { c.Event.Attendee.Address = "" },
		"no organizer":        func(c *ical.Calendar) { c.Event.Organizer.Address = "" },
		"request no start":    func(c *ical.Calendar) { c.Event.Start, c.Event.End = time.Time{}, time.Time{} },
		"end before start":    func(c *ical.Calendar) { c.Event.End = c.Event.Start },
		"line break in UID":   func(c *ical.Calendar) { c.Event.UID = "a\r\nATTENDEE:mailto:x@example.org" },
		"line break in mail":  func(c *ical.Calendar) { c.Event.Attendee.Address = "a@example.org\nX:y" },
		"negative sequence":   func(c *ical.Calendar) { c.Event.Sequence = -1 },
		"line break in prod":  func(c *ical.Calendar) { c.ProdID = "x\ny" },
		"line break in URL":   func(c *ical.Calendar) { c.Event.URL = "https://x.org/\r\nX:y" },
		"line break in state": func(c *ical.Calendar) { c.Event.Status = "CONFIRMED\r\nX:y" },
	} {
		c := request()
		change(&c)
		if raw, err := c.Encode(); err == nil {
			t.Errorf("%s: encoded\n%s", name, raw)
		}
	}
}
