package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/reserve/reserve/internal/tracing"
)

// MaxBatchItems bounds the items of one batch.
const MaxBatchItems = 1000

// BatchEntry is one item of a batch as it came: its operation key and
// request, or Invalid, the refusal of the item itself (a key that is not
// an operation key, a request that breaks the contract), which stores
// nothing and is the item's result.
type BatchEntry struct {
	Key     OperationKey
	Request Request
	Invalid error
}

// BatchResult is the decision about a batch. Refused reports an atomic
// batch refused as a whole, which stored nothing. Items are in the order
// of the entries, each with its Verdict: an Outcome, or a Refusal that
// stored nothing for that item.
type BatchResult struct {
	Refused bool
	Items   []BatchItemResult
}

// BatchItemResult is one item's result in a batch: its key and verdict.
type BatchItemResult struct {
	Key OperationKey
	Verdict
	// Reason is set on every item of an atomic batch refused as a whole
	// that is answered with a Refusal: why this item was not reserved, as
	// a word a client can act on. See RefusalReasons.
	Reason string
}

// The reasons an item of an atomic batch refused as a whole was not
// reserved, besides the code of a refusal of its own (unknown_workshop,
// request_contract, operation_conflict, …) and the status of a refusal
// that a reservation would have been answered with (too few places were
// left for it: unavailable; registration not open or closed; the limit
// per person reached): it could have been reserved, and another item
// refused the batch; or it was not decided, because another item refused
// the batch before any item was decided.
const (
	ReasonUnavailable      = StatusUnavailable
	ReasonOtherItemRefused = "other_item_refused"
	ReasonNotDecided       = "not_decided"
)

// RefusalReasons lists every reason word an item of a refused atomic batch
// may carry that is not an error code.
var RefusalReasons = slices.Concat([]string{ReasonUnavailable}, AdmissionRefusals, []string{ReasonOtherItemRefused, ReasonNotDecided})

// refusalDetails says why an item of a refused atomic batch was not
// reserved, for each status of a refused reservation.
var refusalDetails = map[string]string{
	StatusUnavailable:         "not reserved: too few places are left for this item, and the batch is atomic; nothing was stored for any item",
	StatusRegistrationNotOpen: "not reserved: registration for this item's workshop is not open yet, and the batch is atomic; nothing was stored for any item",
	StatusRegistrationClosed:  "not reserved: registration for this item's workshop is closed, and the batch is atomic; nothing was stored for any item",
	StatusLimitReached:        "not reserved: this item would go over the workshop's limit per person, and the batch is atomic; nothing was stored for any item",
}

// batchKey marks the context of a batch's store write with its number of
// items.
type batchKey struct{}

// BatchItems is the number of items of the batch whose store write
// (Update) ctx is the context of, and 0 for any other write: for a store
// that reports how many batches shared a commit, or bounds a commit by the
// items in it.
func BatchItems(ctx context.Context) int {
	n, _ := ctx.Value(batchKey{}).(int)
	return n
}

// errBatchRefused rolls back the transaction of an atomic batch that an
// item refused.
var errBatchRefused = errors.New("atomic batch refused")

// Batch decides the reservations of entries for actor, each exactly as
// Reserve decides one under its own key (same checks, receipt,
// fingerprint and answer, so either endpoint replays the other's byte for
// byte), all in one write transaction. A key given twice is one operation:
// with the same request the later item replays the earlier one's answer,
// with another it is CodeOperationConflict.
//
// Without atomic every item is decided on its own. With atomic the batch is
// all or nothing: if any item would not be reserved (invalid, refused,
// unavailable, a conflict, a replayed answer other than reserved), nothing
// is stored for any item and Refused is set. Then an item replayed from
// its receipt keeps its replay (it was decided before), an item that caused
// the refusal keeps its reason (which stored nothing), and every other
// item gets CodeBatchRefused. An atomic batch whose items are all replays
// of reservations replays them, so a lost answer to it can be asked again.
//
// A failure of the store is the error, and the outcome is unknown: the
// write transaction rolled back, or its commit failed without telling
// whether it took effect; the same batch sent again settles it.
func (e *Engine) Batch(ctx context.Context, actor string, entries []BatchEntry, atomic bool) (BatchResult, error) {
	if err := ValidateActor(actor); err != nil {
		return BatchResult{}, Errorf(CodeUnauthenticated, "%v", err)
	}
	if len(entries) == 0 || len(entries) > MaxBatchItems {
		return BatchResult{}, Errorf(CodeRequestContract, "a batch has from 1 to %d items, not %d", MaxBatchItems, len(entries))
	}
	// Each entry's refusal of its own.
	items, invalid := make([]BatchItem, len(entries)), make([]error, len(entries))
	for i, en := range entries {
		items[i] = BatchItem{Actor: actor, Key: en.Key, Request: en.Request}
		if invalid[i] = en.Invalid; invalid[i] == nil {
			invalid[i] = checkOperation(actor, en.Key, en.Request)
		}
		if invalid[i] == nil && atomic && en.Request.Waitlist {
			invalid[i] = Errorf(CodeRequestContract, "member \"waitlist\" cannot be true in an atomic batch, whose items are all reserved or none")
		}
	}
	res, err := e.batch(ctx, items, invalid, atomic)
	if err != nil {
		return BatchResult{}, fmt.Errorf("batch of %d: %w", len(entries), err)
	}
	return res, nil
}

