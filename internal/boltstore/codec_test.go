package boltstore

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

func sampleReceipt() engine.Receipt {
	req := engine.Request{Workshop: "go-basics", Quantity: 2}
	return engine.Receipt{
		Actor: "unix-alice", OperationKey: "f47ac10b-58cc-4372-a567-0e02b2c3d479",
		FingerprintVersion: engine.FingerprintVersion, Fingerprint: engine.Fingerprint(req), Request: req,
		HTTPStatus: 201, ReservationID: "0192f0a1b2c3d4e5f60718293a4b5c6d",
		Body:      []byte(`{"status":"reserved","reservation_id":"0192f0a1b2c3d4e5f60718293a4b5c6d","workshop":"go-basics","quantity":2}`),
		CreatedAt: time.Date(2026, 11, 29, 12, 0, 0, 123456789, time.UTC),
	}
}

func TestReceiptRoundTrip(t *testing.T) {
	// Receipts whose body is the answer the engine builds are stored with
	// the answer's status only (format 2), any other body as it is (1).
	for _, tc := range []struct {
		r      engine.Receipt
		format byte
	}{
		{sampleReceipt(), recordReceiptStatus},
		{func() engine.Receipt {
			r := sampleReceipt()
			r.HTTPStatus, r.ReservationID = 409, ""
			r.Body = []byte(`{"status":"unavailable","workshop":"go-basics","quantity":2}`)
			r.CreatedAt = time.Unix(0, 0).UTC()
			return r
		}(), recordReceiptStatus},
		{func() engine.Receipt {
			r := sampleReceipt()
			r.Body = []byte(`{"status":"reserved","reservation_id":"someone else's","workshop":"go-basics","quantity":2}`)
			return r
		}(), recordFormat1},
		{func() engine.Receipt {
			r := sampleReceipt()
			r.Body = []byte(`{"workshop":"go-basics","status":"reserved"}`)
			return r
		}(), recordFormat1},
	} {
		encode := func(r engine.Receipt) []byte {
			raw, err := encodeReceipt(r)
			if err != nil {
				t.Fatal(err)
			}
			return raw
		}
		if raw := encode(tc.r); raw[0] != tc.format {
			t.Errorf("receipt with body %s stored as format %d, want %d", tc.r.Body, raw[0], tc.format)
		}
		checkRoundTrip(t, receiptKey(tc.r.Actor, tc.r.OperationKey), tc.r, encode, decodeReceipt)
	}
	if _, err := decodeReceipt([]byte("no-separator"), nil); err == nil {
		t.Fatal("receipt key without separator decoded")
	}
	bad := sampleReceipt()
	bad.Fingerprint = "xyz"
	if _, err := encodeReceipt(bad); err == nil {
		t.Fatal("receipt with a bad fingerprint encoded")
	}
}

func TestReservationRoundTrip(t *testing.T) {
	r := engine.Reservation{ID: "0192f0a1b2c3d4e5f60718293a4b5c6d", Actor: "unix-alice", OperationKey: "f47ac10b-58cc-4372-a567-0e02b2c3d479",
		Workshop: "go-basics", Quantity: 2, CreatedAt: time.Date(2026, 11, 29, 12, 0, 0, 1, time.UTC)}
	checkRoundTrip(t, []byte(r.ID), r, encodeReservation, decodeReservation)
	r.CancelledAt, r.CancelledBy, r.CancelOperation = r.CreatedAt.Add(time.Hour), "unix-root", "0b7f1c2a-58cc-4372-a567-0e02b2c3d479"
	checkRoundTrip(t, []byte(r.ID), r, encodeReservation, decodeReservation)
}

func FuzzDecodeReceipt(f *testing.F) {
	raw, err := encodeReceipt(sampleReceipt())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw) // Format 2: the answer's status.
	own := sampleReceipt()
	own.Body = []byte(`{"status":"reserved"}`)
	if raw, err = encodeReceipt(own); err != nil || raw[0] != recordFormat1 {
		f.Fatalf("format %d, %v", raw[0], err)
	}
	f.Add(raw) // Format 1: the body as it is.
	f.Add([]byte{recordFormat1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := decodeReceipt([]byte("a\x00k"), raw)
		if err != nil {
			return
		}
		again, err := encodeReceipt(r)
		if err == nil && !bytes.Equal(again, raw) {
			// Varints have one canonical form when encoded, so a decodable
			// non-canonical input may re-encode differently; it must still
			// decode to the same receipt.
			r2, err := decodeReceipt([]byte("a\x00k"), again)
			if err != nil || !reflect.DeepEqual(r, r2) {
				t.Fatalf("re-encoding changed the receipt: %+v vs %+v (%v)", r, r2, err)
			}
		}
	})
}

