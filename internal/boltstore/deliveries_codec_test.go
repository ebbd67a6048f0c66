package boltstore

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// holdEvent is the event of type typ of a hold, as the engine writes it.
func holdEvent(typ string) engine.Event {
	e := engine.Event{ID: "0192f0a1b2c3d4e5f60718293a4b5c70", Type: typ, HoldID: "0192f0a1b2c3d4e5f60718293a4b5c6f",
		Owner: "unix-bob", Actor: "unix-bob", OperationKey: "f47ac10b-58cc-4372-a567-0e02b2c3d479", Workshop: "go-basics", Quantity: 2,
		CreatedAt: time.Date(2026, 11, 29, 12, 0, 0, 1, time.UTC)}
	switch typ {
	case engine.EventHoldConfirmed:
		e.ReservationID = "0192f0a1b2c3d4e5f60718293a4b5c71"
	case engine.EventHoldExpired:
		e.Actor, e.OperationKey = "", "" // Nobody asked for an expiry.
	}
	return e
}

// TestHoldEventRecord: a hold's event keeps its hold id (and a
// confirmation the reservation it made): format 3 is format 2 followed by
// the hold id, format 4 (a payload kept as it is) format 1 followed by it;
// both read back as they were written, with the same payload, delivered
// or not. A hold format without a hold id is refused.
func TestHoldEventRecord(t *testing.T) {
	for _, typ := range []string{engine.EventHoldCreated, engine.EventHoldConfirmed, engine.EventHoldReleased, engine.EventHoldExpired} {
		e := holdEvent(typ)
		for _, delivered := range []time.Time{{}, e.CreatedAt.Add(time.Second)} {
			e.DeliveredAt = delivered
			raw := mustEncodeEvent(e)
			without := e
			without.HoldID = ""
			want := appendBytes(append([]byte{recordEventHoldMembers}, mustEncodeEvent(without)[1:]...), []byte(e.HoldID))
			if !bytes.Equal(raw, want) {
				t.Fatalf("%s event = %x, want format 2 followed by the hold id: %x", typ, raw, want)
			}
			checkRoundTrip(t, []byte(e.ID), e, mustEncodeEvent, decodeEvent)
			got, _ := decodeEvent([]byte(e.ID), raw)
			if p := payloadOf(t, got); !bytes.Contains(p, []byte(`"hold_id":"`+e.HoldID+`"`)) || bytes.Contains(p, []byte(`"reservation_id"`)) != (e.ReservationID != "") {
				t.Errorf("%s payload read back = %s", typ, p)
			}
			// Read with its payload as bytes, an event has no owner,
			// workshop or quantity of its own.
			kept := e
			kept.Owner, kept.Workshop, kept.Quantity = "", "", 0
			kept = kept.WithStoredPayload(payloadOf(t, e))
			if raw := mustEncodeEvent(kept); raw[0] != recordEventHoldPayload {
				t.Fatalf("%s event with its payload kept stored as format %d, want %d", typ, raw[0], recordEventHoldPayload)
			}
			checkRoundTrip(t, []byte(e.ID), kept, mustEncodeEvent, decodeEvent)
		}
	}
	e := holdEvent(engine.EventHoldCreated)
	e.HoldID = ""
	for _, format := range []byte{recordEventHoldMembers, recordEventHoldPayload} {
		raw := mustEncodeEvent(e)
		if format == recordEventHoldPayload {
			raw = mustEncodeEvent(e.WithStoredPayload([]byte(`{}`)))
		}
		raw[0] = format
		if _, err := decodeEvent([]byte(e.ID), appendBytes(raw, nil)); err == nil {
			t.Errorf("format %d event without a hold id decoded", format)
		}
	}
}

