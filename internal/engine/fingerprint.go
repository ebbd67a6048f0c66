package engine

import (
	"crypto/sha256"
	"encoding/hex"
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
