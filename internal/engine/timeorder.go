package engine

import "time"

// TimePosition is a place in the newest-first order of receipts and
// tombstones that the operations view lists and the stores' time-ordered
// scans follow: by CreatedAt, newest first, and records of the same time by
// actor and then operation key, in ascending byte order. The zero position
// comes before every record.
type TimePosition struct {
	At    time.Time
	Actor string
	Key   OperationKey
}

// IsZero reports whether p is the zero position.
func (p TimePosition) IsZero() bool { return p.At.IsZero() && p.Actor == "" && p.Key == "" }

// Before reports whether p comes before q in the order: newer, or as new
// and a smaller actor, or the same actor and a smaller key. The zero
// position comes before every other.
func (p TimePosition) Before(q TimePosition) bool {
	switch {
	case q.IsZero():
		return false
	case p.IsZero():
		return true
	case !p.At.Equal(q.At):
		return p.At.After(q.At)
	case p.Actor != q.Actor:
		return p.Actor < q.Actor
	}
	return p.Key < q.Key
}

// Compare returns -1 if p comes before q, 1 if after, 0 if they are the
// same position.
func (p TimePosition) Compare(q TimePosition) int {
	switch {
	case p.Before(q):
		return -1
	case q.Before(p):
		return 1
	}
	return 0
}

// ReceiptPosition and TombstonePosition are the positions of records.
func ReceiptPosition(r Receipt) TimePosition {
	return TimePosition{At: r.CreatedAt, Actor: r.Actor, Key: r.OperationKey}
}

func TombstonePosition(t Tombstone) TimePosition {
	return TimePosition{At: t.CreatedAt, Actor: t.Actor, Key: t.OperationKey}
}
