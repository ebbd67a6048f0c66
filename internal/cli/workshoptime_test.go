package cli

import (
	"strings"
	"testing"
	"time"
)

// TestParseFlagTimeRefusesLocalTimesAClockChangeSkipsOrRepeats checks that
// a date and time of day read in a time zone names exactly one instant: one
// that the clock skips when it springs forward is refused, and so is one it
// shows twice when it falls back, instead of being silently read as another
// time or as one of the two.
func TestParseFlagTimeRefusesLocalTimesAClockChangeSkipsOrRepeats(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		value, want string
	}{
		{"2027-03-28 02:30", "does not exist"},
		{"2027-03-28T02:00:00", "does not exist"},
		{"2027-10-31 02:30", "twice"},
		{"2027-10-31 02:00", "twice"},
	} {
		at, err := parseFlagTime("--starts", c.value, berlin)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--starts") {
			t.Errorf("parseFlagTime(%q) = %v, %v; want a usage error saying it %s", c.value, at, err, c.want)
		}
	}
	for value, want := range map[string]string{
		"2027-03-28 01:59":    "2027-03-28T00:59:00Z",
		"2027-03-28 03:00":    "2027-03-28T01:00:00Z",
		"2027-10-31 01:59:59": "2027-10-30T23:59:59Z",
		"2027-10-31 03:00":    "2027-10-31T02:00:00Z",
		"2027-07-01T10:00":    "2027-07-01T08:00:00Z",
	} {
		at, err := parseFlagTime("--starts", value, berlin)
		if err != nil || at.UTC().Format(time.RFC3339) != want {
			t.Errorf("parseFlagTime(%q) = %v, %v; want %s", value, at, err, want)
		}
	}
}
