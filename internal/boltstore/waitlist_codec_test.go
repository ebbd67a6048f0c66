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

// offeredEntry is an entry offered places, every member set.
func offeredEntry() engine.WaitEntry {
	at := time.Date(2026, 12, 2, 12, 0, 0, 123456789, time.UTC)
	return engine.WaitEntry{ID: "0192f0a1b2c3d4e5f60718293a4b5c72", Actor: "unix-bob", OperationKey: "f47ac10b-58cc-4372-a567-0e02b2c3d479",
		Workshop: "go-basics", Quantity: 2, State: engine.WaitReserved, HoldID: "0192f0a1b2c3d4e5f60718293a4b5c73",
		OfferExpiresAt: at.Add(24 * time.Hour), CreatedAt: at, SettledAt: at.Add(time.Hour)}
}

// TestWaitEntryRoundTrip: an entry reads back as it was written, in
// every state, without the position a view gives it; format 1 keeps
// times as Unix nanoseconds (0 for none), and only an entry with a time
// beyond the years they hold takes format 2. Every truncation is refused.
func TestWaitEntryRoundTrip(t *testing.T) {
	full := offeredEntry()
	waiting := engine.WaitEntry{ID: full.ID, Actor: "a", OperationKey: "k", Workshop: "w", Quantity: 1, State: engine.WaitWaiting,
		CreatedAt: time.Unix(0, 3).UTC()}
	broken := waiting
	broken.Quantity, broken.State = -2, "no such state" // Check must see it as stored.
	late := full
	late.OfferExpiresAt = time.Date(9000, 1, 1, 0, 0, 0, 5, time.UTC)
	for _, tc := range []struct {
		e      engine.WaitEntry
		format byte
	}{{full, recordWaitEntry1}, {waiting, recordWaitEntry1}, {broken, recordWaitEntry1}, {late, recordWaitEntryWide}} {
		if raw := encodeWaitEntry(tc.e); raw[0] != tc.format {
			t.Errorf("entry %+v stored as format %d, want %d", tc.e, raw[0], tc.format)
		}
		checkRoundTrip(t, []byte(tc.e.ID), tc.e, encodeWaitEntry, decodeWaitEntry)
	}
	want := []byte{1, 1, 'a', 1, 'k', 1, 'w', 2, 7, 'w', 'a', 'i', 't', 'i', 'n', 'g', 0, 6, 0, 0}
	if got := encodeWaitEntry(waiting); !bytes.Equal(got, want) {
		t.Errorf("entry %+v = %v, want %v", waiting, got, want)
	}
	positioned := waiting
	positioned.Position = 3
	if got := encodeWaitEntry(positioned); !bytes.Equal(got, want) {
		t.Errorf("entry with a position = %v, want %v: the position is not stored", got, want)
	}
	if _, err := decodeWaitEntry([]byte("x"), append([]byte{3}, want[1:]...)); err == nil {
		t.Error("entry of an unknown format decoded")
	}
}

// waitingReceipt is the receipt of a request that joined a waiting list
// as entry id at position, and leaveReceipt that of leaving entry id,
// answered status.
func waitingReceipt(id string, position int) engine.Receipt {
	req := engine.Request{Workshop: "go-basics", Quantity: 2}
	r := engine.Receipt{Actor: "unix-bob", OperationKey: "f47ac10b-58cc-4372-a567-0e02b2c3d479",
		FingerprintVersion: engine.WaitlistFingerprintV1, Fingerprint: engine.WaitlistFingerprint(req), Request: req,
		EntryID: id, Position: position, CreatedAt: time.Date(2026, 12, 2, 12, 0, 0, 123456789, time.UTC)}
	r.Answer = r.AnswerOf(engine.StatusWaiting)
	return r
}

func leaveReceipt(id, status string) engine.Receipt {
	r := engine.Receipt{Actor: "unix-bob", OperationKey: "0b7f1c2a-58cc-4372-a567-0e02b2c3d479",
		FingerprintVersion: engine.LeaveWaitlistFingerprintV1, Fingerprint: engine.SettleFingerprint(engine.OperationLeaveWaitlist, id),
		Request: engine.Request{Workshop: "go-basics", Quantity: 2}, EntryID: id, CreatedAt: time.Date(2026, 12, 2, 13, 0, 0, 1, time.UTC)}
	r.Answer = r.AnswerOf(status)
	return r
}

