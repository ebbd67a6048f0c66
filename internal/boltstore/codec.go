package boltstore

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// Receipts, reservations and outbox events are the records of which there
// are millions, and workshops are read and written by every reservation, so
// they use a compact binary layout: a format byte, then fields as varints and
// length-prefixed bytes. Their identity (actor and operation key, reservation
// id, workshop id or event id) lives in the bbolt key and is not repeated in
// the value. Tokens, sessions and tombstones stay JSON. Workshops and events
// were JSON in databases written before the binary layout; their decoders
// still read those records (a JSON object starts with '{', never a format
// byte), and the next write of a workshop stores it in the binary layout.
const recordFormat1 = 1

// isJSON reports whether a workshop or event record predates the binary
// layout.
func isJSON(raw []byte) bool { return len(raw) > 0 && raw[0] == '{' }

// recordReceiptStatus is the format byte of a receipt stored with the
// status of its answer instead of the answer: the answer is built from the
// status and the receipt's other members (engine.Receipt.AnswerOf), and
// keeping it as JSON stored most of them twice.
const recordReceiptStatus = 2

// encodeReceipt lays out a receipt whose answer is the one built from its
// status as:
//
//	format=2 | uvarint fp version | 32 bytes fingerprint | uvarint code |
//	varint created (Unix ns) | bytes workshop | uvarint quantity |
//	bytes reservation id | bytes answer status
//
// and any other receipt, with its answer's encoding (the bytes it is
// replayed as), in format 1: the same with bytes body in place of the
// answer status. code is the answer's codeOf. A receipt of a hold, or of
// its confirmation or release, is format=3: format 2 followed by
//
//	bytes hold id | varint hold deadline (Unix ns, 0 for none) |
//	uvarint time to live (seconds)
//
// A limit_reached answer's receipt is format=4: format 3 followed by
//
//	uvarint max per person | uvarint already
//
// and the receipt of an operator's correction of a delivery (retry or
// skip) is format=5: format 2 followed by
//
//	bytes delivery id
//
// A receipt that names a waiting list entry (a request that joined the
// list, "waiting", or a leaving of it) is format=6: format 2 followed by
//
//	bytes entry id | uvarint position (0 for none)
func encodeReceipt(r engine.Receipt) ([]byte, error) {
	fp, err := hex.DecodeString(r.Fingerprint)
	if err != nil || len(fp) != 32 {
		return nil, fmt.Errorf("fingerprint %q is not 32 hex bytes", r.Fingerprint)
	}
	a := r.Answer
	format, tail := byte(recordReceiptStatus), []byte(a.Status)
	hold := r.HoldID != "" || !r.HoldExpiresAt.IsZero() || r.HoldTTLSeconds != 0
	limit := r.Limit != engine.Limit{}
	delivery := r.DeliveryID != ""
	entry := r.EntryID != "" || r.Position != 0
	switch {
	case (hold || limit || delivery || entry) && (a.Verbatim() || a != r.AnswerOf(a.Status) || r.Request.Quantity < 0 || r.HoldTTLSeconds < 0 || r.Limit.MaxPerPerson < 0 || r.Limit.Already < 0 || r.Position < 0):
		return nil, fmt.Errorf("receipt of a hold operation, a limit, a delivery's correction or a waiting list with an answer %q that is not the one built from its members", a.JSON())
	case delivery && (hold || limit):
		return nil, fmt.Errorf("receipt names delivery %s and a hold or a limit too", r.DeliveryID)
	case entry && (hold || limit || delivery || r.EntryID == ""):
		return nil, fmt.Errorf("receipt names waiting list entry %q (position %d) and a hold, a limit or a delivery too, or no entry", r.EntryID, r.Position)
	case entry:
		format = recordReceiptEntry
	case delivery:
		format = recordReceiptDelivery
	case limit:
		format = recordReceiptLimit
	case hold:
		format = recordReceiptHold
	case a.Verbatim() || a != r.AnswerOf(a.Status) || r.Request.Quantity < 0:
		format, tail = recordFormat1, a.JSON()
	}
	b := make([]byte, 0, 64+len(r.Request.Workshop)+len(r.ReservationID)+len(tail))
	b = append(b, format)
	b = binary.AppendUvarint(b, uint64(r.FingerprintVersion))
	b = append(b, fp...)
	b = binary.AppendUvarint(b, codeOf(a.Kind, a.Status))
	b = binary.AppendVarint(b, r.CreatedAt.UnixNano())
	b = appendBytes(b, []byte(r.Request.Workshop))
	b = binary.AppendUvarint(b, uint64(r.Request.Quantity))
	b = appendBytes(b, []byte(r.ReservationID))
	b = appendBytes(b, tail)
	if format == recordReceiptHold || format == recordReceiptLimit {
		b = appendBytes(b, []byte(r.HoldID))
		b = binary.AppendVarint(b, unixNanoOrZero(r.HoldExpiresAt))
		b = binary.AppendUvarint(b, uint64(r.HoldTTLSeconds))
	}
	if format == recordReceiptLimit {
		b = binary.AppendUvarint(b, uint64(r.Limit.MaxPerPerson))
		b = binary.AppendUvarint(b, uint64(r.Limit.Already))
	}
	if format == recordReceiptDelivery {
		b = appendBytes(b, []byte(r.DeliveryID))
	}
	if format == recordReceiptEntry {
		b = appendBytes(b, []byte(r.EntryID))
		b = binary.AppendUvarint(b, uint64(r.Position))
	}
	return b, nil
}

