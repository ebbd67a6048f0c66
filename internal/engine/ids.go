package engine

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"math/bits"
	"sync"
	"time"
)

// NewReservationID returns a fresh reservation id: 32 lowercase hex digits of
// 48 bits of Unix milliseconds followed by 80 bits that are random for the
// first id of a millisecond and grow with every later id of the same
// millisecond by a random step, as ULID's monotonic ids do. Ids made later
// sort later, also within one millisecond of one process (so a person's
// list shows what one daemon decided in one millisecond in the order it
// decided it), and stores append new reservations at the end of their
// index instead of scattering writes over it. Hold and event ids are made
// the same way.
func NewReservationID(now time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], lastID.next(uint64(now.UnixMilli()))<<16)
	copy(b[6:], lastID.random[:]) // next left them locked.
	lastID.Unlock()
	return hex.EncodeToString(b[:])
}

// lastID is the last id NewReservationID made.
var lastID idSource

// idSource is the millisecond and the random part of the last id made.
type idSource struct {
	sync.Mutex
	ms     uint64
	random [10]byte
}

// idStep bounds the random step between two ids of one millisecond, so
// that about 32 bits of every id stay unpredictable.
const idStep = 1 << 32

// next locks s and sets its random part for a new id of millisecond ms:
// the last one's plus a random step from 1 to idStep if the last id was of
// ms too, fresh random bits otherwise; it returns ms. The caller unlocks s
// once it has copied the random part.
func (s *idSource) next(ms uint64) uint64 {
	s.Lock()
	if ms == s.ms && s.step() {
		return ms
	}
	s.ms = ms
	rand.Read(s.random[:]) // crypto/rand.Read never fails.
	// The top bit clear leaves room for 2^79 more in this millisecond, far
	// more steps than a process can take in one.
	s.random[0] &= 0x7f
	return ms
}

// step adds a random step to the random part, and reports false, leaving
// it as it was, if that would overflow it.
func (s *idSource) step() bool {
	var r [8]byte
	rand.Read(r[:])
	low, carry := bits.Add64(binary.BigEndian.Uint64(s.random[2:]), binary.BigEndian.Uint64(r[:])%idStep+1, 0)
	high := uint32(binary.BigEndian.Uint16(s.random[:2])) + uint32(carry)
	if high > 0xffff {
		return false
	}
	binary.BigEndian.PutUint16(s.random[:2], uint16(high))
	binary.BigEndian.PutUint64(s.random[2:], low)
	return true
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
