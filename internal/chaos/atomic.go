package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
)

// atomicWorkshops are workshops that only atomic batches reserve in (and
// their reservations' cancellations free), with room for some batches:
// the workshops all clients share are full most of the time, where every
// atomic batch would be refused.
var atomicWorkshops = []string{"atomic-0", "atomic-1"}

// createAtomicWorkshops creates the atomic batches' workshops, each with a
// capacity of 20 to 49, and records their capacities.
func (r *run) createAtomicWorkshops(ctx context.Context, admin *client.Client) error {
	for _, id := range atomicWorkshops {
		capacity := 20 + r.rng.IntN(30)
		spec := engine.WorkshopSpec{Capacity: capacity, MaxQuantity: r.maxQuantity}
		if err := untilAnswered(func() error { _, _, err := admin.PutWorkshop(ctx, id, spec, nil); return err }); err != nil {
			return fmt.Errorf("create workshop %s: %w", id, err)
		}
		r.capacity[id] = capacity
	}
	return nil
}

// The reasons an item of a refused atomic batch that got the problem
// batch_refused was given, as its "reason" member names them; an item
// refused for a problem of its own has that problem's code as its reason.
const (
	// refusalUnavailable: too few places were left for the item.
	refusalUnavailable = engine.ReasonUnavailable
	// refusalReservable: the item could have been reserved, and another
	// item refused the batch.
	refusalReservable = engine.ReasonOtherItemRefused
	// refusalUndecided: the item was not decided, as another item refused
	// the batch before any was.
	refusalUndecided = engine.ReasonNotDecided
)

// refusal is the reason a refused item of an atomic batch was given: the
// "reason" member of its problem (empty when it has none).
func (op *Op) refusal() string {
	var p struct {
		Reason string `json:"reason"`
	}
	json.Unmarshal(op.Body, &p)
	return p.Reason
}

// checkAtomic checks every decision of an atomic batch: answered 200, every
// item is reserved; refused, no item is answered as made, one item at least
// could not be reserved, every reason an item was given is true (a reason
// about places is the model's to judge), and nothing is in the store for
// an item's key (no receipt or tombstone, no reservation, no event) unless
// another decision of the history made it. intents are the history's
// intents by actor and key.
func checkAtomic(ops []*Op, final Final, intents map[string]*Op) []Violation {
	var vs []Violation
	add := func(batch int, format string, args ...any) {
		vs = append(vs, Violation{CheckAtomic, fmt.Sprintf("atomic batch %d: ", batch) + fmt.Sprintf(format, args...)})
	}
	batches := answeredBatches(ops)
	maxQuantity := map[string]int{}
	for _, w := range final.Workshops {
		maxQuantity[w.ID] = w.MaxQuantity
	}
	reservations, events := map[string]int{}, map[string]int{}
	for _, res := range final.Reservations {
		reservations[res.Actor+"/"+string(res.OperationKey)]++
	}
	for _, ev := range final.Events {
		events[ev.Actor+"/"+string(ev.OperationKey)]++
	}
	for _, n := range slices.Sorted(maps.Keys(batches)) {
		items := batches[n]
		if !slices.ContainsFunc(items, func(op *Op) bool { return op.Role == Refused }) {
			for _, op := range items {
				if a, ok := op.Answer(); op.Role != Intent || !ok || a.Status != engine.StatusReserved {
					add(n, "answered as made, and item %d (%s %s×%d) is %d %s", op.Item+1, op.Key, op.Workshop, op.Quantity, op.Status, op.Body)
				}
			}
			continue
		}
		reason := false
		for _, op := range items {
			k := op.Actor + "/" + string(op.Key)
			switch op.Role {
			case Replay:
				// Its first answer's receipt answered it (the replay check
				// compares the bytes); a replay that is no reservation
				// refuses the batch.
				a, ok := op.Answer()
				reason = reason || !ok || a.Status != engine.StatusReserved
				continue
			case Refused:
			default:
				add(n, "refused, and item %d (%s) is answered as made: %d %s", op.Item+1, op.Key, op.Status, op.Body)
				continue
			}
			why := op.refusal()
			reason = reason || (why != refusalReservable && why != refusalUndecided)
			if untrue := untrueRefusal(op, why, final, maxQuantity, intents[k], items); untrue != "" {
				add(n, "item %d (%s %s×%d) was refused for %s, but %s", op.Item+1, op.Key, op.Workshop, op.Quantity, op.Code, untrue)
			}
			if intents[k] != nil {
				continue // Another decision made what the store has for this key.
			}
			if final.StoredKeys[k] {
				add(n, "refused, and item %d's key %s has a receipt in the store", op.Item+1, k)
			}
			if reservations[k] > 0 {
				add(n, "refused, and item %d's key %s has %d reservations in the store", op.Item+1, k, reservations[k])
			}
			if events[k] > 0 {
				add(n, "refused, and item %d's key %s has %d outbox events", op.Item+1, k, events[k])
			}
		}
		if !reason {
			add(n, "refused, and none of its items was refused for a reason of its own: %s", describeItems(items))
		}
	}
	return vs
}