// TestHoldEventDeadlineRecord: a hold's event that names its hold's
// deadline is format 5 (format 3 followed by the deadline), or format 6
// with its payload kept (format 4 followed by it), and reads back with
// it; the payload is the same as without it. A deadline that Unix
// nanoseconds cannot hold is left out (format 3), and a format 5 record
// cut before its deadline is refused.
func TestHoldEventDeadlineRecord(t *testing.T) {
	for _, typ := range []string{engine.EventHoldCreated, engine.EventWaitlistOffered, engine.EventHoldExpired} {
		e := holdEvent(typ)
		e.HoldExpiresAt = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
		without := e
		without.HoldExpiresAt = time.Time{}
		raw := mustEncodeEvent(e)
		want := binary.AppendVarint(append([]byte{recordEventHoldDeadlineMembers}, mustEncodeEvent(without)[1:]...), e.HoldExpiresAt.UnixNano())
		if !bytes.Equal(raw, want) {
			t.Fatalf("%s event = %x, want format 3 followed by the deadline: %x", typ, raw, want)
		}
		checkRoundTrip(t, []byte(e.ID), e, mustEncodeEvent, decodeEvent)
		if got, _ := decodeEvent([]byte(e.ID), raw); !bytes.Equal(payloadOf(t, got), payloadOf(t, without)) {
			t.Errorf("%s payload with the deadline = %s, want %s", typ, payloadOf(t, got), payloadOf(t, without))
		}
		kept := e
		kept.Owner, kept.Workshop, kept.Quantity = "", "", 0
		kept = kept.WithStoredPayload(payloadOf(t, e))
		if raw := mustEncodeEvent(kept); raw[0] != recordEventHoldDeadlinePayload {
			t.Fatalf("%s event with its payload kept stored as format %d, want %d", typ, raw[0], recordEventHoldDeadlinePayload)
		}
		checkRoundTrip(t, []byte(e.ID), kept, mustEncodeEvent, decodeEvent)
		if _, err := decodeEvent([]byte(e.ID), raw[:len(raw)-1]); err == nil {
			t.Errorf("%s event cut in its deadline decoded", typ)
		}
		far := e
		far.HoldExpiresAt = time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)
		if raw := mustEncodeEvent(far); raw[0] != recordEventHoldMembers {
			t.Errorf("%s event with a deadline in 2300 stored as format %d, want %d without it", typ, raw[0], recordEventHoldMembers)
		}
	}
}

// correctionReceipt is the receipt of an operator's correction (kind,
// answered status) of delivery id.
func correctionReceipt(kind engine.OperationKind, status, id string) engine.Receipt {
	version := engine.RetryDeliveryFingerprintV1
	if kind == engine.OperationSkipDelivery {
		version = engine.SkipDeliveryFingerprintV1
	}
	r := engine.Receipt{
		Actor: "root", OperationKey: "5c6d7e8f-9a0b-4c1d-8e2f-3a4b5c6d7e8f",
		FingerprintVersion: version, Fingerprint: engine.DeliveryFingerprint(kind, id),
		Request: engine.Request{Workshop: "go-basics", Quantity: 2}, DeliveryID: id,
		CreatedAt: time.Date(2026, 12, 2, 12, 0, 0, 123456789, time.UTC),
	}
	r.Answer = r.AnswerOf(status)
	return r
}

