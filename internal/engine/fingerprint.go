package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
)

// FingerprintVersion names one canonical encoding of an operation's
// payload: the one a stored fingerprint hashes. Stores keep it with every
// receipt and tombstone; a future encoding gets a new version, and stored
// fingerprints keep comparing under their own.
type FingerprintVersion int

// The fingerprint versions, one per canonical encoding.
const (
	// ReserveFingerprintV1 is the encoding that Fingerprint hashes.
	ReserveFingerprintV1 FingerprintVersion = 1
	// CancelFingerprintV1 is the encoding that CancelFingerprint hashes.
	CancelFingerprintV1 FingerprintVersion = 2
	// HoldFingerprintV1 is the encoding that HoldFingerprint hashes.
	HoldFingerprintV1 FingerprintVersion = 3
	// ConfirmFingerprintV1 and ReleaseFingerprintV1 are the encodings that
	// SettleFingerprint hashes for each of the two kinds.
	ConfirmFingerprintV1 FingerprintVersion = 4
	ReleaseFingerprintV1 FingerprintVersion = 5
	// RetryDeliveryFingerprintV1 and SkipDeliveryFingerprintV1 are the
	// encodings that DeliveryFingerprint hashes for each of the two kinds.
	RetryDeliveryFingerprintV1 FingerprintVersion = 6
	SkipDeliveryFingerprintV1  FingerprintVersion = 7
	// WaitlistFingerprintV1 is the encoding that WaitlistFingerprint
	// hashes: a reservation request that joins the waiting list when it
	// cannot be reserved. A request without "waitlist" keeps
	// ReserveFingerprintV1, so a key used with one never matches the
	// other.
	WaitlistFingerprintV1 FingerprintVersion = 8
	// LeaveWaitlistFingerprintV1 is the encoding that SettleFingerprint
	// hashes for leaving a waiting list.
	LeaveWaitlistFingerprintV1 FingerprintVersion = 9
)

// fingerprintVersions is the one table of fingerprint versions: the kind of
// operation whose payloads each version encodes, and its fingerprint of a
// payload. Every version belongs to exactly one kind, so a stored version
// also says which kind of operation its key was used for, and a key used to
// reserve never matches a cancellation (or the other way round).
var fingerprintVersions = map[FingerprintVersion]struct {
	kind        OperationKind
	fingerprint func(payload) string
}{
	ReserveFingerprintV1: {OperationReserve, func(p payload) string { return Fingerprint(p.req) }},
	CancelFingerprintV1:  {OperationCancel, func(p payload) string { return CancelFingerprint(p.reservationID) }},
	HoldFingerprintV1:    {OperationHold, func(p payload) string { return HoldFingerprint(p.hold) }},
	ConfirmFingerprintV1: {OperationConfirm, func(p payload) string { return SettleFingerprint(OperationConfirm, p.holdID) }},
	ReleaseFingerprintV1: {OperationRelease, func(p payload) string { return SettleFingerprint(OperationRelease, p.holdID) }},
	RetryDeliveryFingerprintV1: {OperationRetryDelivery, func(p payload) string {
		return DeliveryFingerprint(OperationRetryDelivery, p.deliveryID)
	}},
	SkipDeliveryFingerprintV1: {OperationSkipDelivery, func(p payload) string {
		return DeliveryFingerprint(OperationSkipDelivery, p.deliveryID)
	}},
	WaitlistFingerprintV1: {OperationReserve, func(p payload) string { return WaitlistFingerprint(p.req) }},
	LeaveWaitlistFingerprintV1: {OperationLeaveWaitlist, func(p payload) string {
		return SettleFingerprint(OperationLeaveWaitlist, p.entryID)
	}},
}

// fingerprintVersionOf is the fingerprint version each kind of operation
// writes.
var fingerprintVersionOf = map[OperationKind]FingerprintVersion{
	OperationReserve:       ReserveFingerprintV1,
	OperationCancel:        CancelFingerprintV1,
	OperationHold:          HoldFingerprintV1,
	OperationConfirm:       ConfirmFingerprintV1,
	OperationRelease:       ReleaseFingerprintV1,
	OperationRetryDelivery: RetryDeliveryFingerprintV1,
	OperationSkipDelivery:  SkipDeliveryFingerprintV1,
	OperationLeaveWaitlist: LeaveWaitlistFingerprintV1,
}

// Kind returns the kind of operation whose payloads v encodes ("" for a
// version this engine does not know).
func (v FingerprintVersion) Kind() OperationKind { return fingerprintVersions[v].kind }

