package boltstore

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
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

// encodeReceipt lays out a receipt as:
//
//	format=1 | uvarint fp version | 32 bytes fingerprint | uvarint status |
//	varint created (Unix ns) | bytes workshop | uvarint quantity |
//	bytes reservation id | bytes body
func encodeReceipt(r engine.Receipt) ([]byte, error) {
	fp, err := hex.DecodeString(r.Fingerprint)
	if err != nil || len(fp) != 32 {
		return nil, fmt.Errorf("fingerprint %q is not 32 hex bytes", r.Fingerprint)
	}
	b := make([]byte, 0, 64+len(r.Request.Workshop)+len(r.ReservationID)+len(r.Body))
	b = append(b, recordFormat1)
	b = binary.AppendUvarint(b, uint64(r.FingerprintVersion))
	b = append(b, fp...)
	b = binary.AppendUvarint(b, uint64(r.HTTPStatus))
	b = binary.AppendVarint(b, r.CreatedAt.UnixNano())
	b = appendBytes(b, []byte(r.Request.Workshop))
	b = binary.AppendUvarint(b, uint64(r.Request.Quantity))
	b = appendBytes(b, []byte(r.ReservationID))
	return appendBytes(b, r.Body), nil
}

func decodeReceipt(key, raw []byte) (engine.Receipt, error) {
	actor, opKey, ok := splitReceiptKey(key)
	if !ok {
		return engine.Receipt{}, fmt.Errorf("receipt key %q has no actor separator", key)
	}
	d := decoder{b: raw}
	d.format()
	r := engine.Receipt{Actor: actor, OperationKey: opKey}
	r.FingerprintVersion = int(d.uvarint())
	r.Fingerprint = hex.EncodeToString(d.fixed(32))
	r.HTTPStatus = int(d.uvarint())
	r.CreatedAt = time.Unix(0, d.varint()).UTC()
	r.Request.Workshop = string(d.bytes())
	r.Request.Quantity = int(d.uvarint())
	r.ReservationID = string(d.bytes())
	r.Body = d.bytes()
	return r, d.end()
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
	cancelled := len(raw) > 0 && raw[0] == recordCancelled
	d := decoder{b: raw}
	if cancelled {
		d.b = d.b[1:]
	} else {
		d.format()
	}
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
func encodeWorkshop(w engine.Workshop) []byte {
	b := make([]byte, 0, 32+len(w.Title))
	b = append(b, recordFormat1)
	b = appendBytes(b, []byte(w.Title))
	b = binary.AppendVarint(b, int64(w.Capacity))
	b = binary.AppendVarint(b, int64(w.Reserved))
	b = binary.AppendVarint(b, int64(w.MaxQuantity))
	return binary.AppendUvarint(b, w.Version)
}

func decodeWorkshop(key, raw []byte) (engine.Workshop, error) {
	if isJSON(raw) {
		var r workshopJSON
		if err := json.Unmarshal(raw, &r); err != nil {
			return engine.Workshop{}, err
		}
		return engine.Workshop{ID: r.ID, Title: r.Title, Capacity: r.Capacity, Reserved: r.Reserved, MaxQuantity: r.MaxQuantity, Version: r.Version}, nil
	}
	d := decoder{b: raw}
	d.format()
	w := engine.Workshop{ID: string(key)}
	w.Title = string(d.bytes())
	w.Capacity = int(d.varint())
	w.Reserved = int(d.varint())
	w.MaxQuantity = int(d.varint())
	w.Version = d.uvarint()
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

// encodeEvent lays out an outbox event as:
//
//	format=1 | bytes type | bytes reservation id | bytes actor |
//	bytes operation key | varint created (Unix ns) | uvarint delivered? |
//	[varint delivered (Unix ns)] | bytes payload
func encodeEvent(e engine.Event) []byte {
	b := make([]byte, 0, 48+len(e.Type)+len(e.ReservationID)+len(e.Actor)+len(e.OperationKey)+len(e.Payload))
	b = append(b, recordFormat1)
	b = appendBytes(b, []byte(e.Type))
	b = appendBytes(b, []byte(e.ReservationID))
	b = appendBytes(b, []byte(e.Actor))
	b = appendBytes(b, []byte(e.OperationKey))
	b = binary.AppendVarint(b, e.CreatedAt.UnixNano())
	if e.Delivered() {
		b = binary.AppendUvarint(b, 1)
		b = binary.AppendVarint(b, e.DeliveredAt.UnixNano())
	} else {
		b = binary.AppendUvarint(b, 0)
	}
	return appendBytes(b, e.Payload)
}

func decodeEvent(key, raw []byte) (engine.Event, error) {
	var e engine.Event
	if isJSON(raw) {
		err := json.Unmarshal(raw, &e)
		return e, err
	}
	d := decoder{b: raw}
	d.format()
	e.ID = string(key)
	e.Type = string(d.bytes())
	e.ReservationID = string(d.bytes())
	e.Actor = string(d.bytes())
	e.OperationKey = engine.OperationKey(d.bytes())
	e.CreatedAt = time.Unix(0, d.varint()).UTC()
	switch d.uvarint() {
	case 0:
	case 1:
		e.DeliveredAt = time.Unix(0, d.varint()).UTC()
	default:
		d.fail(errors.New("bad delivered flag"))
	}
	e.Payload = d.bytes()
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

func (d *decoder) format() {
	if len(d.b) == 0 || d.b[0] != recordFormat1 {
		d.fail(errors.New("unknown record format"))
		return
	}
	d.b = d.b[1:]
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