// TestWaitlistReceiptFormat: the receipt of a request that joined a
// waiting list, and of a leaving of one, is format 6: format 2 followed
// by the entry id and the position when it joined (0 for a leaving); it
// reads back as it was written, so its answer replays with entry_id and
// position, and its kind follows the fingerprint version (a reservation
// for version 8, leave_waitlist for 9). A receipt that names an entry and
// a hold, a limit or a delivery, a position without an entry, or a body
// of its own, is refused; a format 6 record without an entry id too.
func TestWaitlistReceiptFormat(t *testing.T) {
	const id = "0192f0a1b2c3d4e5f60718293a4b5c72"
	joined := waitingReceipt(id, 3)
	if got, want := string(joined.Answer.JSON()), `{"status":"waiting","entry_id":"`+id+`","workshop":"go-basics","quantity":2,"position":3}`; got != want {
		t.Fatalf("answer = %s, want %s", got, want)
	}
	for _, r := range []engine.Receipt{joined, waitingReceipt(id, 1<<20), leaveReceipt(id, engine.StatusLeft), leaveReceipt(id, engine.StatusAlreadyReserved)} {
		encode := func(r engine.Receipt) []byte {
			raw, err := encodeReceipt(r)
			if err != nil {
				t.Fatal(err)
			}
			return raw
		}
		without := r
		without.EntryID, without.Position = "", 0
		without.Answer = without.AnswerOf(r.Answer.Status)
		format2 := encode(without)
		want := binary.AppendUvarint(appendBytes(append([]byte{recordReceiptEntry}, format2[1:]...), []byte(id)), uint64(r.Position))
		if format2[0] != recordReceiptStatus || !bytes.Equal(encode(r), want) {
			t.Errorf("receipt %s = %x, want format 2 followed by the entry and the position: %x", r.Answer.JSON(), encode(r), want)
		}
		checkRoundTrip(t, receiptKey(r.Actor, r.OperationKey), r, encode, decodeReceipt)
	}
	if k := leaveReceipt(id, engine.StatusLeft).Kind(); k != engine.OperationLeaveWaitlist || joined.Kind() != engine.OperationReserve {
		t.Errorf("kinds of the receipts = %s and %s", joined.Kind(), k)
	}
	rebuild := func(r engine.Receipt) engine.Receipt { r.Answer = r.AnswerOf(r.Answer.Status); return r }
	held, limited, corrected, noEntry := joined, joined, joined, joined
	held.HoldID = "0192f0a1b2c3d4e5f60718293a4b5c6f"
	limited.Limit = engine.Limit{MaxPerPerson: 1, Already: 1}
	corrected.DeliveryID = "e1-wh_1"
	noEntry.EntryID = ""
	for name, r := range map[string]engine.Receipt{
		"hold": rebuild(held), "limit": rebuild(limited), "delivery": rebuild(corrected), "position without an entry": rebuild(noEntry),
		"own body": withBody(joined, engine.StatusWaiting, `{"status":"waiting"}`), "negative position": rebuild(waitingReceipt(id, -1)),
	} {
		if raw, err := encodeReceipt(r); err == nil {
			t.Errorf("receipt of a waiting list with a %s encoded as %x", name, raw)
		}
	}
	raw, _ := encodeReceipt(leaveReceipt(id, engine.StatusLeft))
	raw = append(raw[:len(raw)-len(id)-2], 0, 0) // An empty entry id.
	if r, err := decodeReceipt(receiptKey("unix-bob", "k"), raw); err == nil {
		t.Errorf("format 6 receipt without an entry id decoded as %+v", r)
	}
}

