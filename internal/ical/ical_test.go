package ical_test

import (
	"bytes"
	"fmt"
	"slices"
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
		"local zone":          func(c *ical.Calendar) { c.Event.TimeZone = time.Local },
		"zone without a name": func(c *ical.Calendar) { c.Event.TimeZone = time.FixedZone("", 3600) },
		"zone name to quote":  func(c *ical.Calendar) { c.Event.TimeZone = time.FixedZone("A;B", 3600) },
	} {
		c := request()
		change(&c)
		if raw, err := c.Encode(); err == nil {
			t.Errorf("%s: encoded\n%s", name, raw)
		}
	}
}

// zoned is an event of the request in a time zone, and what its
// calendar must say: the local times of DTSTART and DTEND (with a "Z"
// for one written in UTC), and the UTC-OFFSET each is in.
type zoned struct {
	name               string
	zone               string
	start, end         time.Time
	localStart, offset string // DTSTART's value and TZOFFSETTO.
	localEnd, endOff   string
}

func zonedCases(t *testing.T) []zoned {
	t.Helper()
	in := func(name string) *time.Location {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		return loc
	}
	ny, kolkata := in("America/New_York"), in("Asia/Kolkata")
	return []zoned{
		// Clocks go back from 03:00 CEST to 02:00 CET on 25 October 2026.
		{"Berlin across the change back", "Europe/Berlin",
			time.Date(2026, 10, 24, 18, 0, 0, 0, berlin), time.Date(2026, 10, 25, 12, 0, 0, 0, berlin),
			"20261024T180000", "+0200", "20261025T120000", "+0100"},
		// Clocks go forward from 02:00 EST to 03:00 EDT on 8 March 2026.
		{"New York across the change forward", "America/New_York",
			time.Date(2026, 3, 7, 20, 0, 0, 0, ny), time.Date(2026, 3, 8, 10, 30, 0, 0, ny),
			"20260307T200000", "-0500", "20260308T103000", "-0400"},
		{"Kolkata, half an hour", "Asia/Kolkata",
			time.Date(2026, 1, 15, 10, 0, 0, 0, kolkata), time.Date(2026, 1, 15, 13, 30, 0, 0, kolkata),
			"20260115T100000", "+0530", "20260115T133000", "+0530"},
		// 02:30 comes twice on 25 October 2026 in Berlin: the second
		// (01:30 UTC) cannot be named by a TZID, which means the first.
		{"Berlin in the repeated hour", "Europe/Berlin",
			time.Date(2026, 10, 25, 1, 30, 0, 0, time.UTC), time.Date(2026, 10, 25, 4, 0, 0, 0, berlin),
			"20261025T013000Z", "", "20261025T040000", "+0100"},
		// Eleven changes: the VTIMEZONE is bounded and still places both.
		{"Berlin over years", "Europe/Berlin",
			time.Date(2026, 1, 10, 9, 0, 0, 0, berlin), time.Date(2031, 7, 1, 17, 0, 0, 0, berlin),
			"20260110T090000", "+0100", "20310701T170000", "+0200"},
		// Liberia's offset had seconds until 1972.
		{"Monrovia, an offset with seconds", "Africa/Monrovia",
			time.Date(1971, 6, 1, 10, 0, 0, 0, in("Africa/Monrovia")), time.Date(1971, 6, 1, 12, 0, 0, 0, in("Africa/Monrovia")),
			"19710601T100000", "-004430", "19710601T120000", "-004430"},
		{"UTC", "UTC",
			time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC), time.Date(2026, 6, 1, 11, 0, 0, 0, time.UTC),
			"20260601T090000Z", "", "20260601T110000Z", ""},
	}
}

// An event in a time zone has DTSTART and DTEND as local times with the
// zone's TZID, and a VTIMEZONE of that TZID whose observances place
// both at the very instants the event had, as a client that reads the
// VTIMEZONE computes them (and as one that knows the zone by name, the
// parser, does); the instant written in UTC before is the same. A
// request and a cancellation alike; UTC stays UTC, without a VTIMEZONE.
func TestTimesInTheWorkshopsZone(t *testing.T) {
	for _, z := range zonedCases(t) {
		for _, method := range []string{ical.MethodRequest, ical.MethodCancel} {
			t.Run(z.name+" "+method, func(t *testing.T) {
				c := request()
				c.Method, c.Event.Sequence = method, 1
				c.Event.Start, c.Event.End = z.start, z.end
				c.Event.TimeZone, _ = time.LoadLocation(z.zone)
				raw, err := c.Encode()
				if err != nil {
					t.Fatal(err)
				}
				cal, ev := decode(t, raw)
				zones := timezones(t, cal)
				for _, p := range []struct {
					name, local, offset string
					at                  time.Time
				}{{"DTSTART", z.localStart, z.offset, z.start}, {"DTEND", z.localEnd, z.endOff, z.end}} {
					prop := ev.Props.Get(p.name)
					if prop.Value != p.local {
						t.Errorf("%s = %q, want %q\n%s", p.name, prop.Value, p.local, raw)
					}
					wantTZID := z.zone
					if strings.HasSuffix(p.local, "Z") {
						wantTZID = ""
					}
					if tzid := prop.Params.Get("TZID"); tzid != wantTZID {
						t.Errorf("%s has TZID %q, want %q", p.name, tzid, wantTZID)
					}
					got, offset := resolve(t, zones, prop)
					if !got.Equal(p.at) || offset != p.offset {
						t.Errorf("%s %s: the VTIMEZONE places it at %v with offset %q, want %v (%s) with %q\n%s",
							p.name, prop.Value, got.UTC(), offset, p.at.UTC(), p.at, p.offset, raw)
					}
					if byName, err := prop.DateTime(nil); err != nil || !byName.Equal(p.at) {
						t.Errorf("%s by the zone's name: %v, %v; want %v", p.name, byName, err, p.at)
					}
				}
				if z.zone == "UTC" && len(zones) != 0 {
					t.Errorf("an event in UTC has a VTIMEZONE:\n%s", raw)
				}
				if z.zone != "UTC" && len(zones[z.zone]) == 0 {
					t.Errorf("no VTIMEZONE %s:\n%s", z.zone, raw)
				}
				if n := len(zones[z.zone]); n > 8 {
					t.Errorf("%d observances", n)
				}
			})
		}
	}
}

