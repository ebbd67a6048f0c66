package engine

import (
	"encoding/json"
	"strconv"
	"time"
)

// The two JSON documents of every reservation, its answer and its outbox
// event's payload, are appended by hand: encoding/json's reflection was a
// sixth of the group committer's own work per reservation when the engine
// built them inside the write transaction, and a store that keeps them as
// JSON still builds them there. The output is byte for byte what json.Marshal
// writes for the same value (TestJSONEncodersMatchMarshal,
// FuzzJSONEncoders).

// appendJSON appends a's JSON encoding, as json.Marshal(a) would write it.
func (a Answer) appendJSON(b []byte) []byte {
	b = append(b, `{"status":`...)
	b = appendJSONString(b, a.Status)
	if a.ReservationID != "" {
		b = append(b, `,"reservation_id":`...)
		b = appendJSONString(b, a.ReservationID)
	}
	if a.HoldID != "" {
		b = append(b, `,"hold_id":`...)
		b = appendJSONString(b, a.HoldID)
	}
	if a.DeliveryID != "" {
		b = append(b, `,"delivery_id":`...)
		b = appendJSONString(b, a.DeliveryID)
	}
	if a.EntryID != "" {
		b = append(b, `,"entry_id":`...)
		b = appendJSONString(b, a.EntryID)
	}
	b = append(b, `,"workshop":`...)
	b = appendJSONString(b, a.Workshop)
	b = append(b, `,"quantity":`...)
	b = strconv.AppendInt(b, int64(a.Quantity), 10)
	if a.Position != 0 {
		b = append(b, `,"position":`...)
		b = strconv.AppendInt(b, int64(a.Position), 10)
	}
	if !a.ExpiresAt.IsZero() {
		b = append(b, `,"expires_at":"`...)
		b = a.ExpiresAt.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	if a.Status == StatusLimitReached {
		b = append(b, `,"max_per_person":`...)
		b = strconv.AppendInt(b, int64(a.Limit.MaxPerPerson), 10)
		b = append(b, `,"already":`...)
		b = strconv.AppendInt(b, int64(a.Limit.Already), 10)
	}
	return append(b, '}')
}

// appendJSON appends p's JSON encoding, as json.Marshal(p) would write it.
// It falls back to json.Marshal for a time json cannot encode as RFC 3339
// (a year outside 0–9999, a zone offset of a day or more), to fail the same
// way.
func (p EventPayload) appendJSON(b []byte) ([]byte, error) {
	if !plainTime(p.At) {
		raw, err := json.Marshal(p)
		return append(b, raw...), err
	}
	b = append(b, `{"id":`...)
	b = appendJSONString(b, p.ID)
	b = append(b, `,"type":`...)
	b = appendJSONString(b, p.Type)
	if p.ReservationID != "" {
		b = append(b, `,"reservation_id":`...)
		b = appendJSONString(b, p.ReservationID)
	}
	if p.HoldID != "" {
		b = append(b, `,"hold_id":`...)
		b = appendJSONString(b, p.HoldID)
	}
	b = append(b, `,"owner":`...)
	b = appendJSONString(b, p.Owner)
	b = append(b, `,"actor":`...)
	b = appendJSONString(b, p.Actor)
	b = append(b, `,"operation":`...)
	b = appendJSONString(b, string(p.Operation))
	b = append(b, `,"workshop":`...)
	b = appendJSONString(b, p.Workshop)
	b = append(b, `,"quantity":`...)
	b = strconv.AppendInt(b, int64(p.Quantity), 10)
	b = append(b, `,"at":"`...)
	b = p.At.AppendFormat(b, time.RFC3339Nano)
	return append(b, `"}`...), nil
}

// plainTime reports whether json encodes t as RFC 3339 (a year from 0 to
// 9999, a zone offset of less than a day).
func plainTime(t time.Time) bool {
	_, offset := t.Zone()
	y := t.Year()
	return y >= 0 && y <= 9999 && offset > -24*60*60 && offset < 24*60*60
}

// appendJSONString appends s as a JSON string. Printable ASCII that
// encoding/json leaves alone is copied; anything else (quotes, backslashes,
// control characters, HTML's <, > and &, non-ASCII) goes through
// json.Marshal, so the escaping is exactly its own.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			raw, _ := json.Marshal(s) // A string always encodes.
			return append(b, raw...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