// untrueRefusal says what makes the reason why an item op of a refused
// atomic batch was given untrue, or "" when it is true or a reason about
// places (which the model judges). first is the history's intent under the
// item's key, if any, and items are the batch's.
func untrueRefusal(op *Op, why string, final Final, maxQuantity map[string]int, first *Op, items []*Op) string {
	if op.Code != engine.CodeBatchRefused && why != op.Code {
		return fmt.Sprintf("its reason %q is not its code: %s", why, op.Body)
	}
	switch why {
	case refusalUnavailable, refusalReservable, refusalUndecided:
		return ""
	case "":
		return fmt.Sprintf("it names no reason: %s", op.Body)
	case engine.CodeUnknownWorkshop:
		if _, ok := final.Capacity[op.Workshop]; ok {
			return "the workshop exists"
		}
	case engine.CodeRequestContract:
		if op.Quantity >= 1 && op.Quantity <= maxQuantity[op.Workshop] && engine.ValidateWorkshopID(op.Workshop) == nil {
			return fmt.Sprintf("the item is valid (its workshop takes up to %d)", maxQuantity[op.Workshop])
		}
	case engine.CodeOperationConflict:
		earlier := slices.ContainsFunc(items, func(o *Op) bool {
			return o.Item < op.Item && o.Key == op.Key && (o.Workshop != op.Workshop || o.Quantity != op.Quantity)
		})
		switch {
		case earlier:
			// An earlier item of the batch has its key and another
			// payload.
		case first == nil:
			return "no earlier intent used its key"
		case first.Kind == engine.OperationReserve && first.Workshop == op.Workshop && first.Quantity == op.Quantity:
			return "the earlier intent under its key had the same payload"
		}
	case engine.CodeOperationExpired:
		if first == nil || op.Epoch <= first.Epoch {
			return "its key's receipt cannot have expired"
		}
	default:
		return "no item of the campaign's batches can be refused for it"
	}
	return ""
}

func describeItems(items []*Op) string {
	var ds []string
	for _, op := range items {
		ds = append(ds, fmt.Sprintf("%d %s", op.Status, op.Body))
	}
	return strings.Join(ds, "; ")
}

// AtomicCounts counts the decisions of atomic batches in ops: reserved,
// refused, and (resent) those of a batch sent again after a refusal, of
// which resent_reserved were reserved.
func AtomicCounts(ops []*Op) map[string]int {
	batches := answeredBatches(ops)
	counts := map[string]int{}
	sent := map[string]bool{}
	for _, n := range slices.Sorted(maps.Keys(batches)) {
		refused := slices.ContainsFunc(batches[n], func(op *Op) bool { return op.Role == Refused })
		if refused {
			counts["refused"]++
		} else {
			counts["reserved"]++
		}
		var keys []string
		for _, op := range batches[n] {
			keys = append(keys, fmt.Sprintf("%d:%s", op.Item, op.Key))
		}
		slices.Sort(keys)
		batch := strings.Join(keys, " ")
		if sent[batch] {
			counts["resent"]++
			if !refused {
				counts["resent_reserved"]++
			}
		}
		sent[batch] = true
	}
	return counts
}

// answeredBatches are the answered item ops of ops by atomic batch
// decision.
func answeredBatches(ops []*Op) map[int][]*Op {
	batches := map[int][]*Op{}
	for _, op := range ops {
		if op.Batch != 0 && op.Answered() {
			batches[op.Batch] = append(batches[op.Batch], op)
		}
	}
	return batches
}

// readStoredKeys reads the actor and key of every receipt and tombstone in
// tx into final.
func readStoredKeys(tx engine.Tx, final *Final) error {
	final.StoredKeys = map[string]bool{}
	if err := tx.ForEachReceipt(func(r engine.Receipt) error {
		final.StoredKeys[r.Actor+"/"+string(r.OperationKey)] = true
		return nil
	}); err != nil {
		return fmt.Errorf("read the receipts: %w", err)
	}
	if err := tx.ForEachTombstone(func(t engine.Tombstone) error {
		final.StoredKeys[t.Actor+"/"+string(t.OperationKey)] = true
		return nil
	}); err != nil {
		return fmt.Errorf("read the tombstones: %w", err)
	}
	return nil
}