// TestDeliveryReceiptFormat: the receipt of a retry or a skip of a
// delivery is format 5, format 2 followed by the delivery id, and replays
// its answer with the delivery id; a delivery id beside a hold or a limit,
// or an answer not built from the members, is refused. Its tombstone
// keeps the delivery id, which every other tombstone lacks.
func TestDeliveryReceiptFormat(t *testing.T) {
	const id = "0192f0a1b2c3d4e5f60718293a4b5c6d-wh_0192f0a1b2c3d4e5f60718293a4b5c6e"
	for _, tc := range []struct {
		kind   engine.OperationKind
		status string
	}{
		{engine.OperationRetryDelivery, engine.StatusRequeued},
		{engine.OperationSkipDelivery, engine.StatusSkipped},
		{engine.OperationSkipDelivery, engine.StatusAlreadyDelivered},
		{engine.OperationSkipDelivery, engine.StatusAlreadySkipped},
	} {
		r := correctionReceipt(tc.kind, tc.status, id)
		if got, want := string(r.Answer.JSON()), `{"status":"`+tc.status+`","delivery_id":"`+id+`","workshop":"go-basics","quantity":2}`; got != want {
			t.Fatalf("answer = %s, want %s", got, want)
		}
		encode := func(r engine.Receipt) []byte {
			raw, err := encodeReceipt(r)
			if err != nil {
				t.Fatal(err)
			}
			return raw
		}
		without := r
		without.DeliveryID = ""
		without.Answer = without.AnswerOf(tc.status)
		if got, want := encode(r), appendBytes(append([]byte{recordReceiptDelivery}, encode(without)[1:]...), []byte(id)); !bytes.Equal(got, want) {
			t.Errorf("%s receipt = %x, want format 2 followed by the delivery id: %x", tc.status, got, want)
		}
		checkRoundTrip(t, receiptKey(r.Actor, r.OperationKey), r, encode, decodeReceipt)
		got, _ := decodeReceipt(receiptKey(r.Actor, r.OperationKey), encode(r))
		if !bytes.Equal(got.Answer.JSON(), r.Answer.JSON()) || got.Kind() != tc.kind {
			t.Errorf("%s receipt replays %s as %s, want %s", tc.status, tc.kind, got.Answer.JSON(), r.Answer.JSON())
		}

		ts := engine.TombstoneOf(r, r.CreatedAt.Add(time.Hour))
		raw, err := json.Marshal(encodeTombstone(ts))
		if err != nil {
			t.Fatal(err)
		}
		var j tombstoneJSON
		if err := json.Unmarshal(raw, &j); err != nil || !reflect.DeepEqual(j.tombstone(), ts) || !bytes.Contains(raw, []byte(`"delivery_id":"`+id+`"`)) {
			t.Errorf("tombstone %s read back as %+v, %v; want %+v", raw, j.tombstone(), err, ts)
		}
	}
	if raw, _ := json.Marshal(encodeTombstone(engine.TombstoneOf(sampleReceipt(), time.Now()))); bytes.Contains(raw, []byte("delivery_id")) {
		t.Errorf("a reservation's tombstone names a delivery: %s", raw)
	}
	held := correctionReceipt(engine.OperationRetryDelivery, engine.StatusRequeued, id)
	held.HoldID = "0192f0a1b2c3d4e5f60718293a4b5c6f"
	held.Answer = held.AnswerOf(engine.StatusRequeued)
	limited := correctionReceipt(engine.OperationRetryDelivery, engine.StatusRequeued, id)
	limited.Limit = engine.Limit{MaxPerPerson: 1, Already: 1}
	limited.Answer = limited.AnswerOf(engine.StatusRequeued)
	verbatim := withBody(correctionReceipt(engine.OperationRetryDelivery, engine.StatusRequeued, id), engine.StatusRequeued, `{"status":"requeued"}`)
	for name, r := range map[string]engine.Receipt{"hold": held, "limit": limited, "own body": verbatim} {
		if raw, err := encodeReceipt(r); err == nil {
			t.Errorf("receipt of a delivery's correction with a %s encoded as %x", name, raw)
		}
	}
	r := correctionReceipt(engine.OperationSkipDelivery, engine.StatusSkipped, id)
	raw, _ := encodeReceipt(r)
	raw = append(raw[:len(raw)-len(id)-1], 0) // An empty delivery id.
	if _, err := decodeReceipt(receiptKey(r.Actor, r.OperationKey), raw); err == nil {
		t.Error("format 5 receipt without a delivery id decoded")
	}
}

func TestDeliveryRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 2, 12, 0, 0, 123456789, time.UTC)
	full := engine.Delivery{ID: "e1-wh_1", EventID: "e1", EventType: engine.EventHoldExpired, Channel: engine.ChannelWebhook, Endpoint: "wh_1",
		State: engine.DeliveryFailed, Attempts: 7, CreatedAt: at, Since: at.Add(time.Minute), NextAttemptAt: at.Add(time.Hour),
		LastAttemptAt: at.Add(2 * time.Hour), LastStatus: 410, LastError: "HTTP 410 Gone — für immer", DoneAt: at.Add(3 * time.Hour)}
	mail := engine.Delivery{ID: "e2-mail", EventID: "e2", EventType: engine.EventReserved, Channel: engine.ChannelMail,
		Recipient: "ada@example.org", State: engine.DeliveryPending, CreatedAt: at, Since: at, NextAttemptAt: at}
	// Times beyond the years of int64 nanoseconds take format 2; the
	// zero time stays what it is in either.
	late, early := full, mail
	late.NextAttemptAt = time.Date(9000, 1, 1, 0, 0, 0, 5, time.UTC)
	early.CreatedAt = time.Date(1200, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		d      engine.Delivery
		format byte
	}{{full, recordDelivery1}, {mail, recordDelivery1}, {late, recordDeliveryWide}, {early, recordDeliveryWide}} {
		if raw := encodeDelivery(tc.d); raw[0] != tc.format {
			t.Errorf("delivery %+v stored as format %d, want %d", tc.d, raw[0], tc.format)
		}
		checkRoundTrip(t, []byte(tc.d.ID), tc.d, encodeDelivery, decodeDelivery)
	}
	if _, err := decodeDelivery([]byte("x"), append([]byte{3}, encodeDelivery(mail)[1:]...)); err == nil {
		t.Error("delivery of an unknown format decoded")
	}
}
