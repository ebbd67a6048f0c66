package boltstore

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// Receipts and reservations are the records of which there are millions, so
// they use a compact binary layout: a format byte, then fields as varints and
// length-prefixed bytes. Their identity (actor and operation key, or the
// reservation id) lives in the bbolt key and is not repeated in the value.
// Workshops and tokens are few and stay JSON.
const recordFormat1 = 1

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
