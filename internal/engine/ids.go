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
	ms := uint64(now.UnixMilli())
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], ms<<16)
	random := lastID.next(ms)
	copy(b[6:], random[:])
	return hex.EncodeToString(b[:])
}

// idAfter returns a new id that sorts after id, an id of the form of
// NewReservationID's: id's millisecond with its random part grown by a
// random step, as the next id of that millisecond would be, or the next
// millisecond with fresh random bits once the step would overflow. It
// does not touch the sequences of NewReservationID, so the ids this
// process makes at its own clock keep their order, however far ahead of
// it id's millisecond is.
func idAfter(id string) string {
	var b [16]byte
	if _, err := hex.Decode(b[:], []byte(id)); err != nil || len(id) != 32 {
		return NewReservationID(time.Now()) // Not an id of that form: any new one.
	}
	var r [10]byte
	copy(r[:], b[6:])
	if !step(&r) {
		ms := binary.BigEndian.Uint64(b[:8])>>16 + 1
		binary.BigEndian.PutUint64(b[:8], ms<<16)
		r = freshRandom()
	}
	copy(b[6:], r[:])
	return hex.EncodeToString(b[:])
}

// lastID is the source of NewReservationID's random parts.
var lastID idSource

// idWindow is how many milliseconds before the newest one an idSource
// keeps the sequence of: enough for decisions that read the clock before
// others took the lock, far less than a clock that steps back.
const idWindow = 64

// idSource keeps the random part of the last id made in each of the recent
// milliseconds.
type idSource struct {
	sync.Mutex
	newest uint64
	last   map[uint64][10]byte
}

// idStep bounds the random step between two ids of one millisecond, so
// that about 32 bits of every id stay unpredictable.
const idStep = 1 << 32

// next returns the random part of a new id of millisecond ms: the last one
// of ms plus a random step from 1 to idStep if ms had one, fresh random bits
// otherwise. It keeps the sequences of the idWindow milliseconds up to the
// newest, so that ids of one millisecond keep increasing even when ids of
// an earlier one are made between them; a millisecond further back than
// that (a clock that stepped back) starts the window anew.
func (s *idSource) next(ms uint64) [10]byte {
	s.Lock()
	defer s.Unlock()
	if r, ok := s.last[ms]; ok {
		if step(&r) {
			s.last[ms] = r
			return r
		}
	}
	if s.last == nil {
		s.last = make(map[uint64][10]byte, idWindow+1)
	}
	if ms > s.newest || s.newest-ms > idWindow {
		s.newest = ms
		for k := range s.last {
			if k > ms || ms-k > idWindow {
				delete(s.last, k)
			}
		}
	}
	r := freshRandom()
	s.last[ms] = r
	return r
}

// freshRandom returns random bits for the first id of a millisecond. The
// top bit clear leaves room for 2^79 more in that millisecond, far more
// steps than a process can take in one.
func freshRandom() [10]byte {
	var r [10]byte
	rand.Read(r[:]) // crypto/rand.Read never fails.
	r[0] &= 0x7f
	return r
}

// step adds a random step to the random part r, and reports false,
// leaving it as it was, if that would overflow it.
func step(r *[10]byte) bool {
	var x [8]byte
	rand.Read(x[:])
	low, carry := bits.Add64(binary.BigEndian.Uint64(r[2:]), binary.BigEndian.Uint64(x[:])%idStep+1, 0)
	high := uint32(binary.BigEndian.Uint16(r[:2])) + uint32(carry)
	if high > 0xffff {
		return false
	}
	binary.BigEndian.PutUint16(r[:2], uint16(high))
	binary.BigEndian.PutUint64(r[2:], low)
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