// TestTombstoneEntry: the tombstone of a waiting list's receipt keeps the
// entry id and the position (members "entry_id" and "position"), which
// every other tombstone lacks, and reads back as it was written.
func TestTombstoneEntry(t *testing.T) {
	const id = "0192f0a1b2c3d4e5f60718293a4b5c72"
	purged := time.Date(2026, 12, 29, 12, 0, 0, 1, time.UTC)
	joined := engine.TombstoneOf(waitingReceipt(id, 3), purged)
	left := engine.TombstoneOf(leaveReceipt(id, engine.StatusLeft), purged)
	want := `{"actor":"unix-bob","operation":"f47ac10b-58cc-4372-a567-0e02b2c3d479","fingerprint_version":8,"fingerprint":"` + joined.Fingerprint +
		`","http_status":0,"status":"waiting","entry_id":"` + id + `","workshop":"go-basics","quantity":2,"position":3,` +
		`"created_at":"2026-12-02T12:00:00.123456789Z","purged_at":"2026-12-29T12:00:00.000000001Z"}`
	for _, ts := range []engine.Tombstone{joined, left} {
		raw, err := json.Marshal(encodeTombstone(ts))
		if err != nil {
			t.Fatal(err)
		}
		if ts.Answer.Status == engine.StatusWaiting && string(raw) != want {
			t.Errorf("tombstone = %s\nwant        %s", raw, want)
		}
		var j tombstoneJSON
		if err := json.Unmarshal(raw, &j); err != nil {
			t.Fatal(err)
		}
		if got := j.tombstone(); !reflect.DeepEqual(got, ts) {
			t.Errorf("tombstone %s read back as %+v, want %+v", raw, got, ts)
		}
	}
	if left.Answer.EntryID != id || left.Answer.Position != 0 || left.Kind() != engine.OperationLeaveWaitlist {
		t.Errorf("tombstone of a leaving = %+v", left)
	}
}

// TestWorkshopWaitlistFormat: a workshop with people on its waiting list
// or an offer time to live of its own is format 5: the fields of format 4
// (flags 0 when listed, an empty schedule when it has none), then the
// count of people waiting and the time to live, each a varint; it reads
// back as it was written, with or without a schedule, hidden or not. Once
// nobody waits and its time to live is the default again it is written
// as before, byte for byte.
func TestWorkshopWaitlistFormat(t *testing.T) {
	base := engine.Workshop{ID: "w", Title: "T", Capacity: 30, Reserved: 12, MaxQuantity: 4, Version: 7}
	waiting, ttl := base, base
	waiting.Waiting = 2
	ttl.OfferTTLSeconds = 3600
	for _, tc := range []struct {
		w    engine.Workshop
		want []byte
	}{
		{waiting, []byte{5, 1, 'T', 60, 24, 8, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0}},
		{ttl, []byte{5, 1, 'T', 60, 24, 8, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xa0, 0x38}},
	} {
		if got := encodeWorkshop(tc.w); !bytes.Equal(got, tc.want) {
			t.Errorf("encodeWorkshop(%+v) = %v, want %v", tc.w, got, tc.want)
		}
	}
	scheduledHidden := engine.Workshop{ID: "s", Title: "Scheduled", Capacity: 30, Reserved: 12, MaxQuantity: 4, Version: 7, Holding: 3, Hidden: true,
		Schedule: fullSchedule(), Waiting: 5, OfferTTLSeconds: engine.MaxOfferTTLSeconds}
	broken := base
	broken.Waiting = -1 // Check must see it as stored.
	for _, w := range []engine.Workshop{waiting, ttl, scheduledHidden, broken} {
		checkRoundTrip(t, []byte(w.ID), w, encodeWorkshop, decodeWorkshop)
	}
	for _, w := range []engine.Workshop{waiting, ttl} {
		w.Waiting, w.OfferTTLSeconds = 0, 0
		if got, want := encodeWorkshop(w), encodeWorkshop(base); !bytes.Equal(got, want) {
			t.Errorf("workshop %+v with nobody waiting = %v, want %v", w, got, want)
		}
	}
	cleared := scheduledHidden
	cleared.Waiting, cleared.OfferTTLSeconds = 0, 0
	if raw := encodeWorkshop(cleared); raw[0] != recordWorkshopSchedule {
		t.Errorf("scheduled workshop with nobody waiting stored as format %d, want %d", raw[0], recordWorkshopSchedule)
	}
	if w, err := decodeWorkshop([]byte("w"), []byte{5, 1, 'T', 60, 24, 8, 7, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0}); err == nil {
		t.Errorf("a workshop of format 5 with flags 2 decoded as %+v", w)
	}
}
