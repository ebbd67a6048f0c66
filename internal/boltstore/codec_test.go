package boltstore

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server"
)

func sampleReceipt() engine.Receipt {
	req := engine.Request{Workshop: "go-basics", Quantity: 2}
	r := engine.Receipt{
		Actor: "unix-alice", OperationKey: "f47ac10b-58cc-4372-a567-0e02b2c3d479",
		FingerprintVersion: engine.ReserveFingerprintV1, Fingerprint: engine.Fingerprint(req), Request: req,
		ReservationID: "0192f0a1b2c3d4e5f60718293a4b5c6d",
		CreatedAt:     time.Date(2026, 11, 29, 12, 0, 0, 123456789, time.UTC),
	}
	r.Answer = r.AnswerOf(engine.StatusReserved)
	return r
}

// withBody returns r answered with body, as a store reads a receipt whose
// body an earlier version wrote.
func withBody(r engine.Receipt, status, body string) engine.Receipt {
	r.Answer = engine.StoredAnswer(r.Kind(), status, []byte(body))
	return r
}

func TestReceiptRoundTrip(t *testing.T) {
	// Receipts whose answer is the one built from their members are stored
	// with the answer's status only (format 2), any other answer as its
	// bytes (1).
	unavailable := sampleReceipt()
	unavailable.ReservationID = ""
	unavailable.Answer = unavailable.AnswerOf(engine.StatusUnavailable)
	unavailable.CreatedAt = time.Unix(0, 0).UTC()
	for _, tc := range []struct {
		r      engine.Receipt
		format byte
	}{
		{sampleReceipt(), recordReceiptStatus},
		{unavailable, recordReceiptStatus},
		{withBody(sampleReceipt(), engine.StatusReserved, `{"status":"reserved","reservation_id":"0192f0a1b2c3d4e5f60718293a4b5c6d","workshop":"go-basics","quantity":2}`), recordReceiptStatus},
		{withBody(sampleReceipt(), engine.StatusReserved, `{"status":"reserved","reservation_id":"someone else's","workshop":"go-basics","quantity":2}`), recordFormat1},
		{withBody(sampleReceipt(), engine.StatusReserved, `{"workshop":"go-basics","status":"reserved"}`), recordFormat1},
		{withBody(sampleReceipt(), engine.StatusReserved, `{"status":"reserved", "reservation_id":"0192f0a1b2c3d4e5f60718293a4b5c6d","workshop":"go-basics","quantity":2}`), recordFormat1},
		{withBody(sampleReceipt(), "", `not JSON`), recordFormat1},
		{limitedReceipt(engine.Limit{MaxPerPerson: 3, Already: 2}), recordReceiptLimit},
		{limitedReceipt(engine.Limit{MaxPerPerson: 1}), recordReceiptLimit},
		{limitedHoldReceipt(), recordReceiptLimit},
	} {
		encode := func(r engine.Receipt) []byte {
			raw, err := encodeReceipt(r)
			if err != nil {
				t.Fatal(err)
			}
			return raw
		}
		if raw := encode(tc.r); raw[0] != tc.format {
			t.Errorf("receipt with answer %s stored as format %d, want %d", tc.r.Answer.JSON(), raw[0], tc.format)
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

// limitedReceipt is sampleReceipt answered limit_reached with limit.
func limitedReceipt(limit engine.Limit) engine.Receipt {
	r := sampleReceipt()
	r.ReservationID, r.Limit = "", limit
	r.Answer = r.AnswerOf(engine.StatusLimitReached)
	return r
}

// limitedHoldReceipt is the receipt of a hold request answered
// limit_reached.
func limitedHoldReceipt() engine.Receipt {
	req := engine.HoldRequest{Workshop: "go-basics", Quantity: 2, TTLSeconds: 600}
	r := engine.Receipt{
		Actor: "unix-alice", OperationKey: "f47ac10b-58cc-4372-a567-0e02b2c3d479",
		FingerprintVersion: engine.HoldFingerprintV1, Fingerprint: engine.HoldFingerprint(req),
		Request: engine.Request{Workshop: req.Workshop, Quantity: req.Quantity}, HoldTTLSeconds: req.TTLSeconds,
		Limit:     engine.Limit{MaxPerPerson: 2, Already: 1},
		CreatedAt: time.Date(2026, 11, 29, 12, 0, 0, 123456789, time.UTC),
	}
	r.Answer = r.AnswerOf(engine.StatusLimitReached)
	return r
}

// TestLimitReceiptFormat pins the layout of receipt format 4: the fields
// of format 3 (a reservation's receipt has no hold: an empty hold id, no
// deadline, no time to live), then the limit per person and the places
// the actor had already; its answer is the limit_reached body with both.
func TestLimitReceiptFormat(t *testing.T) {
	r := limitedReceipt(engine.Limit{MaxPerPerson: 3, Already: 2})
	if got, want := string(r.Answer.JSON()), `{"status":"limit_reached","workshop":"go-basics","quantity":2,"max_per_person":3,"already":2}`; got != want {
		t.Fatalf("answer = %s, want %s", got, want)
	}
	noLimit := r
	noLimit.Limit = engine.Limit{}
	noLimit.Answer = noLimit.AnswerOf(engine.StatusLimitReached)
	format2, err := encodeReceipt(noLimit)
	if err != nil || format2[0] != recordReceiptStatus {
		t.Fatalf("the receipt without its limit = %x, %v; want format 2", format2, err)
	}
	want := append([]byte{recordReceiptLimit}, format2[1:]...)
	want = appendBytes(want, nil)        // No hold id,
	want = binary.AppendVarint(want, 0)  // no deadline,
	want = binary.AppendUvarint(want, 0) // no time to live;
	want = append(want, 3, 2)            // the limit and the places already.
	if got, err := encodeReceipt(r); err != nil || !bytes.Equal(got, want) {
		t.Errorf("format 4 receipt = %x, %v; want %x", got, err, want)
	}
	for _, bad := range []engine.Limit{{MaxPerPerson: -1, Already: 1}, {MaxPerPerson: 1, Already: -1}} {
		r := limitedReceipt(bad)
		if raw, err := encodeReceipt(r); err == nil {
			t.Errorf("receipt with limit %+v encoded as %x", bad, raw)
		}
	}
	verbatim := withBody(limitedReceipt(engine.Limit{MaxPerPerson: 3, Already: 2}), engine.StatusLimitReached, `{"status":"limit_reached"}`)
	if raw, err := encodeReceipt(verbatim); err == nil {
		t.Errorf("receipt with a limit and a body of its own encoded as %x", raw)
	}
}

// TestTombstoneLimit: the tombstone of a limit_reached answer keeps the
// limit and the places the actor had already, as the member "limit",
// which every other tombstone lacks, so those are written byte for byte
// as before.
func TestTombstoneLimit(t *testing.T) {
	purged := time.Date(2026, 12, 29, 12, 0, 0, 1, time.UTC)
	limited := engine.TombstoneOf(limitedReceipt(engine.Limit{MaxPerPerson: 3, Already: 2}), purged)
	held := engine.TombstoneOf(limitedHoldReceipt(), purged)
	reserved := engine.TombstoneOf(sampleReceipt(), purged)
	fp := sampleReceipt().Fingerprint
	for _, tc := range []struct {
		t    engine.Tombstone
		want string
	}{
		{limited, `{"actor":"unix-alice","operation":"f47ac10b-58cc-4372-a567-0e02b2c3d479","fingerprint_version":1,"fingerprint":"` + fp + `","http_status":0,"status":"limit_reached","workshop":"go-basics","quantity":2,` +
			`"limit":{"max_per_person":3,"already":2},"created_at":"2026-11-29T12:00:00.123456789Z","purged_at":"2026-12-29T12:00:00.000000001Z"}`},
		{reserved, `{"actor":"unix-alice","operation":"f47ac10b-58cc-4372-a567-0e02b2c3d479","fingerprint_version":1,"fingerprint":"` + fp + `","http_status":201,"status":"reserved","reservation_id":"0192f0a1b2c3d4e5f60718293a4b5c6d","workshop":"go-basics","quantity":2,` +
			`"created_at":"2026-11-29T12:00:00.123456789Z","purged_at":"2026-12-29T12:00:00.000000001Z"}`},
		{held, ""},
	} {
		raw, err := json.Marshal(encodeTombstone(tc.t))
		if err != nil {
			t.Fatal(err)
		}
		if tc.want != "" && string(raw) != tc.want {
			t.Errorf("tombstone = %s\nwant        %s", raw, tc.want)
		}
		var j tombstoneJSON
		if err := json.Unmarshal(raw, &j); err != nil {
			t.Fatal(err)
		}
		if got := j.tombstone(); !reflect.DeepEqual(got, tc.t) {
			t.Errorf("tombstone %s read back as %+v, want %+v", raw, got, tc.t)
		}
	}
	if held.Answer.Limit != (engine.Limit{MaxPerPerson: 2, Already: 1}) || held.Kind() != engine.OperationHold {
		t.Errorf("tombstone of a hold over the limit = %+v", held)
	}
}

// TestEarlierReceiptRecords: receipts as every earlier version wrote them
// (format 1 with the body, format 2 with the status, each with the HTTP
// status it answered) read back as the answer that replays the same HTTP
// status and the same bytes, and new receipts store the same HTTP status
// numbers, so that an earlier version of the same schema reads them too.
func TestEarlierReceiptRecords(t *testing.T) {
	cancel := engine.Receipt{Actor: "unix-alice", OperationKey: "f47ac10b-58cc-4372-a567-0e02b2c3d479",
		FingerprintVersion: engine.CancelFingerprintV1, Fingerprint: engine.CancelFingerprint("0192f0a1b2c3d4e5f60718293a4b5c6d"),
		Request: engine.Request{Workshop: "go-basics", Quantity: 2}, ReservationID: "0192f0a1b2c3d4e5f60718293a4b5c6d",
		CreatedAt: time.Date(2026, 11, 29, 12, 0, 0, 123456789, time.UTC)}
	const id = `"reservation_id":"0192f0a1b2c3d4e5f60718293a4b5c6d"`
	for _, tc := range []struct {
		r      engine.Receipt
		code   int
		status string
		body   string
	}{
		{sampleReceipt(), 201, engine.StatusReserved, `{"status":"reserved",` + id + `,"workshop":"go-basics","quantity":2}`},
		{func() engine.Receipt { r := sampleReceipt(); r.ReservationID = ""; return r }(), 409, engine.StatusUnavailable, `{"status":"unavailable","workshop":"go-basics","quantity":2}`},
		{cancel, 200, engine.StatusCancelled, `{"status":"cancelled",` + id + `,"workshop":"go-basics","quantity":2}`},
		{cancel, 409, engine.StatusAlreadyCancelled, `{"status":"already_cancelled",` + id + `,"workshop":"go-basics","quantity":2}`},
		// Bodies no engine wrote still replay as they are, with their status.
		{sampleReceipt(), 201, engine.StatusReserved, `{"workshop":"go-basics","status":"reserved"}`},
		{sampleReceipt(), 409, engine.StatusUnavailable, `{"status":"reserved",` + id + `,"workshop":"go-basics","quantity":2}`},
	} {
		fp, _ := hex.DecodeString(tc.r.Fingerprint)
		head := binary.AppendUvarint([]byte{0}, uint64(tc.r.FingerprintVersion))
		head = binary.AppendUvarint(append(head, fp...), uint64(tc.code))
		head = appendBytes(binary.AppendVarint(head, tc.r.CreatedAt.UnixNano()), []byte(tc.r.Request.Workshop))
		head = appendBytes(binary.AppendUvarint(head, uint64(tc.r.Request.Quantity)), []byte(tc.r.ReservationID))
		// A body that is the answer built from the receipt is stored
		// again as format 2, any other as it is.
		records := [][]byte{appendBytes(bytes.Clone(head), []byte(tc.body))}
		records[0][0] = recordFormat1
		want := records[0]
		if string(tc.r.AnswerOf(tc.status).JSON()) == tc.body {
			want = appendBytes(bytes.Clone(head), []byte(tc.status))
			want[0] = recordReceiptStatus
			records = append(records, want)
		}
		for _, raw := range records {
			format := raw[0]
			got, err := decodeReceipt(receiptKey(tc.r.Actor, tc.r.OperationKey), raw)
			if err != nil || server.StatusOfAnswer(got.Answer) != tc.code || string(got.Answer.JSON()) != tc.body {
				t.Fatalf("format %d receipt %d %s read back as %d %s, %v", format, tc.code, tc.body, server.StatusOfAnswer(got.Answer), got.Answer.JSON(), err)
			}
			again, err := encodeReceipt(got)
			if err != nil || !bytes.Equal(again, want) {
				t.Fatalf("format %d receipt %d %s stored again as %x, %v; want %x", format, tc.code, tc.body, again, err, want)
			}
		}
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
	own := withBody(sampleReceipt(), engine.StatusReserved, `{"status":"reserved"}`)
	if raw, err = encodeReceipt(own); err != nil || raw[0] != recordFormat1 {
		f.Fatalf("format %d, %v", raw[0], err)
	}
	f.Add(raw) // Format 1: the body as it is.
	if raw, err = encodeReceipt(limitedHoldReceipt()); err != nil || raw[0] != recordReceiptLimit {
		f.Fatalf("format %d, %v", raw[0], err)
	}
	f.Add(raw) // Format 4: a hold's, with the limit.
	if raw, err = encodeReceipt(waitingReceipt("0192f0a1b2c3d4e5f60718293a4b5c72", 3)); err != nil || raw[0] != recordReceiptEntry {
		f.Fatalf("format %d, %v", raw[0], err)
	}
	f.Add(raw) // Format 6: a waiting list's, with the entry and its position.
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
		{ID: "holding", Title: "Held", Capacity: 30, Reserved: 12, MaxQuantity: 4, Version: 7, Holding: 3},
		{ID: "hidden", Title: "Hidden", Capacity: 30, Reserved: 12, MaxQuantity: 4, Version: 7, Hidden: true},
		{ID: "hidden-holding", Title: "Hidden", Capacity: 30, Reserved: 12, MaxQuantity: 4, Version: 7, Holding: 3, Hidden: true},
		{ID: "scheduled", Title: "Scheduled", Capacity: 30, Reserved: 12, MaxQuantity: 4, Version: 7, Schedule: fullSchedule()},
		{ID: "scheduled-hidden", Title: "Scheduled", Capacity: 30, Reserved: 12, MaxQuantity: 4, Version: 7, Holding: 3, Hidden: true, Schedule: fullSchedule()},
	} {
		checkRoundTrip(t, []byte(w.ID), w, encodeWorkshop, decodeWorkshop)
	}
	// Each member of a schedule alone makes format 4 and reads back,
	// listed and hidden.
	full := fullSchedule()
	for i, only := range []engine.Schedule{
		{Description: full.Description}, {Location: full.Location}, {TimeZone: full.TimeZone},
		{StartsAt: full.StartsAt}, {EndsAt: full.EndsAt}, {RegistrationOpensAt: full.RegistrationOpensAt},
		{RegistrationClosesAt: full.RegistrationClosesAt}, {MaxPerPerson: full.MaxPerPerson},
	} {
		for _, hidden := range []bool{false, true} {
			w := engine.Workshop{ID: "w", Title: "T", Capacity: 30, MaxQuantity: 4, Version: 1, Hidden: hidden, Schedule: only}
			if raw := encodeWorkshop(w); raw[0] != recordWorkshopSchedule {
				t.Errorf("workshop with schedule member %d alone (hidden %t) stored as format %d", i, hidden, raw[0])
			}
			checkRoundTrip(t, []byte(w.ID), w, encodeWorkshop, decodeWorkshop)
		}
	}
	// A workshop written as JSON before the binary layout still reads.
	old := []byte(`{"id":"go-basics","title":"Go basics","capacity":30,"reserved":12,"max_quantity":4,"version":7}`)
	w, err := decodeWorkshop([]byte("go-basics"), old)
	want := engine.Workshop{ID: "go-basics", Title: "Go basics", Capacity: 30, Reserved: 12, MaxQuantity: 4, Version: 7}
	if err != nil || w != want {
		t.Fatalf("JSON workshop = %+v, %v; want %+v", w, err, want)
	}
}

// fullSchedule sets every member of a schedule, its times in UTC (as
// stores keep them) to the nanosecond.
func fullSchedule() engine.Schedule {
	return engine.Schedule{
		Description: "Bring a laptop.\nWir fangen pünktlich an.", Location: "Room 2 — upstairs", TimeZone: "Europe/Berlin",
		StartsAt: time.Date(2026, 12, 10, 9, 0, 0, 1, time.UTC), EndsAt: time.Date(2026, 12, 10, 12, 30, 0, 999999999, time.UTC),
		RegistrationOpensAt: time.Date(1970, 1, 1, 0, 0, 0, 1, time.UTC), RegistrationClosesAt: time.Date(2262, 4, 11, 23, 47, 16, 854775807, time.UTC),
		MaxPerPerson: 300,
	}
}

// TestWorkshopFormats pins the bytes of each workshop format: a listed
// workshop is written exactly as schema versions 2 to 4 wrote it (format 1,
// or 2 with places in open holds), so rewriting it changes no byte, and
// only a hidden one takes format 3, which an earlier version refuses;
// only one with a schedule takes format 4 (schema version 8), and one
// whose schedule is cleared is written as before it had one.
func TestWorkshopFormats(t *testing.T) {
	base := engine.Workshop{ID: "w", Title: "T", Capacity: 30, Reserved: 12, MaxQuantity: 4, Version: 7}
	holding, hidden := base, base
	holding.Holding = 3
	hidden.Holding, hidden.Hidden = 3, true
	scheduled, scheduledHidden := base, hidden
	for _, w := range []*engine.Workshop{&scheduled, &scheduledHidden} {
		w.Schedule = engine.Schedule{Description: "D", Location: "L", TimeZone: "UTC", StartsAt: time.Unix(0, 1).UTC(),
			RegistrationOpensAt: time.Unix(0, 2).UTC(), RegistrationClosesAt: time.Unix(0, 3).UTC(), MaxPerPerson: 2}
	}
	for _, tc := range []struct {
		w    engine.Workshop
		want []byte
	}{
		{base, []byte{1, 1, 'T', 60, 24, 8, 7}},
		{holding, []byte{2, 1, 'T', 60, 24, 8, 7, 6}},
		{hidden, []byte{3, 1, 'T', 60, 24, 8, 7, 6, 1}},
		// A schedule: format 4, flags 0 when listed, then description,
		// location, time zone, the four times in Unix nanoseconds (0 for
		// none) and the limit per person.
		{scheduled, []byte{4, 1, 'T', 60, 24, 8, 7, 0, 0, 1, 'D', 1, 'L', 3, 'U', 'T', 'C', 2, 0, 4, 6, 2}},
		{scheduledHidden, []byte{4, 1, 'T', 60, 24, 8, 7, 6, 1, 1, 'D', 1, 'L', 3, 'U', 'T', 'C', 2, 0, 4, 6, 2}},
	} {
		if got := encodeWorkshop(tc.w); !bytes.Equal(got, tc.want) {
			t.Errorf("encodeWorkshop(%+v) = %v, want %v", tc.w, got, tc.want)
		}
	}
	// A workshop whose schedule is cleared is written as before it had
	// one, byte for byte.
	for _, tc := range []struct{ w, without engine.Workshop }{{scheduled, base}, {scheduledHidden, hidden}} {
		cleared := tc.w
		cleared.Schedule = engine.Schedule{}
		if got, want := encodeWorkshop(cleared), encodeWorkshop(tc.without); !bytes.Equal(got, want) {
			t.Errorf("workshop %+v without its schedule = %v, want %v", tc.w, got, want)
		}
	}
	for _, flags := range []byte{0, 2, 3} {
		if w, err := decodeWorkshop([]byte("w"), []byte{3, 1, 'T', 60, 24, 8, 7, 6, flags}); err == nil {
			t.Errorf("a workshop with flags %d decoded as %+v", flags, w)
		}
	}
	for _, flags := range []byte{2, 3} {
		if w, err := decodeWorkshop([]byte("w"), []byte{4, 1, 'T', 60, 24, 8, 7, 0, flags, 1, 'D', 1, 'L', 3, 'U', 'T', 'C', 2, 0, 4, 6, 2}); err == nil {
			t.Errorf("a scheduled workshop with flags %d decoded as %+v", flags, w)
		}
	}
}

// mustEncodeEvent is encodeEvent for events that encode.
func mustEncodeEvent(e engine.Event) []byte {
	raw, err := encodeEvent(e)
	if err != nil {
		panic(err)
	}
	return raw
}

func TestEventRoundTrip(t *testing.T) {
	e := engine.Event{ID: "0192f0a1b2c3d4e5f60718293a4b5c6d", Type: engine.EventReserved, ReservationID: "0192f0a1b2c3d4e5f60718293a4b5c6e",
		Actor: "unix-alice", OperationKey: "f47ac10b-58cc-4372-a567-0e02b2c3d479",
		CreatedAt: time.Date(2026, 11, 29, 12, 0, 0, 1, time.UTC)}.WithStoredPayload([]byte(`{"id":"x"}`))
	checkRoundTrip(t, []byte(e.ID), e, mustEncodeEvent, decodeEvent)
	e.DeliveredAt = e.CreatedAt.Add(time.Second)
	checkRoundTrip(t, []byte(e.ID), e, mustEncodeEvent, decodeEvent)
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

// payloadOf returns e's payload.
func payloadOf(tb testing.TB, e engine.Event) []byte {
	tb.Helper()
	p, err := e.Payload()
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// TestEventMembersRecord: an event as the engine makes it, whose payload is
// built from its members, is stored as the members alone (format 2) and
// read back with the same payload; an event whose payload is anything else
// keeps its payload (format 1).
func TestEventMembersRecord(t *testing.T) {
	e := engine.Event{ID: "0192f0a1b2c3d4e5f60718293a4b5c6d", Type: engine.EventCancelled, ReservationID: "0192f0a1b2c3d4e5f60718293a4b5c6e",
		Owner: "unix-bob", Actor: "unix-alice", OperationKey: "f47ac10b-58cc-4372-a567-0e02b2c3d479", Workshop: "go-basics", Quantity: 2,
		CreatedAt: time.Date(2026, 11, 29, 12, 0, 0, 1, time.UTC)}
	for _, delivered := range []time.Time{{}, e.CreatedAt.Add(time.Second)} {
		e.DeliveredAt = delivered
		raw := mustEncodeEvent(e)
		if raw[0] != recordEventMembers || bytes.Contains(raw, []byte(`"owner"`)) {
			t.Fatalf("engine-built event stored as format %d, %d bytes; want format 2 without the payload", raw[0], len(raw))
		}
		checkRoundTrip(t, []byte(e.ID), e, mustEncodeEvent, decodeEvent)
	}
	tampered := payloadOf(t, e)
	tampered[len(tampered)-2] = 'X' // Not what the members build.
	// Payloads built from a time that does not read back as it is (another
	// zone, the zero time beyond int64 nanoseconds) would change when built
	// again from the stored time.
	inCET, zero := e, e
	inCET.CreatedAt = e.CreatedAt.In(time.FixedZone("CET", 3600))
	zero.CreatedAt = time.Time{}
	for name, other := range map[string]engine.Event{"tampered": e.WithStoredPayload(tampered), "CET": inCET, "zero time": zero} {
		want := payloadOf(t, other)
		raw := mustEncodeEvent(other)
		if raw[0] != recordFormat1 || !bytes.Contains(raw, want) {
			t.Fatalf("%s: event stored as format %d without its payload", name, raw[0])
		}
		got, err := decodeEvent([]byte(other.ID), raw)
		if err != nil || !bytes.Equal(payloadOf(t, got), want) {
			t.Fatalf("%s: payload read back as %s, %v; want %s", name, payloadOf(t, got), err, want)
		}
	}
	// A members record that could not have been written is refused.
	raw := mustEncodeEvent(e)
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
	f.Add(mustEncodeEvent(e))                                         // Format 2: the members.
	f.Add(mustEncodeEvent(e.WithStoredPayload([]byte(`{"id":"e"}`)))) // Format 1: the payload as it is.
	h := holdEvent(engine.EventHoldConfirmed)
	f.Add(mustEncodeEvent(h))                                         // Format 3: a hold's members.
	f.Add(mustEncodeEvent(h.WithStoredPayload([]byte(`{"id":"h"}`)))) // Format 4: a hold's payload as it is.
	h.HoldExpiresAt = h.CreatedAt.Add(time.Hour)
	f.Add(mustEncodeEvent(h))                                         // Format 5: a hold's members and deadline.
	f.Add(mustEncodeEvent(h.WithStoredPayload([]byte(`{"id":"h"}`)))) // Format 6: a hold's payload as it is and its deadline.
	f.Fuzz(func(t *testing.T, raw []byte) {
		ev, err := decodeEvent([]byte("e"), raw)
		if err != nil || !inNanos(ev.CreatedAt) || !inNanos(ev.DeliveredAt) && ev.Delivered() {
			return // Binary records keep Unix nanoseconds; only an old JSON record can hold other times.
		}
		want, err := ev.Payload()
		if err != nil {
			return
		}
		again, err := decodeEvent([]byte("e"), mustEncodeEvent(ev))
		if err != nil || !bytes.Equal(payloadOf(t, again), want) || again.Type != ev.Type || again.ReservationID != ev.ReservationID || again.HoldID != ev.HoldID || !again.HoldExpiresAt.Equal(ev.HoldExpiresAt) ||
			again.Actor != ev.Actor || again.OperationKey != ev.OperationKey || !again.CreatedAt.Equal(ev.CreatedAt) || !again.DeliveredAt.Equal(ev.DeliveredAt) {
			t.Fatalf("re-encoding changed the event: %+v vs %+v (%v)", ev, again, err)
		}
	})
}