// checkRoundTrip encodes v, decodes it under key and wants v back; every
// truncation of the record and a trailing byte must be errors.
func checkRoundTrip[T any](t *testing.T, key []byte, v T, encode func(T) []byte, decode func(k, raw []byte) (T, error)) {
	t.Helper()
	raw := encode(v)
	got, err := decode(key, raw)
	if err != nil || !reflect.DeepEqual(got, v) {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, v)
	}
	for n := range raw {
		if _, err := decode(key, raw[:n]); err == nil {
			t.Fatalf("record truncated to %d of %d bytes decoded without error", n, len(raw))
		}
	}
	if _, err := decode(key, append(raw, 0)); err == nil {
		t.Fatal("record with a trailing byte decoded without error")
	}
}

func TestWorkshopRoundTrip(t *testing.T) {
	for _, w := range []engine.Workshop{
		{ID: "go-basics", Title: "Go basics — für alle", Capacity: 30, Reserved: 12, MaxQuantity: 4, Version: 7},
		{ID: "empty", Capacity: 0, Reserved: 0, MaxQuantity: 1, Version: 1},
		{ID: "broken", Capacity: 2, Reserved: -3, MaxQuantity: 1, Version: 1 << 40}, // Check must see it as stored.
	} {
		checkRoundTrip(t, []byte(w.ID), w, encodeWorkshop, decodeWorkshop)
	}
	// A workshop written as JSON before the binary layout still reads.
	old := []byte(`{"id":"go-basics","title":"Go basics","capacity":30,"reserved":12,"max_quantity":4,"version":7}`)
	w, err := decodeWorkshop([]byte("go-basics"), old)
	want := engine.Workshop{ID: "go-basics", Title: "Go basics", Capacity: 30, Reserved: 12, MaxQuantity: 4, Version: 7}
	if err != nil || w != want {
		t.Fatalf("JSON workshop = %+v, %v; want %+v", w, err, want)
	}
}

func TestEventRoundTrip(t *testing.T) {
	e := engine.Event{ID: "0192f0a1b2c3d4e5f60718293a4b5c6d", Type: engine.EventReserved, ReservationID: "0192f0a1b2c3d4e5f60718293a4b5c6e",
		Actor: "unix-alice", OperationKey: "f47ac10b-58cc-4372-a567-0e02b2c3d479", Payload: []byte(`{"id":"x"}`),
		CreatedAt: time.Date(2026, 11, 29, 12, 0, 0, 1, time.UTC)}
	checkRoundTrip(t, []byte(e.ID), e, encodeEvent, decodeEvent)
	e.DeliveredAt = e.CreatedAt.Add(time.Second)
	checkRoundTrip(t, []byte(e.ID), e, encodeEvent, decodeEvent)
	// An event written as JSON before the binary layout still reads (the
	// record as the earlier version wrote it, payload in base64).
	old := []byte(`{"id":"0192f0a1b2c3d4e5f60718293a4b5c6d","type":"reservation.confirmed","reservation_id":"0192f0a1b2c3d4e5f60718293a4b5c6e",` +
		`"actor":"unix-alice","operation":"f47ac10b-58cc-4372-a567-0e02b2c3d479","payload":"eyJpZCI6IngifQ==",` +
		`"created_at":"2026-11-29T12:00:00.000000001Z","delivered_at":"2026-11-29T12:00:01.000000001Z"}`)
	got, err := decodeEvent([]byte(e.ID), old)
	if err != nil || !reflect.DeepEqual(got, e) {
		t.Fatalf("JSON event = %+v, %v; want %+v", got, err, e)
	}
}

