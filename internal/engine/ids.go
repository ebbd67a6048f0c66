package engine

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"time"
)

// NewReservationID returns a fresh reservation id: 32 lowercase hex digits of
// 48 bits of Unix milliseconds followed by 80 random bits. Ids made later
// sort later, so stores append new reservations at the end of their index
// instead of scattering writes over it.
func NewReservationID(now time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now.UnixMilli())<<16)
	rand.Read(b[6:]) // crypto/rand.Read never fails.
	return hex.EncodeToString(b[:])
}

// IsReservationID reports whether s has the form of a reservation id.
func IsReservationID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isLowerHex(s[i]) {
			return false
		}
	}
	return true
}
