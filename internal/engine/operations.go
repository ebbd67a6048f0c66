package engine

import (
	"context"
	"encoding/base64"
	"errors"
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
// status of the stored answer, every status word of Answers.
var OperationOutcomes = AnswerStatuses()

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

// encodeCursor returns the position as an opaque URL-safe string.
func encodeCursor(p TimePosition) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(p.At.UnixNano(), 10) + "|" + p.Actor + "|" + string(p.Key)))
}

// decodeCursor parses a cursor made by encodeCursor.
func decodeCursor(s string) (TimePosition, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return TimePosition{}, errBadCursor
	}
	parts := strings.Split(string(raw), "|")
	if len(parts) != 3 {
		return TimePosition{}, errBadCursor
	}
	ns, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil {
		return TimePosition{}, errBadCursor
	}
	return TimePosition{At: time.Unix(0, ns).UTC(), Actor: parts[1], Key: OperationKey(parts[2])}, nil
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
// there is none.
//
// It walks the store's time-ordered indexes of receipts and of tombstones
// newest first from the cursor and stops each walk once it has one match
// more than the page holds, or at the first record older than f.Since. So
// a page costs what it visits: about f.Limit records of each kind for an
// unfiltered view at any size of the store, while a filter by actor or
// outcome also visits the newer records that do not match it.
func (e *Engine) Operations(ctx context.Context, f OperationFilter) (ops []OperationRecord, next string, err error) {
	if err := f.Validate(); err != nil {
		return nil, "", err
	}
	var after TimePosition
	if f.After != "" {
		after, _ = decodeCursor(f.After)
	}
	err = e.store.View(ctx, func(tx Tx) error {
		receipts, err := newestMatches(f, after, func(fn func(OperationRecord) error) error {
			return tx.ForEachReceiptNewestFirst(after, func(r Receipt) error { return fn(receiptRecord(r)) })
		})
		if err != nil {
			return err
		}
		tombstones, err := newestMatches(f, after, func(fn func(OperationRecord) error) error {
			return tx.ForEachTombstoneNewestFirst(after, func(t Tombstone) error { return fn(tombstoneRecord(t)) })
		})
		ops = append(receipts, tombstones...)
		return err
	})
	if err != nil {
		return nil, "", fmt.Errorf("list operations: %w", err)
	}
	slices.SortFunc(ops, func(a, b OperationRecord) int { return recordPosition(a).Compare(recordPosition(b)) })
	if len(ops) > f.Limit {
		ops = ops[:f.Limit]
		next = encodeCursor(recordPosition(ops[len(ops)-1]))
	}
	return ops, next, nil
}

// newestMatches returns the first f.Limit + 1 records that scan visits,
// newest first from the cursor after, that match f and come after the
// cursor, stopping early at the first record older than f.Since.
func newestMatches(f OperationFilter, after TimePosition, scan func(func(OperationRecord) error) error) ([]OperationRecord, error) {
	var page []OperationRecord
	err := scan(func(rec OperationRecord) error {
		if !f.Since.IsZero() && rec.CreatedAt.Before(f.Since) {
			return errEnough
		}
		if (f.Actor != "" && rec.Actor != f.Actor) || (f.Outcome != "" && rec.Answer.Status != f.Outcome) ||
			!after.Before(recordPosition(rec)) {
			return nil
		}
		page = append(page, rec)
		if len(page) > f.Limit {
			return errEnough
		}
		return nil
	})
	if errors.Is(err, errEnough) {
		err = nil
	}
	return page, err
}

func recordPosition(r OperationRecord) TimePosition {
	return TimePosition{At: r.CreatedAt, Actor: r.Actor, Key: r.Operation}
}

// receiptRecord is the view of a receipt.
func receiptRecord(r Receipt) OperationRecord {
	return OperationRecord{Actor: r.Actor, Operation: r.OperationKey, Answer: r.AnswerOf(r.Answer.Status), CreatedAt: r.CreatedAt}
}

// tombstoneRecord is the view of a tombstone.
func tombstoneRecord(t Tombstone) OperationRecord {
	return OperationRecord{Actor: t.Actor, Operation: t.OperationKey, Answer: t.Answer, CreatedAt: t.CreatedAt, Expired: true}
}