// The observances of Berlin around an event across the change back:
// summer time since its onset in March, standard time from 03:00 CEST on
// 25 October.
func TestObservancesOfBerlin(t *testing.T) {
	c := request()
	c.Event.Start, c.Event.End = zonedCases(t)[0].start, zonedCases(t)[0].end
	c.Event.TimeZone = berlin
	raw, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"BEGIN:VTIMEZONE", "TZID:Europe/Berlin",
		"BEGIN:DAYLIGHT", "DTSTART:20260329T020000", "TZOFFSETFROM:+0100", "TZOFFSETTO:+0200", "TZNAME:CEST", "END:DAYLIGHT",
		"BEGIN:STANDARD", "DTSTART:20261025T030000", "TZOFFSETFROM:+0200", "TZOFFSETTO:+0100", "TZNAME:CET", "END:STANDARD",
		"END:VTIMEZONE", "BEGIN:VEVENT",
	}, "\r\n")
	if !bytes.Contains(raw, []byte(want)) {
		t.Errorf("the calendar lacks\n%s\n\n%s", want, raw)
	}
}

// observance is a STANDARD or DAYLIGHT of a VTIMEZONE, read.
type observance struct {
	onset    time.Time // The instant it begins.
	to       time.Duration
	toString string
}

// timezones returns the observances of each VTIMEZONE of cal by TZID,
// by onset.
func timezones(t *testing.T, cal *goical.Calendar) map[string][]observance {
	t.Helper()
	zones := map[string][]observance{}
	for _, comp := range cal.Children {
		if comp.Name != goical.CompTimezone {
			continue
		}
		id := comp.Props.Get(goical.PropTimezoneID).Value
		if zones[id] != nil {
			t.Errorf("two VTIMEZONEs %s", id)
		}
		var obs []observance
		for _, o := range comp.Children {
			if o.Name != goical.CompTimezoneStandard && o.Name != goical.CompTimezoneDaylight {
				t.Fatalf("VTIMEZONE %s holds a %s", id, o.Name)
			}
			from := utcOffset(t, o.Props.Get(goical.PropTimezoneOffsetFrom).Value)
			to := o.Props.Get(goical.PropTimezoneOffsetTo).Value
			wall, err := time.Parse("20060102T150405", o.Props.Get(goical.PropDateTimeStart).Value)
			if err != nil {
				t.Fatalf("observance DTSTART: %v", err)
			}
			obs = append(obs, observance{onset: wall.Add(-from), to: utcOffset(t, to), toString: to})
		}
		slices.SortFunc(obs, func(a, b observance) int { return a.onset.Compare(b.onset) })
		zones[id] = obs
	}
	return zones
}

// utcOffset parses a UTC-OFFSET: ±hhmm[ss].
func utcOffset(t *testing.T, s string) time.Duration {
	t.Helper()
	if len(s) != 5 && len(s) != 7 || s[0] != '+' && s[0] != '-' || s == "-0000" {
		t.Fatalf("UTC-OFFSET %q", s)
	}
	var h, m, sec int
	fmt.Sscanf(s[1:3]+" "+s[3:5], "%d %d", &h, &m)
	if len(s) == 7 {
		fmt.Sscanf(s[5:], "%d", &sec)
	}
	d := time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(sec)*time.Second
	if s[0] == '-' {
		d = -d
	}
	return d
}

// resolve places a DATE-TIME property as a client that reads the
// VTIMEZONE does: a UTC time is that instant; a local time L with a
// TZID is L less the offset of the observance in force then, the first
// occurrence where the local time comes twice. It returns the instant
// and that offset ("" for UTC).
func resolve(t *testing.T, zones map[string][]observance, p *goical.Prop) (time.Time, string) {
	t.Helper()
	if strings.HasSuffix(p.Value, "Z") {
		at, err := time.Parse("20060102T150405Z", p.Value)
		if err != nil {
			t.Fatal(err)
		}
		return at, ""
	}
	tzid := p.Params.Get("TZID")
	obs := zones[tzid]
	if len(obs) == 0 {
		t.Fatalf("%s names TZID %q, which no VTIMEZONE defines", p.Name, tzid)
	}
	wall, err := time.Parse("20060102T150405", p.Value)
	if err != nil {
		t.Fatal(err)
	}
	var at time.Time
	offset := ""
	for i, o := range obs {
		c := wall.Add(-o.to)
		if c.Before(o.onset) || i+1 < len(obs) && !c.Before(obs[i+1].onset) {
			continue // Not a time of this observance.
		}
		if at.IsZero() || c.Before(at) {
			at, offset = c, o.toString
		}
	}
	if at.IsZero() {
		t.Fatalf("%s %s is in no observance of %s", p.Name, p.Value, tzid)
	}
	return at, offset
}