// recordReceiptHold is the format byte of a receipt of a hold operation,
// new in schema version 4.
const recordReceiptHold = 3

// recordReceiptLimit is the format byte of a receipt of a limit_reached
// answer, new in schema version 8.
const recordReceiptLimit = 4

// recordReceiptDelivery is the format byte of a receipt of an operator's
// correction of a delivery, new in schema version 10.
const recordReceiptDelivery = 5

// recordReceiptEntry is the format byte of a receipt that names a waiting
// list entry, new in schema version 11.
const recordReceiptEntry = 6

// unixNanoOrZero returns t in Unix nanoseconds, 0 for the zero time;
// timeOrZero is its inverse.
func unixNanoOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func timeOrZero(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// anyWide reports whether a time of times (other than the zero time) lies
// beyond the years that Unix nanoseconds in an int64 hold (1678 to 2262),
// so that a record keeping them needs its wide format, which appendTime
// and decoder.time then write and read.
func anyWide(times []time.Time) bool {
	for _, at := range times {
		if !at.IsZero() && (at.Before(minNanoTime) || at.After(maxNanoTime)) {
			return true
		}
	}
	return false
}

// appendTime appends at as varint Unix nanoseconds (0 for the zero time),
// or, in a wide record, as varint Unix seconds then uvarint nanoseconds.
func appendTime(b []byte, at time.Time, wide bool) []byte {
	if wide {
		return binary.AppendUvarint(binary.AppendVarint(b, at.Unix()), uint64(at.Nanosecond()))
	}
	return binary.AppendVarint(b, unixNanoOrZero(at))
}

// answerCodes are the numbers that receipts and tombstones of every schema
// version carry for the (kind, status) of their answer: the HTTP status the
// answer had when they were written, which older versions of reserved read
// back.
var answerCodes = []struct {
	kind   engine.OperationKind
	status string
	code   uint64
}{
	{engine.OperationReserve, engine.StatusReserved, 201},
	{engine.OperationReserve, engine.StatusUnavailable, 409},
	{engine.OperationCancel, engine.StatusCancelled, 200},
	{engine.OperationCancel, engine.StatusAlreadyCancelled, 409},
}

// codeOf returns the code of (kind, status), 0 for one without.
func codeOf(kind engine.OperationKind, status string) uint64 {
	for _, c := range answerCodes {
		if c.kind == kind && c.status == status {
			return c.code
		}
	}
	return 0
}

// statusOf returns the status of kind whose code is code, "" for none.
func statusOf(kind engine.OperationKind, code uint64) string {
	for _, c := range answerCodes {
		if c.kind == kind && c.code == code {
			return c.status
		}
	}
	return ""
}

func decodeReceipt(key, raw []byte) (engine.Receipt, error) {
	actor, opKey, ok := splitReceiptKey(key)
	if !ok {
		return engine.Receipt{}, fmt.Errorf("receipt key %q has no actor separator", key)
	}
	d := decoder{b: raw}
	format := d.formatOf(recordFormat1, recordReceiptStatus, recordReceiptHold, recordReceiptLimit, recordReceiptDelivery, recordReceiptEntry)
	r := engine.Receipt{Actor: actor, OperationKey: opKey}
	r.FingerprintVersion = engine.FingerprintVersion(d.uvarint())
	r.Fingerprint = hex.EncodeToString(d.fixed(32))
	code := d.uvarint()
	r.CreatedAt = time.Unix(0, d.varint()).UTC()
	r.Request.Workshop = string(d.bytes())
	r.Request.Quantity = int(d.uvarint())
	r.ReservationID = string(d.bytes())
	tail := d.bytes()
	if format == recordReceiptHold || format == recordReceiptLimit {
		r.HoldID = string(d.bytes())
		r.HoldExpiresAt = timeOrZero(d.varint())
		r.HoldTTLSeconds = int(d.uvarint())
	}
	if format == recordReceiptLimit {
		r.Limit.MaxPerPerson = int(d.uvarint())
		r.Limit.Already = int(d.uvarint())
	}
	if format == recordReceiptDelivery {
		if r.DeliveryID = string(d.bytes()); r.DeliveryID == "" {
			d.fail(errors.New("receipt of a delivery's correction without a delivery id"))
		}
	}
	if format == recordReceiptEntry {
		if r.EntryID = string(d.bytes()); r.EntryID == "" {
			d.fail(errors.New("receipt of a waiting list without an entry id"))
		}
		if p := d.uvarint(); p <= math.MaxInt32 {
			r.Position = int(p)
		} else {
			d.fail(fmt.Errorf("position %d out of range", p))
		}
	}
	if err := d.end(); err != nil {
		return r, err
	}
	if format != recordFormat1 {
		r.Answer = r.AnswerOf(string(tail))
	} else {
		r.Answer = engine.StoredAnswer(r.Kind(), statusOf(r.Kind(), code), tail)
	}
	return r, nil
}

// tombstoneJSON is the layout of a tombstone, JSON in every schema
// version.
type tombstoneJSON struct {
	Actor              string                    `json:"actor"`
	OperationKey       engine.OperationKey       `json:"operation"`
	FingerprintVersion engine.FingerprintVersion `json:"fingerprint_version"`
	Fingerprint        string                    `json:"fingerprint"`
	Code               uint64                    `json:"http_status"`
	Status             string                    `json:"status"`
	ReservationID      string                    `json:"reservation_id,omitempty"`
	HoldID             string                    `json:"hold_id,omitempty"`
	DeliveryID         string                    `json:"delivery_id,omitempty"`
	EntryID            string                    `json:"entry_id,omitempty"`
	Workshop           string                    `json:"workshop"`
	Quantity           int                       `json:"quantity"`
	Position           int                       `json:"position,omitempty"`
	ExpiresAt          time.Time                 `json:"expires_at,omitzero"`
	Limit              *limitJSON                `json:"limit,omitempty"`
	CreatedAt          time.Time                 `json:"created_at"`
	PurgedAt           time.Time                 `json:"purged_at"`
}

// limitJSON is the limit a tombstone of a limit_reached answer keeps.
type limitJSON struct {
	MaxPerPerson int `json:"max_per_person"`
	Already      int `json:"already"`
}

func encodeTombstone(t engine.Tombstone) tombstoneJSON {
	a := t.Answer
	j := tombstoneJSON{Actor: t.Actor, OperationKey: t.OperationKey, FingerprintVersion: t.FingerprintVersion, Fingerprint: t.Fingerprint,
		Code: codeOf(a.Kind, a.Status), Status: a.Status, ReservationID: a.ReservationID, HoldID: a.HoldID, DeliveryID: a.DeliveryID, EntryID: a.EntryID,
		Workshop: a.Workshop, Quantity: a.Quantity, Position: a.Position, ExpiresAt: a.ExpiresAt, CreatedAt: t.CreatedAt, PurgedAt: t.PurgedAt}
	if a.Limit != (engine.Limit{}) {
		j.Limit = &limitJSON{MaxPerPerson: a.Limit.MaxPerPerson, Already: a.Limit.Already}
	}
	return j
}

func (j tombstoneJSON) tombstone() engine.Tombstone {
	t := engine.Tombstone{Actor: j.Actor, OperationKey: j.OperationKey, FingerprintVersion: j.FingerprintVersion, Fingerprint: j.Fingerprint,
		CreatedAt: j.CreatedAt, PurgedAt: j.PurgedAt}
	t.Answer = engine.Answer{Kind: t.Kind(), Status: j.Status, ReservationID: j.ReservationID, HoldID: j.HoldID,
		DeliveryID: j.DeliveryID, EntryID: j.EntryID, Workshop: j.Workshop, Quantity: j.Quantity, Position: j.Position, ExpiresAt: j.ExpiresAt}
	if j.Limit != nil {
		t.Answer.Limit = engine.Limit{MaxPerPerson: j.Limit.MaxPerPerson, Already: j.Limit.Already}
	}
	return t
}

// recordCancelled is the format byte of a cancelled reservation: format 1
// followed by the cancellation.
const recordCancelled = 2

// encodeReservation lays out an active reservation as:
//
//	format=1 | bytes actor | bytes operation key | bytes workshop |
//	uvarint quantity | varint created (Unix ns)
//
// and a cancelled one as format=2, the same fields, then
//
//	varint cancelled (Unix ns) | bytes cancelled by | bytes cancel key
func encodeReservation(r engine.Reservation) []byte {
	b := make([]byte, 0, 24+len(r.Actor)+len(r.OperationKey)+len(r.Workshop))
	b = append(b, recordFormat1)
	if r.Cancelled() {
		b[0] = recordCancelled
	}
	b = appendBytes(b, []byte(r.Actor))
	b = appendBytes(b, []byte(r.OperationKey))
	b = appendBytes(b, []byte(r.Workshop))
	b = binary.AppendUvarint(b, uint64(r.Quantity))
	b = binary.AppendVarint(b, r.CreatedAt.UnixNano())
	if r.Cancelled() {
		b = binary.AppendVarint(b, r.CancelledAt.UnixNano())
		b = appendBytes(b, []byte(r.CancelledBy))
		b = appendBytes(b, []byte(r.CancelOperation))
	}
	return b
}

func decodeReservation(key, raw []byte) (engine.Reservation, error) {
	d := decoder{b: raw}
	cancelled := d.formatOf(recordFormat1, recordCancelled) == recordCancelled
	r := engine.Reservation{ID: string(key)}
	r.Actor = string(d.bytes())
	r.OperationKey = engine.OperationKey(d.bytes())
	r.Workshop = string(d.bytes())
	r.Quantity = int(d.uvarint())
	r.CreatedAt = time.Unix(0, d.varint()).UTC()
	if cancelled {
		r.CancelledAt = time.Unix(0, d.varint()).UTC()
		r.CancelledBy = string(d.bytes())
		r.CancelOperation = engine.OperationKey(d.bytes())
	}
	return r, d.end()
}

// encodeWorkshop lays out a workshop as:
//
//	format=1 | bytes title | varint capacity | varint reserved |
//	varint max quantity | uvarint version
//
// The counts are signed so that a broken record (which Check reports) is
// stored as it is.
//
// and one with places in open holds as format=2, the same fields, then
// varint holding; a hidden one as format=3, the fields of format 2, then
// uvarint flags (workshopHidden); one with a schedule as format=4, the
// fields of format 3 (flags 0 when it is listed), then
//
//	bytes description | bytes location | bytes time zone |
//	varint starts | varint ends | varint registration opens |
//	varint registration closes | uvarint max per person
//
// with times in Unix nanoseconds (0 for none); one with people on its
// waiting list or an offer time to live of its own as format=5, the
// fields of format 4 (an empty schedule when it has none), then
//
//	varint waiting | varint offer time to live (seconds, 0 for the default)
//
// A workshop is written in the lowest format that holds it, so a record
// an earlier version wrote is rewritten byte for byte.
func encodeWorkshop(w engine.Workshop) []byte {
	s := w.Schedule
	b := make([]byte, 0, 40+len(w.Title)+len(s.Description)+len(s.Location)+len(s.TimeZone))
	format := byte(recordFormat1)
	switch {
	case w.Waiting != 0 || w.OfferTTLSeconds != 0:
		format = recordWorkshopWaitlist
	case !s.IsZero():
		format = recordWorkshopSchedule
	case w.Hidden:
		format = recordWorkshopFlags
	case w.Holding != 0:
		format = recordWorkshopHolding
	}
	b = append(b, format)
	b = appendBytes(b, []byte(w.Title))
	b = binary.AppendVarint(b, int64(w.Capacity))
	b = binary.AppendVarint(b, int64(w.Reserved))
	b = binary.AppendVarint(b, int64(w.MaxQuantity))
	b = binary.AppendUvarint(b, w.Version)
	if format >= recordWorkshopHolding {
		b = binary.AppendVarint(b, int64(w.Holding))
	}
	if format >= recordWorkshopFlags {
		var flags uint64
		if w.Hidden {
			flags = workshopHidden
		}
		b = binary.AppendUvarint(b, flags)
	}
	if format >= recordWorkshopSchedule {
		b = appendBytes(b, []byte(s.Description))
		b = appendBytes(b, []byte(s.Location))
		b = appendBytes(b, []byte(s.TimeZone))
		for _, t := range []time.Time{s.StartsAt, s.EndsAt, s.RegistrationOpensAt, s.RegistrationClosesAt} {
			b = binary.AppendVarint(b, unixNanoOrZero(t))
		}
		b = binary.AppendUvarint(b, uint64(s.MaxPerPerson))
	}
	if format == recordWorkshopWaitlist {
		b = binary.AppendVarint(b, int64(w.Waiting))
		b = binary.AppendVarint(b, int64(w.OfferTTLSeconds))
	}
	return b
}

const (
	// recordWorkshopHolding is the format byte of a workshop with places
	// in open holds, new in schema version 4.
	recordWorkshopHolding = 2
	// recordWorkshopFlags is the format byte of a workshop with flags,
	// new in schema version 5.
	recordWorkshopFlags = 3
	// recordWorkshopSchedule is the format byte of a workshop with a
	// schedule, new in schema version 8.
	recordWorkshopSchedule = 4
	// recordWorkshopWaitlist is the format byte of a workshop with people
	// on its waiting list or an offer time to live of its own, new in
	// schema version 11.
	recordWorkshopWaitlist = 5
	// workshopHidden is the flag of a hidden workshop; no other flag is
	// defined, and a record with another one is refused as damaged.
	workshopHidden = 1
)

func decodeWorkshop(key, raw []byte) (engine.Workshop, error) {
	if isJSON(raw) {
		var r workshopJSON
		if err := json.Unmarshal(raw, &r); err != nil {
			return engine.Workshop{}, err
		}
		return engine.Workshop{ID: r.ID, Title: r.Title, Capacity: r.Capacity, Reserved: r.Reserved, MaxQuantity: r.MaxQuantity, Version: r.Version}, nil
	}
	d := decoder{b: raw}
	format := d.formatOf(recordFormat1, recordWorkshopHolding, recordWorkshopFlags, recordWorkshopSchedule, recordWorkshopWaitlist)
	w := engine.Workshop{ID: string(key)}
	w.Title = string(d.bytes())
	w.Capacity = int(d.varint())
	w.Reserved = int(d.varint())
	w.MaxQuantity = int(d.varint())
	w.Version = d.uvarint()
	if format >= recordWorkshopHolding {
		w.Holding = int(d.varint())
	}
	if format >= recordWorkshopFlags {
		flags := d.uvarint()
		switch {
		case d.err != nil:
		case flags == workshopHidden:
			w.Hidden = true
		case flags != 0 || format == recordWorkshopFlags:
			d.fail(fmt.Errorf("unknown workshop flags %#x", flags))
		}
	}
	if format >= recordWorkshopSchedule {
		s := &w.Schedule
		s.Description = string(d.bytes())
		s.Location = string(d.bytes())
		s.TimeZone = string(d.bytes())
		for _, t := range []*time.Time{&s.StartsAt, &s.EndsAt, &s.RegistrationOpensAt, &s.RegistrationClosesAt} {
			*t = timeOrZero(d.varint())
		}
		s.MaxPerPerson = int(d.uvarint())
	}
	if format == recordWorkshopWaitlist {
		w.Waiting = int(d.varint())
		w.OfferTTLSeconds = int(d.varint())
	}
	return w, d.end()
}

// workshopJSON is the JSON layout of workshops written before the binary one.
type workshopJSON struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Capacity    int    `json:"capacity"`
	Reserved    int    `json:"reserved"`
	MaxQuantity int    `json:"max_quantity"`
	Version     uint64 `json:"version"`
}

