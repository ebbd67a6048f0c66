package engine

import (
	"container/heap"
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The limits of one page of the operations view.
const (
	DefaultOperationsLimit = 50
	MaxOperationsLimit     = 1000
)

// OperationOutcomes are the outcomes the operations view can filter by: the
// status of the stored answer.
var OperationOutcomes = []string{StatusReserved, StatusUnavailable, StatusCancelled, StatusAlreadyCancelled}

// OperationRecord is one stored operation as an admin sees it: who used
// which key, and the stored answer (its members: the kind of operation, the
// outcome, the workshop, quantity and reservation). Expired is set for an
// operation whose receipt was purged after the retention period (only its
// tombstone is left).
type OperationRecord struct {
	Actor     string
	Operation OperationKey
	Answer    Answer
	CreatedAt time.Time
	Expired   bool
}

// OperationFilter selects operations for the operations view. Zero members
// select everything; After continues a listing after the cursor a previous
// page returned.
type OperationFilter struct {
	Actor   string
	Since   time.Time
	Outcome string
	Limit   int
	After   string
}

// cursor is a position in the operations view's order: newest first, ties
// by actor and key.
type cursor struct {
	at    time.Time
	actor string
	key   OperationKey
}

// before reports whether a comes before b in the view's order.
func (a cursor) before(b cursor) bool {
	if !a.at.Equal(b.at) {
		return a.at.After(b.at)
	}
	if a.actor != b.actor {
		return a.actor < b.actor
	}
	return a.key < b.key
}

// encode returns the cursor as an opaque URL-safe string.
func (a cursor) encode() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(a.at.UnixNano(), 10) + "|" + a.actor + "|" + string(a.key)))
}

// decodeCursor parses a cursor made by encode.
func decodeCursor(s string) (cursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return cursor{}, errBadCursor
	}
	parts := strings.Split(string(raw), "|")
	if len(parts) != 3 {
		return cursor{}, errBadCursor
	}
	ns, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil {
		return cursor{}, errBadCursor
	}
	return cursor{at: time.Unix(0, ns).UTC(), actor: parts[1], key: OperationKey(parts[2])}, nil
}

var errBadCursor = Errorf(CodeRequestContract, "query parameter \"cursor\" is not a cursor this daemon returned")

// Validate checks the filter and fills in the default limit.
func (f *OperationFilter) Validate() error {
	if f.Actor != "" {
		if err := ValidateActor(f.Actor); err != nil {
			return Errorf(CodeRequestContract, "query parameter \"actor\" %s", err)
		}
	}
	if f.Outcome != "" && !slices.Contains(OperationOutcomes, f.Outcome) {
		return Errorf(CodeRequestContract, "query parameter \"outcome\" must be one of %s", strings.Join(OperationOutcomes, ", "))
	}
	switch {
	case f.Limit == 0:
		f.Limit = DefaultOperationsLimit
	case f.Limit < 1 || f.Limit > MaxOperationsLimit:
		return Errorf(CodeRequestContract, "query parameter \"limit\" must be from 1 to %d", MaxOperationsLimit)
	}
	if f.After != "" {
		if _, err := decodeCursor(f.After); err != nil {
			return err
		}
	}
	return nil
}

// Operations lists the stored operations (receipts and the tombstones of
// expired ones) that match f, newest first, at most f.Limit of them, from
// one consistent snapshot. next is the cursor of the following page, "" when
// there is none. It scans every receipt, keeping only the page in memory.
func (e *Engine) Operations(ctx context.Context, f OperationFilter) (ops []OperationRecord, next string, err error) {
	if err := f.Validate(); err != nil {
		return nil, "", err
	}
	var after *cursor
	if f.After != "" {
		c, _ := decodeCursor(f.After)
		after = &c
	}
	keep := &recordHeap{}
	consider := func(rec OperationRecord) {
		if (f.Actor != "" && rec.Actor != f.Actor) ||
			(!f.Since.IsZero() && rec.CreatedAt.Before(f.Since)) ||
			(f.Outcome != "" && rec.Answer.Status != f.Outcome) {
			return
		}
		c := recordCursor(rec)
		if after != nil && !after.before(c) {
			return
		}
		if keep.Len() <= f.Limit {
			heap.Push(keep, rec)
			return
		}
		if c.before(recordCursor((*keep)[0])) {
			(*keep)[0] = rec
			heap.Fix(keep, 0)
		}
	}
	err = e.store.View(ctx, func(tx Tx) error {
		*keep = (*keep)[:0]
		if err := tx.ForEachReceipt(func(r Receipt) error {
			consider(receiptRecord(r))
			return nil
		}); err != nil {
			return err
		}
		return tx.ForEachTombstone(func(t Tombstone) error {
			consider(tombstoneRecord(t))
			return nil
		})
	})
	if err != nil {
		return nil, "", fmt.Errorf("list operations: %w", err)
	}
	ops = make([]OperationRecord, keep.Len())
	for i := len(ops) - 1; i >= 0; i-- {
		ops[i] = heap.Pop(keep).(OperationRecord)
	}
	if len(ops) > f.Limit {
		ops = ops[:f.Limit]
		next = recordCursor(ops[len(ops)-1]).encode()
	}
	return ops, next, nil
}

func recordCursor(r OperationRecord) cursor {
	return cursor{at: r.CreatedAt, actor: r.Actor, key: r.Operation}
}

// receiptRecord is the view of a receipt.
func receiptRecord(r Receipt) OperationRecord {
	return OperationRecord{Actor: r.Actor, Operation: r.OperationKey, Answer: r.AnswerOf(r.Answer.Status), CreatedAt: r.CreatedAt}
}

// tombstoneRecord is the view of a tombstone.
func tombstoneRecord(t Tombstone) OperationRecord {
	return OperationRecord{Actor: t.Actor, Operation: t.OperationKey, Answer: t.Answer, CreatedAt: t.CreatedAt, Expired: true}
}

// recordHeap keeps the newest records; its root is the one that comes last
// in the view's order, the first to drop.
type recordHeap []OperationRecord

func (h recordHeap) Len() int           { return len(h) }
func (h recordHeap) Less(i, j int) bool { return recordCursor(h[j]).before(recordCursor(h[i])) }
func (h recordHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *recordHeap) Push(x any)        { *h = append(*h, x.(OperationRecord)) }
func (h *recordHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