// TestEventMembersRecord: an event as the engine makes it, whose payload is
// built from its members, is stored as the members alone (format 2) and
// read back with the same payload; an event whose payload is anything else
// keeps its payload (format 1).
func TestEventMembersRecord(t *testing.T) {
	e := engine.Event{ID: "0192f0a1b2c3d4e5f60718293a4b5c6d", Type: engine.EventCancelled, ReservationID: "0192f0a1b2c3d4e5f60718293a4b5c6e",
		Owner: "unix-bob", Actor: "unix-alice", OperationKey: "f47ac10b-58cc-4372-a567-0e02b2c3d479", Workshop: "go-basics", Quantity: 2,
		CreatedAt: time.Date(2026, 11, 29, 12, 0, 0, 1, time.UTC)}
	var err error
	if e.Payload, err = e.BuildPayload(); err != nil {
		t.Fatal(err)
	}
	for _, delivered := range []time.Time{{}, e.CreatedAt.Add(time.Second)} {
		e.DeliveredAt = delivered
		raw := encodeEvent(e)
		if raw[0] != recordEventMembers || bytes.Contains(raw, []byte(`"owner"`)) {
			t.Fatalf("engine-built event stored as format %d, %d bytes; want format 2 without the payload", raw[0], len(raw))
		}
		checkRoundTrip(t, []byte(e.ID), e, encodeEvent, decodeEvent)
	}
	tampered := e
	tampered.Payload = append([]byte(nil), e.Payload...)
	tampered.Payload[len(tampered.Payload)-2] = 'X' // Not what the members build.
	// Payloads built from a time that does not read back as it is (another
	// zone, the zero time beyond int64 nanoseconds) would change when built
	// again from the stored time.
	inCET, zero := e, e
	inCET.CreatedAt = e.CreatedAt.In(time.FixedZone("CET", 3600))
	zero.CreatedAt = time.Time{}
	for name, other := range map[string]engine.Event{"tampered": tampered, "CET": inCET, "zero time": zero} {
		if other.Payload == nil || name != "tampered" {
			if other.Payload, err = other.BuildPayload(); err != nil {
				t.Fatal(err)
			}
		}
		raw := encodeEvent(other)
		if raw[0] != recordFormat1 || !bytes.Contains(raw, other.Payload) {
			t.Fatalf("%s: event stored as format %d without its payload", name, raw[0])
		}
		got, err := decodeEvent([]byte(other.ID), raw)
		if err != nil || !bytes.Equal(got.Payload, other.Payload) {
			t.Fatalf("%s: payload read back as %s, %v; want %s", name, got.Payload, err, other.Payload)
		}
	}
	// A members record that could not have been written is refused.
	noOwner := e
	noOwner.Owner = ""
	raw := encodeEvent(e)
	if _, err := decodeEvent([]byte(e.ID), bytes.Replace(raw, []byte("\x08unix-bob"), []byte("\x00"), 1)); err == nil {
		t.Fatal("members record without an owner decoded")
	}
}

// inNanos reports whether t survives a round trip through Unix nanoseconds.
func inNanos(t time.Time) bool { return time.Unix(0, t.UnixNano()).Equal(t) }

// FuzzDecodeEvent: whatever decodes encodes again to a record that decodes
// to the same event.
func FuzzDecodeEvent(f *testing.F) {
	e := engine.Event{ID: "e", Type: engine.EventReserved, ReservationID: "r", Owner: "o", Actor: "a", OperationKey: "k",
		Workshop: "w", Quantity: 1, CreatedAt: time.Date(2026, 11, 29, 12, 0, 0, 1, time.UTC)}
	var err error
	if e.Payload, err = e.BuildPayload(); err != nil {
		f.Fatal(err)
	}
	f.Add(encodeEvent(e)) // Format 2: the members.
	e.Payload = []byte(`{"id":"e"}`)
	f.Add(encodeEvent(e)) // Format 1: the payload as it is.
	f.Fuzz(func(t *testing.T, raw []byte) {
		ev, err := decodeEvent([]byte("e"), raw)
		if err != nil || !inNanos(ev.CreatedAt) || !inNanos(ev.DeliveredAt) && ev.Delivered() {
			return // Binary records keep Unix nanoseconds; only an old JSON record can hold other times.
		}
		again, err := decodeEvent([]byte("e"), encodeEvent(ev))
		if err != nil || !bytes.Equal(again.Payload, ev.Payload) || again.Type != ev.Type || again.ReservationID != ev.ReservationID ||
			again.Actor != ev.Actor || again.OperationKey != ev.OperationKey || !again.CreatedAt.Equal(ev.CreatedAt) || !again.DeliveredAt.Equal(ev.DeliveredAt) {
			t.Fatalf("re-encoding changed the event: %+v vs %+v (%v)", ev, again, err)
		}
	})
}