// recordEventMembers is the format byte of an outbox event stored as the
// members its payload is built from (engine.Event.Payload), instead of the
// payload itself: the payload repeated every member in JSON and made outbox
// events half of a database's bytes. Receipts (above) and events of format
// 2 are new in schema version 3.
const recordEventMembers = 2

// The format bytes of a hold's event (one with a hold id), new in schema
// version 10: format 3 is format 2 and format 4 is format 1, each followed
// by the hold id. A reservation's event has none and keeps format 2 or 1.
const (
	recordEventHoldMembers = 3
	recordEventHoldPayload = 4
)

// The format bytes of a hold's event that names its hold's deadline, new
// in schema version 14: format 5 is format 3 and format 6 is format 4,
// each followed by the deadline. A hold's event of an earlier version
// keeps format 3 or 4, and reads with no deadline.
const (
	recordEventHoldDeadlineMembers = 5
	recordEventHoldDeadlinePayload = 6
)

// encodeEvent lays out an event whose payload is built from its members,
// and built the same from the members it reads back, as:
//
//	format=2 | bytes type | bytes reservation id | bytes owner | bytes actor |
//	bytes operation key | bytes workshop | uvarint quantity |
//	varint created (Unix ns) | uvarint delivered? | [varint delivered (Unix ns)]
//
// and any other event (one read from an older record, say), with its
// payload kept as it is, as:
//
//	format=1 | bytes type | bytes reservation id | bytes actor |
//	bytes operation key | varint created (Unix ns) | uvarint delivered? |
//	[varint delivered (Unix ns)] | bytes payload
//
// A hold's event is laid out the same with format 3 (for 2) or 4 (for 1),
// followed by
//
//	bytes hold id
//
// and, when it names its hold's deadline, with format 5 (for 3) or 6 (for
// 4), followed by that too:
//
//	bytes hold id | varint deadline (Unix ns)
func encodeEvent(e engine.Event) ([]byte, error) {
	readBack := time.Unix(0, e.CreatedAt.UnixNano()).UTC()
	members := !e.StoredPayload() && e.Owner != "" && e.Quantity >= 0 && readBack.Equal(e.CreatedAt) && e.CreatedAt.Location() == time.UTC
	b := make([]byte, 0, 48+len(e.Type)+len(e.ReservationID)+len(e.HoldID)+len(e.Owner)+len(e.Actor)+len(e.OperationKey)+len(e.Workshop))
	if members {
		b = append(b, recordEventMembers)
		b = appendBytes(b, []byte(e.Type))
		b = appendBytes(b, []byte(e.ReservationID))
		b = appendBytes(b, []byte(e.Owner))
		b = appendBytes(b, []byte(e.Actor))
		b = appendBytes(b, []byte(e.OperationKey))
		b = appendBytes(b, []byte(e.Workshop))
		b = binary.AppendUvarint(b, uint64(e.Quantity))
		b = binary.AppendVarint(b, e.CreatedAt.UnixNano())
		return appendHold(appendDelivered(b, e), e, recordEventHoldMembers), nil
	}
	payload, err := e.Payload()
	if err != nil {
		return nil, fmt.Errorf("event %s: %w", e.ID, err)
	}
	b = append(b, recordFormat1)
	b = appendBytes(b, []byte(e.Type))
	b = appendBytes(b, []byte(e.ReservationID))
	b = appendBytes(b, []byte(e.Actor))
	b = appendBytes(b, []byte(e.OperationKey))
	b = binary.AppendVarint(b, e.CreatedAt.UnixNano())
	b = appendDelivered(b, e)
	return appendHold(appendBytes(b, payload), e, recordEventHoldPayload), nil
}