// BatchItem is one reservation of a ReserveBatch: who reserves, under
// which operation key, and what.
type BatchItem struct {
	Actor   string
	Key     OperationKey
	Request Request
}

// payload is what the item's key is used for.
func (it BatchItem) payload() payload { return payload{kind: OperationReserve, req: it.Request} }

// ReserveBatch decides many reservations, of any actors and any number, in
// a single transaction, each with exactly the rules of Reserve, and
// commits them all or none: a Batch that is not atomic, for bulk loading
// (database generators, tests). An item that is not a valid operation
// refuses the whole batch; a refusal of one item, which stores nothing, is
// its Verdict.
func (e *Engine) ReserveBatch(ctx context.Context, items []BatchItem) ([]Verdict, error) {
	for _, it := range items {
		if err := checkOperation(it.Actor, it.Key, it.Request); err != nil {
			return nil, err
		}
	}
	res, err := e.batch(ctx, items, make([]error, len(items)), false)
	if err != nil {
		return nil, fmt.Errorf("reserve batch: %w", err)
	}
	vs := make([]Verdict, len(res.Items))
	for i, it := range res.Items {
		vs[i] = it.Verdict
	}
	return vs, nil
}

// batch is the one way many reservations are decided in one transaction
// (Batch, ReserveBatch): items, of which those refused by invalid are
// refused as they stand. It first looks every item up in a read
// transaction: a batch whose items are all decided already (or, atomic,
// that its invalid items or its replays refuse) is answered from there,
// without the writer. In the write transaction it takes the batch's
// workshops in id order before it decides any item, so that batches over
// the same workshops never wait for each other in a cycle (on PostgreSQL,
// the row locks); then it decides each item as Reserve does.
func (e *Engine) batch(ctx context.Context, items []BatchItem, invalid []error, atomic bool) (out BatchResult, err error) {
	if e.tracer != nil {
		var span tracing.Span
		ctx, span = e.tracer.Decision(ctx, "batch")
		defer func() {
			answer := "decided"
			if out.Refused {
				answer = "refused"
			}
			span.EndDecision(answer, err)
		}()
	}
	if res, done, err := e.batchFromSnapshot(ctx, items, invalid, atomic); err != nil || done {
		return res, err
	}
	workshops := batchWorkshops(items, invalid)
	var res BatchResult
	err = e.store.Update(context.WithValue(ctx, batchKey{}, len(items)), func(tx Tx) error {
		for _, id := range workshops {
			if _, _, err := tx.Workshop(id); err != nil {
				return fmt.Errorf("look up workshop %s: %w", id, err)
			}
		}
		var err error
		res, _, err = eachItem(items, invalid, atomic, func(it BatchItem) (Verdict, bool, error) {
			v, err := decide(tx, Principal{Actor: it.Actor}, it.Key, it.payload(), reservation{}, e.utcNow, e.newID)
			return v, true, err
		})
		if err == nil && res.Refused {
			err = errBatchRefused
		}
		return err
	})
	if errors.Is(err, errBatchRefused) {
		err = e.replaysAfterRefusal(ctx, items, &res)
	}
	if err != nil {
		return BatchResult{}, err
	}
	if res.Refused {
		return refused(res), nil
	}
	return res, nil
}

// replaysAfterRefusal reads again, once the refused transaction has rolled
// back, the items it found replayed: the receipt such an item replayed may
// have been written by another Update of the same group commit, which the
// refusal rolled back with it (and which the store then ran again, making
// another answer). A receipt found now is the item's replay; an item
// without one now is left without a result, which refused answers as
// batch_refused.
func (e *Engine) replaysAfterRefusal(ctx context.Context, items []BatchItem, res *BatchResult) error {
	return e.store.View(ctx, func(tx Tx) error {
		for i := range res.Items {
			it := &res.Items[i]
			if !it.Outcome.Replayed || it.Refusal != nil {
				continue
			}
			v, found, err := lookUp(tx, items[i].Actor, items[i].Key, items[i].payload())
			if err != nil {
				return err
			}
			if !found {
				v = Verdict{}
			}
			it.Verdict = v
		}
		return nil
	})
}

