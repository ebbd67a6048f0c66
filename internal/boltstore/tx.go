package boltstore

import (
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/reserve/reserve/internal/engine"
)

// tx adapts a bbolt transaction to engine.Tx. Records are stored as JSON of
// the storage types below, which decouple the file format from the engine's
// types.
type tx struct {
	b *bolt.Tx
}

var _ engine.Tx = (*tx)(nil)

type workshopRecord struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Capacity    int    `json:"capacity"`
	Reserved    int    `json:"reserved"`
	MaxQuantity int    `json:"max_quantity"`
	Version     uint64 `json:"version"`
}

type reservationRecord struct {
	ID        string    `json:"id"`
	Actor     string    `json:"actor"`
	Key       string    `json:"key"`
	Workshop  string    `json:"workshop"`
	Quantity  int       `json:"quantity"`
	CreatedAt time.Time `json:"created_at"`
}

type receiptRecord struct {
	Actor              string    `json:"actor"`
	Key                string    `json:"key"`
	FingerprintVersion int       `json:"fp_version"`
	Fingerprint        string    `json:"fp"`
	Workshop           string    `json:"workshop"`
	Quantity           int       `json:"quantity"`
	HTTPStatus         int       `json:"status"`
	Body               []byte    `json:"body"` // base64, so the bytes survive exactly.
	ReservationID      string    `json:"reservation_id,omitempty"`
	CreatedAt          time.Time `json:"created_at"`
}

// receiptKey is actor 0x00 key; actor names cannot contain 0x00.
func receiptKey(actor string, key engine.OperationKey) []byte {
	k := make([]byte, 0, len(actor)+1+len(key))
	k = append(k, actor...)
	k = append(k, 0)
	return append(k, key...)
}

func (t *tx) get(bucket []byte, key []byte, v any) (bool, error) {
	raw := t.b.Bucket(bucket).Get(key)
	if raw == nil {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return false, fmt.Errorf("decode %s/%q: %w", bucket, key, err)
	}
	return true, nil
}

func (t *tx) put(bucket []byte, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s/%q: %w", bucket, key, err)
	}
	if err := t.b.Bucket(bucket).Put(key, raw); err != nil {
		return fmt.Errorf("write %s/%q: %w", bucket, key, err)
	}
	return nil
}

func forEach[R any](t *tx, bucket []byte, fn func(R) error) error {
	return t.b.Bucket(bucket).ForEach(func(k, raw []byte) error {
		var r R
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("decode %s/%q: %w", bucket, k, err)
		}
		return fn(r)
	})
}

func (t *tx) Workshop(id string) (engine.Workshop, bool, error) {
	var r workshopRecord
	ok, err := t.get(bucketWorkshops, []byte(id), &r)
	return r.engine(), ok, err
}

func (t *tx) PutWorkshop(w engine.Workshop) error {
	return t.put(bucketWorkshops, []byte(w.ID), workshopRecord{
		ID: w.ID, Title: w.Title, Capacity: w.Capacity, Reserved: w.Reserved, MaxQuantity: w.MaxQuantity, Version: w.Version,
	})
}

func (t *tx) ForEachWorkshop(fn func(engine.Workshop) error) error {
	return forEach(t, bucketWorkshops, func(r workshopRecord) error { return fn(r.engine()) })
}

func (r workshopRecord) engine() engine.Workshop {
	return engine.Workshop{ID: r.ID, Title: r.Title, Capacity: r.Capacity, Reserved: r.Reserved, MaxQuantity: r.MaxQuantity, Version: r.Version}
}

func (t *tx) Reservation(id string) (engine.Reservation, bool, error) {
	var r reservationRecord
	ok, err := t.get(bucketReservations, []byte(id), &r)
	return r.engine(), ok, err
}

func (t *tx) PutReservation(r engine.Reservation) error {
	return t.put(bucketReservations, []byte(r.ID), reservationRecord{
		ID: r.ID, Actor: r.Actor, Key: string(r.OperationKey), Workshop: r.Workshop, Quantity: r.Quantity, CreatedAt: r.CreatedAt,
	})
}

func (t *tx) ForEachReservation(fn func(engine.Reservation) error) error {
	return forEach(t, bucketReservations, func(r reservationRecord) error { return fn(r.engine()) })
}

func (r reservationRecord) engine() engine.Reservation {
	return engine.Reservation{ID: r.ID, Actor: r.Actor, OperationKey: engine.OperationKey(r.Key), Workshop: r.Workshop, Quantity: r.Quantity, CreatedAt: r.CreatedAt}
}

func (t *tx) Receipt(actor string, key engine.OperationKey) (engine.Receipt, bool, error) {
	var r receiptRecord
	ok, err := t.get(bucketReceipts, receiptKey(actor, key), &r)
	return r.engine(), ok, err
}

func (t *tx) PutReceipt(r engine.Receipt) error {
	return t.put(bucketReceipts, receiptKey(r.Actor, r.OperationKey), receiptRecord{
		Actor: r.Actor, Key: string(r.OperationKey),
		FingerprintVersion: r.FingerprintVersion, Fingerprint: r.Fingerprint,
		Workshop: r.Request.Workshop, Quantity: r.Request.Quantity,
		HTTPStatus: r.HTTPStatus, Body: r.Body, ReservationID: r.ReservationID, CreatedAt: r.CreatedAt,
	})
}

func (t *tx) ForEachReceipt(fn func(engine.Receipt) error) error {
	return forEach(t, bucketReceipts, func(r receiptRecord) error { return fn(r.engine()) })
}

func (r receiptRecord) engine() engine.Receipt {
	return engine.Receipt{
		Actor: r.Actor, OperationKey: engine.OperationKey(r.Key),
		FingerprintVersion: r.FingerprintVersion, Fingerprint: r.Fingerprint,
		Request:    engine.Request{Workshop: r.Workshop, Quantity: r.Quantity},
		HTTPStatus: r.HTTPStatus, Body: r.Body, ReservationID: r.ReservationID, CreatedAt: r.CreatedAt,
	}
}

func (t *tx) Token(hash string) (engine.TokenRecord, bool, error) {
	var r engine.TokenRecord
	ok, err := t.get(bucketTokens, []byte(hash), &r)
	return r, ok, err
}

func (t *tx) PutToken(r engine.TokenRecord) error {
	return t.put(bucketTokens, []byte(r.Hash), r)
}