// appendHold turns b, the layout of e without a hold, into the layout of
// a hold's event of format, when e names a hold, or of the format two
// above it, when e names its hold's deadline too. A deadline beyond the
// years that Unix nanoseconds in an int64 hold is left out (the event
// then has no reminder).
func appendHold(b []byte, e engine.Event, format byte) []byte {
	if e.HoldID == "" {
		return b
	}
	b[0] = format
	b = appendBytes(b, []byte(e.HoldID))
	if at := e.HoldExpiresAt; !at.IsZero() && time.Unix(0, at.UnixNano()).Equal(at) {
		b[0] = format + 2
		b = binary.AppendVarint(b, at.UnixNano())
	}
	return b
}

// appendDelivered appends whether e was delivered and when.
func appendDelivered(b []byte, e engine.Event) []byte {
	if e.Delivered() {
		b = binary.AppendUvarint(b, 1)
		return binary.AppendVarint(b, e.DeliveredAt.UnixNano())
	}
	return binary.AppendUvarint(b, 0)
}

// eventJSON is the layout of events in schema version 1.
type eventJSON struct {
	ID            string              `json:"id"`
	Type          string              `json:"type"`
	ReservationID string              `json:"reservation_id"`
	Actor         string              `json:"actor"`
	OperationKey  engine.OperationKey `json:"operation"`
	Payload       []byte              `json:"payload"`
	CreatedAt     time.Time           `json:"created_at"`
	DeliveredAt   time.Time           `json:"delivered_at,omitzero"`
}