// Fingerprint returns the hex SHA-256 of the version-1 canonical encoding of
// exactly (workshop, quantity):
//
//	"reserve-request-v1\n" workshop "\n" decimal(quantity) "\n"
//
// Workshop ids cannot contain a newline, so the encoding is unambiguous, and
// the order or spelling of the JSON members never changes it.
func Fingerprint(r Request) string {
	buf := make([]byte, 0, 64)
	buf = append(buf, "reserve-request-v1\n"...)
	buf = append(buf, r.Workshop...)
	buf = append(buf, '\n')
	buf = strconv.AppendInt(buf, int64(r.Quantity), 10)
	buf = append(buf, '\n')
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:])
}

// WaitlistFingerprint returns the hex SHA-256 of the canonical encoding
// of a reservation request that joins the waiting list if it must:
//
//	"reserve-waitlist-v1\n" workshop "\n" decimal(quantity) "\n"
func WaitlistFingerprint(r Request) string {
	sum := sha256.Sum256([]byte("reserve-waitlist-v1\n" + r.Workshop + "\n" + strconv.Itoa(r.Quantity) + "\n"))
	return hex.EncodeToString(sum[:])
}

// CancelFingerprint returns the hex SHA-256 of the canonical encoding of a
// cancellation of reservation id:
//
//	"reserve-cancel-v1\n" id "\n"
//
// The prefix differs from every reservation encoding, so no cancellation
// and reservation payload share a fingerprint.
func CancelFingerprint(reservationID string) string {
	sum := sha256.Sum256([]byte("reserve-cancel-v1\n" + reservationID + "\n"))
	return hex.EncodeToString(sum[:])
}

// HoldFingerprint returns the hex SHA-256 of the canonical encoding of a
// hold request, its time to live included:
//
//	"reserve-hold-v1\n" workshop "\n" decimal(quantity) "\n" decimal(ttl seconds) "\n"
func HoldFingerprint(r HoldRequest) string {
	buf := make([]byte, 0, 80)
	buf = append(buf, "reserve-hold-v1\n"...)
	buf = append(buf, r.Workshop...)
	buf = append(buf, '\n')
	buf = strconv.AppendInt(buf, int64(r.Quantity), 10)
	buf = append(buf, '\n')
	buf = strconv.AppendInt(buf, int64(r.TTLSeconds), 10)
	buf = append(buf, '\n')
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:])
}

// SettleFingerprint returns the hex SHA-256 of the canonical encoding of
// the confirmation or release (kind) of hold id:
//
//	"reserve-" kind "-v1\n" id "\n"
//
// so that a key used to confirm a hold never matches its release.
func SettleFingerprint(kind OperationKind, holdID string) string {
	sum := sha256.Sum256([]byte("reserve-" + string(kind) + "-v1\n" + holdID + "\n"))
	return hex.EncodeToString(sum[:])
}

// DeliveryFingerprint returns the hex SHA-256 of the canonical encoding of
// an operator's correction (kind) of delivery id:
//
//	"reserve-" kind "-v1\n" id "\n"
func DeliveryFingerprint(kind OperationKind, id string) string {
	return SettleFingerprint(kind, id)
}

// payload is what an operation key is being used for: a reservation
// request, the cancellation of a reservation, a hold request, or the
// confirmation or release of a hold.
type payload struct {
	kind          OperationKind
	req           Request
	reservationID string
	hold          HoldRequest
	holdID        string
	deliveryID    string
	entryID       string
}

// version returns the fingerprint version p is stored with: its kind's,
// or WaitlistFingerprintV1 for a request that joins a waiting list.
func (p payload) version() FingerprintVersion {
	if p.kind == OperationReserve && p.req.Waitlist {
		return WaitlistFingerprintV1
	}
	return fingerprintVersionOf[p.kind]
}

// fingerprint returns the version and fingerprint p is stored with.
func (p payload) fingerprint() (FingerprintVersion, string) {
	v := p.version()
	return v, fingerprintVersions[v].fingerprint(p)
}

// matches reports whether a stored (version, fingerprint) is the fingerprint
// of p: false for a version p is not stored with (another kind of
// operation, or a request with "waitlist" against one without), an error
// for a version this engine does not know.
func (p payload) matches(version FingerprintVersion, fp string) (bool, error) {
	v, ok := fingerprintVersions[version]
	if !ok {
		return false, fmt.Errorf("unknown fingerprint version %d", version)
	}
	return version == p.version() && fp == v.fingerprint(p), nil
}

// Kind returns the kind of operation the receipt answers: the kind of its
// fingerprint version.
func (r Receipt) Kind() OperationKind { return r.FingerprintVersion.Kind() }
