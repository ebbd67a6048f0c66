package engine

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// checkJSONEncoders fails unless the hand-written encoders write exactly
// what json.Marshal writes for an answer and an event built from the
// strings s1, s2, the number n and the time at.
func checkJSONEncoders(t *testing.T, s1, s2 string, n int, at time.Time) {
	t.Helper()
	for _, a := range []Answer{
		{Status: s1, ReservationID: s2, Workshop: s1, Quantity: n},
		{Status: s2, Workshop: s1, Quantity: -n}, // No reservation id: omitted.
	} {
		want, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.appendJSON([]byte("prefix")); !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Fatalf("Answer %+v:\n got %s\nwant prefix%s", a, got, want)
		}
	}
	p := EventPayload{ID: s1, Type: s2, ReservationID: s1, Owner: s2, Actor: s1, Operation: OperationKey(s2), Workshop: s1, Quantity: n, At: at}
	want, wantErr := json.Marshal(p)
	got, err := p.appendJSON(nil)
	if (err != nil) != (wantErr != nil) || (err == nil && !bytes.Equal(got, want)) {
		t.Fatalf("EventPayload %+v:\n got %s, %v\nwant %s, %v", p, got, err, want, wantErr)
	}
}

func TestJSONEncodersMatchMarshal(t *testing.T) {
	at := time.Date(2026, 11, 30, 4, 5, 6, 789000000, time.UTC)
	for _, s := range []string{
		"", "reserved", "workshop-demo", "unix-alice", "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
		`quote " and backslash \`, "tab\tnewline\n\x00\x1f\x7f", "<script>&amp;</script>",
		"Grüße, 日本", "\u2028\u2029", "bad utf-8 \xff\xfe", "~ }{ ][ printable ASCII !#$%'()*+,-./:;=?@^_`|",
	} {
		checkJSONEncoders(t, s, "x"+s, 3, at)
	}
	for _, n := range []int{0, 1, -1, 1 << 40, -1 << 62} {
		checkJSONEncoders(t, "a", "b", n, at)
	}
	for _, tm := range []time.Time{
		{}, at.Truncate(time.Second), at.Add(123), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		at.In(time.FixedZone("CET", 3600)), at.In(time.FixedZone("far", 24*60*60)), at.In(time.FixedZone("far west", -24*60*60-60)),
	} {
		checkJSONEncoders(t, "a", "b", 1, tm)
	}
}

func FuzzJSONEncoders(f *testing.F) {
	f.Add("reserved", "workshop-demo", 2, int64(1764475506789000000))
	f.Add("a\"b\\c<d>&e", "\x00\xff\u2028", -7, int64(0))
	f.Fuzz(func(t *testing.T, s1, s2 string, n int, unixNano int64) {
		checkJSONEncoders(t, s1, s2, n, time.Unix(0, unixNano).UTC())
	})
}