func decodeEvent(key, raw []byte) (engine.Event, error) {
	var e engine.Event
	if isJSON(raw) {
		var j eventJSON
		err := json.Unmarshal(raw, &j)
		e = engine.Event{ID: j.ID, Type: j.Type, ReservationID: j.ReservationID, Actor: j.Actor, OperationKey: j.OperationKey,
			CreatedAt: j.CreatedAt, DeliveredAt: j.DeliveredAt}
		return e.WithStoredPayload(j.Payload), err
	}
	d := decoder{b: raw}
	format := d.formatOf(recordFormat1, recordEventMembers, recordEventHoldMembers, recordEventHoldPayload,
		recordEventHoldDeadlineMembers, recordEventHoldDeadlinePayload)
	members := format == recordEventMembers || format == recordEventHoldMembers || format == recordEventHoldDeadlineMembers
	e.ID = string(key)
	e.Type = string(d.bytes())
	e.ReservationID = string(d.bytes())
	if members {
		e.Owner = string(d.bytes())
	}
	e.Actor = string(d.bytes())
	e.OperationKey = engine.OperationKey(d.bytes())
	if members {
		e.Workshop = string(d.bytes())
		if q := d.uvarint(); q <= math.MaxInt {
			e.Quantity = int(q)
		} else {
			d.fail(fmt.Errorf("quantity %d out of range", q))
		}
		if e.Owner == "" {
			d.fail(errors.New("event without an owner"))
		}
	}
	e.CreatedAt = time.Unix(0, d.varint()).UTC()
	switch d.uvarint() {
	case 0:
	case 1:
		e.DeliveredAt = time.Unix(0, d.varint()).UTC()
	default:
		d.fail(errors.New("bad delivered flag"))
	}
	if !members {
		e = e.WithStoredPayload(d.bytes())
	}
	if format >= recordEventHoldMembers {
		if e.HoldID = string(d.bytes()); e.HoldID == "" {
			d.fail(errors.New("hold event without a hold id"))
		}
	}
	if format >= recordEventHoldDeadlineMembers {
		e.HoldExpiresAt = time.Unix(0, d.varint()).UTC()
	}
	return e, d.end()
}

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// decoder reads the binary layout and remembers the first error, so decode
// functions read straight through and check once at the end.
type decoder struct {
	b   []byte
	err error
}

