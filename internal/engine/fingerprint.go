package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
)

// FingerprintVersion is the version of the canonical payload encoding that
// Fingerprint hashes. It is stored with every receipt; a future encoding gets
// a new version and old receipts keep comparing under their own.
const FingerprintVersion = 1

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

// CancelFingerprintVersion is the fingerprint version of cancellations. It
// differs from every reservation version, so a receipt says by its version
// alone which kind of operation its key was used for, and a key used to
// reserve can never match a cancellation (or the other way round).
const CancelFingerprintVersion = 2

// fingerprintKinds maps every known fingerprint version to the kind of
// operation it fingerprints.
var fingerprintKinds = map[int]string{
	FingerprintVersion:       OperationReserve,
	CancelFingerprintVersion: OperationCancel,
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

// payload is what an operation key is being used for now: a reservation
// request or the cancellation of a reservation.
type payload struct {
	kind          string
	req           Request
	reservationID string
}

// fingerprint returns the payload's fingerprint under version, which must be
// a version of the payload's kind.
func (p payload) fingerprint(version int) string {
	switch version {
	case FingerprintVersion:
		return Fingerprint(p.req)
	case CancelFingerprintVersion:
		return CancelFingerprint(p.reservationID)
	}
	return ""
}

// matches reports whether a stored (version, fingerprint) is the fingerprint
// of p: false for a version of another kind of operation, an error for a
// version this code does not know.
func (p payload) matches(version int, fp string) (bool, error) {
	kind, ok := fingerprintKinds[version]
	if !ok {
		return false, fmt.Errorf("unknown fingerprint version %d", version)
	}
	return kind == p.kind && fp == p.fingerprint(version), nil
}

// Kind returns the kind of operation the receipt answers: OperationReserve
// or OperationCancel ("" for an unknown fingerprint version).
func (r Receipt) Kind() string { return fingerprintKinds[r.FingerprintVersion] }