// batchFromSnapshot looks every valid item up in one read transaction and
// answers the batch from there when it can (done): when every valid item
// has been decided before (its replay or its conflict), or, atomic, when
// an invalid item or a replay refuses it. Answering a refusal from a
// snapshot is sound because a refused atomic batch stores nothing.
func (e *Engine) batchFromSnapshot(ctx context.Context, items []BatchItem, invalid []error, atomic bool) (res BatchResult, done bool, err error) {
	err = e.store.View(ctx, func(tx Tx) error {
		var err error
		res, done, err = eachItem(items, invalid, atomic, func(it BatchItem) (Verdict, bool, error) {
			return lookUp(tx, it.Actor, it.Key, it.payload())
		})
		return err
	})
	if err != nil {
		return BatchResult{}, false, err
	}
	if res.Refused {
		return refused(res), true, nil
	}
	return res, done, nil
}

// eachItem is the result of every item: an invalid item's refusal, or
// what one returns for it, its verdict if it settled it, or else nothing
// (all reports whether every item was settled). Refused is set for an
// atomic batch with a settled item that is not a reservation. An error of
// one ends it, and so does, in a batch that is not atomic, an item that
// one did not settle: such a batch is answered by its items only when one
// settled every item (a snapshot of a batch that is all replays), so the
// items after it would be looked up for nothing.
func eachItem(items []BatchItem, invalid []error, atomic bool, one func(BatchItem) (v Verdict, settled bool, err error)) (res BatchResult, all bool, err error) {
	res, all = BatchResult{Items: make([]BatchItemResult, len(items))}, true
	for i, item := range items {
		it := &res.Items[i]
		it.Key = item.Key
		if invalid[i] != nil {
			it.Refusal = invalid[i]
		} else {
			v, settled, err := one(item)
			if err != nil {
				return BatchResult{}, false, err
			}
			if !settled && !atomic {
				return res, false, nil
			}
			if !settled {
				all = false
				continue
			}
			it.Verdict = v
		}
		if atomic && !reserves(*it) {
			res.Refused = true
		}
	}
	return res, all, nil
}

// refused is the answer of an atomic batch refused as a whole, which stored
// nothing: an item replayed from its receipt keeps its replay, an item that
// was refused keeps its reason (a key given twice with another payload
// says so: the earlier item stored nothing either), and every other item,
// including one that would have been reserved or found no places, gets
// CodeBatchRefused; so no item that was not stored before looks decided.
func refused(res BatchResult) BatchResult {
	first := make(map[OperationKey]int, len(res.Items))
	for i := range res.Items {
		it := &res.Items[i]
		earlier, repeated := first[it.Key]
		if !repeated {
			first[it.Key] = i
		}
		switch {
		case it.Outcome.Replayed && it.Refusal == nil:
		case repeated && ErrorCode(it.Refusal) == CodeOperationConflict:
			*it = BatchItemResult{Key: it.Key, Verdict: refuse(Errorf(CodeOperationConflict, "item %d has the operation key of item %d with another payload; a different operation needs a new operation key", i+1, earlier+1)), Reason: CodeOperationConflict}
		case it.Refusal != nil:
			it.Reason = ErrorCode(it.Refusal)
		default:
			reason, detail := ReasonNotDecided, "not decided: the batch is atomic and another of its items could not be reserved; nothing was stored"
			status := it.Outcome.Answer.Status
			switch {
			case status == StatusReserved:
				reason, detail = ReasonOtherItemRefused, "not reserved: the batch is atomic and another of its items could not be reserved; nothing was stored"
			case refusalDetails[status] != "":
				reason, detail = status, refusalDetails[status]
			}
			*it = BatchItemResult{Key: it.Key, Verdict: refuse(Errorf(CodeBatchRefused, "%s", detail)), Reason: reason}
		}
	}
	res.Refused = true
	return res
}

// batchWorkshops returns the workshops of the valid items, each once, in
// id order.
func batchWorkshops(items []BatchItem, invalid []error) []string {
	var ids []string
	for i, it := range items {
		if invalid[i] == nil {
			ids = append(ids, it.Request.Workshop)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// reserves reports whether an item's result is a reservation, made now or
// replayed.
func reserves(it BatchItemResult) bool {
	return it.Refusal == nil && it.Outcome.Answer.Status == StatusReserved
}