var errShort = errors.New("record ends early")

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.b = nil
}

// formatOf reads the format byte, which must be one of allowed, and
// returns it (0 after a failure).
func (d *decoder) formatOf(allowed ...byte) byte {
	if len(d.b) > 0 {
		for _, f := range allowed {
			if d.b[0] == f {
				d.b = d.b[1:]
				return f
			}
		}
	}
	d.fail(errors.New("unknown record format"))
	return 0
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(errShort)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(errShort)
		return 0
	}
	d.b = d.b[n:]
	return v
}

// time reads a time that appendTime wrote, in UTC.
func (d *decoder) time(wide bool) time.Time {
	if !wide {
		return timeOrZero(d.varint())
	}
	sec, ns := d.varint(), d.uvarint()
	if ns >= uint64(time.Second) {
		d.fail(fmt.Errorf("%d nanoseconds in a second", ns))
	}
	return time.Unix(sec, int64(ns)).UTC()
}

func (d *decoder) fixed(n int) []byte {
	if len(d.b) < n {
		d.fail(errShort)
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

// bytes returns a copy, because bbolt's values are only valid inside their
// transaction.
func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail(errShort)
		return nil
	}
	return append([]byte(nil), d.fixed(int(n))...)
}

func (d *decoder) end() error {
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%d bytes of trailing data", len(d.b))
	}
	return d.err
}
