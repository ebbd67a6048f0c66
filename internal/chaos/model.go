package chaos

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/reserve/reserve/internal/engine"
)

// The model of the service that a history must be linearizable against,
// one workshop at a time (the partitions are independent: no operation but
// an atomic batch touches two workshops, and an atomic batch is checked in
// each of its workshops as one operation made of its items there), which
// keeps the checker's memory bounded by the largest workshop's history.
//
// An atomic batch's items in one workshop are one operation of that
// workshop's history, decided at one point, as the service decides them in
// one transaction, in item order. Answered as made, each item is a
// reservation that must fit after the items before it (an item under the
// key of an earlier one is that operation, and must have its answer). Refused, the batch
// changed nothing, and the answer must be one that order explains: an item
// refused as one that could have been reserved must fit after the items
// before it that could have been reserved too (the places they would have
// taken), and an item refused for too few places must not fit there; its
// other items' reasons (a problem of their own, or not decided) say nothing
// about places. The single decision point of a batch over two workshops is
// not checked: each workshop may place its part at another point in the
// batch's call and answer.
//
// A workshop's state is its reserved places, its reservations and its
// holds. A reservation is made if its places fit (reserved plus the places
// of holds not expired at the operation's clock), else it is unavailable;
// a cancel needs a reservation the history made; a hold expires with the
// next clock jump (every campaign's jumps are longer than every hold's
// ttl, and no run lasts as long as a ttl). Ids are the service's: an
// answer's new id must be new.

// wsState is the state of one workshop; it is never changed in place.
type wsState struct {
	capacity int
	reserved int
	resv     map[string]resvState
	holds    map[string]holdState
}

type resvState struct {
	quantity  int
	cancelled bool
}

type holdState struct {
	quantity int
	epoch    int
	state    engine.HoldState // Held, confirmed or released; expiry is by epoch.
}

// heldAt returns the places of the holds still open at epoch.
func (s *wsState) heldAt(epoch int) int {
	n := 0
	for _, h := range s.holds {
		if h.state == engine.HoldHeld && h.epoch == epoch {
			n += h.quantity
		}
	}
	return n
}

func (s *wsState) with(f func(n *wsState)) *wsState {
	n := &wsState{capacity: s.capacity, reserved: s.reserved, resv: maps.Clone(s.resv), holds: maps.Clone(s.holds)}
	f(n)
	return n
}

// step applies op to s and reports whether op's answer is legal there.
func (s *wsState) step(op *Op) (bool, *wsState) {
	a, ok := op.Answer()
	if !ok {
		return false, s
	}
	fits := s.reserved+s.heldAt(op.Epoch)+op.Quantity <= s.capacity
	switch op.Kind {
	case engine.OperationReserve:
		switch a.Status {
		case engine.StatusReserved:
			if !fits || a.Quantity != op.Quantity || s.known(a.ReservationID) {
				return false, s
			}
			return true, s.with(func(n *wsState) {
				n.reserved += op.Quantity
				n.resv[a.ReservationID] = resvState{quantity: op.Quantity}
			})
		case engine.StatusUnavailable:
			return !fits, s
		}
	case engine.OperationHold:
		switch a.Status {
		case engine.StatusHeld:
			if !fits || a.Quantity != op.Quantity || s.known(a.HoldID) {
				return false, s
			}
			return true, s.with(func(n *wsState) {
				n.holds[a.HoldID] = holdState{quantity: op.Quantity, epoch: op.Epoch, state: engine.HoldHeld}
			})
		case engine.StatusUnavailable:
			return !fits, s
		}
	case engine.OperationCancel:
		r, ok := s.resv[op.Target]
		switch {
		case !ok || a.ReservationID != op.Target:
			return false, s
		case a.Status == engine.StatusCancelled && !r.cancelled:
			return true, s.with(func(n *wsState) {
				n.reserved -= r.quantity
				n.resv[op.Target] = resvState{quantity: r.quantity, cancelled: true}
			})
		case a.Status == engine.StatusAlreadyCancelled:
			return r.cancelled, s
		}
	case engine.OperationConfirm, engine.OperationRelease:
		h, ok := s.holds[op.Target]
		if !ok || a.HoldID != op.Target {
			return false, s
		}
		if want := settleStatus(op.Kind, h, op.Epoch); a.Status != want {
			return false, s
		}
		switch {
		case a.Status == engine.StatusReserved:
			if s.known(a.ReservationID) || a.Quantity != h.quantity {
				return false, s
			}
			return true, s.with(func(n *wsState) {
				n.reserved += h.quantity
				n.resv[a.ReservationID] = resvState{quantity: h.quantity}
				n.holds[op.Target] = holdState{quantity: h.quantity, epoch: h.epoch, state: engine.HoldConfirmed}
			})
		case a.Status == engine.StatusReleased && h.state == engine.HoldHeld:
			return true, s.with(func(n *wsState) {
				n.holds[op.Target] = holdState{quantity: h.quantity, epoch: h.epoch, state: engine.HoldReleased}
			})
		}
		return true, s
	}
	return false, s
}

// batchPart is the items of one atomic batch decision in one workshop,
// in item order: one operation of the workshop's history.
type batchPart struct{ items []*Op }

// stepBatch applies the items of p to s and reports whether their answers
// are legal there, all at one point.
func (s *wsState) stepBatch(p *batchPart) (bool, *wsState) {
	if !slices.ContainsFunc(p.items, func(op *Op) bool { return op.Role == Refused }) {
		n := s
		answers := map[engine.OperationKey][]byte{}
		for _, op := range p.items {
			if first, ok := answers[op.Key]; ok {
				// The same operation as an earlier item: its answer.
				if !bytes.Equal(op.Body, first) {
					return false, s
				}
				continue
			}
			answers[op.Key] = op.Body
			ok, next := n.step(op)
			if !ok {
				return false, s
			}
			n = next
		}
		return true, n
	}
	taken := 0 // The places of the items before that could have been reserved.
	for _, op := range p.items {
		if op.Role != Refused {
			return false, s // An item answered as made in a batch that stored nothing.
		}
		fits := s.reserved+s.heldAt(op.Epoch)+taken+op.Quantity <= s.capacity
		switch op.refusal() {
		case refusalReservable:
			if !fits {
				return false, s
			}
			taken += op.Quantity
		case refusalUnavailable:
			if fits {
				return false, s
			}
		}
	}
	return true, s
}

// settleStatus is the answer a confirm or a release of hold h gets at
// epoch.
func settleStatus(kind engine.OperationKind, h holdState, epoch int) string {
	switch {
	case h.state == engine.HoldConfirmed:
		return engine.StatusAlreadyConfirmed
	case h.state == engine.HoldReleased && kind == engine.OperationConfirm:
		return engine.StatusReleased
	case h.state == engine.HoldReleased:
		return engine.StatusAlreadyReleased
	case h.epoch < epoch:
		return engine.StatusExpired
	case kind == engine.OperationConfirm:
		return engine.StatusReserved
	}
	return engine.StatusReleased
}

// known reports whether id already names a reservation or a hold.
func (s *wsState) known(id string) bool {
	_, r := s.resv[id]
	_, h := s.holds[id]
	return r || h
}

func (s *wsState) equal(o *wsState) bool {
	return s.reserved == o.reserved && maps.Equal(s.resv, o.resv) && maps.Equal(s.holds, o.holds)
}

// workshopModel is the porcupine model of one workshop of capacity.
func workshopModel(capacity int) porcupine.Model {
	return porcupine.Model{
		Init: func() any {
			return &wsState{capacity: capacity, resv: map[string]resvState{}, holds: map[string]holdState{}}
		},
		Step: func(state, input, _ any) (bool, any) {
			if p, ok := input.(*batchPart); ok {
				return state.(*wsState).stepBatch(p)
			}
			return state.(*wsState).step(input.(*Op))
		},
		Equal: func(a, b any) bool { return a.(*wsState).equal(b.(*wsState)) },
		DescribeOperation: func(input, _ any) string {
			if p, ok := input.(*batchPart); ok {
				var items []string
				for _, op := range p.items {
					items = append(items, describe(op))
				}
				return fmt.Sprintf("atomic batch %d: %s", p.items[0].Batch, strings.Join(items, "; "))
			}
			return describe(input.(*Op))
		},
	}
}

func describe(op *Op) string {
	return fmt.Sprintf("%s %s %s q=%d → %d %s", op.Actor, op.Kind, op.Target, op.Quantity, op.Status, op.Body)
}

// linearizable checks the intents of ops, all about one workshop of
// capacity, against the model; it returns porcupine's verdict.
func linearizable(capacity int, ops []*Op, timeout time.Duration) porcupine.CheckResult {
	var hist []porcupine.Operation
	parts := map[int]*batchPart{}
	for _, op := range ops {
		// An import's rows are decided one after the other inside the
		// import's run, which the import check compares with an
		// uninterrupted import row by row.
		if (op.Role != Intent && op.Role != Refused) || !op.Answered() || op.Via == "import" {
			continue
		}
		var input any = op
		if op.Batch != 0 {
			// The items of one decision share its call and answer (only
			// an atomic batch's items are ever refused).
			if p := parts[op.Batch]; p != nil {
				p.items = append(p.items, op)
				continue
			}
			p := &batchPart{items: []*Op{op}}
			parts[op.Batch] = p
			input = p
		}
		hist = append(hist, porcupine.Operation{ClientId: op.Client, Input: input, Output: input, Call: int64(op.Call), Return: int64(op.Return)})
	}
	for _, p := range parts {
		slices.SortFunc(p.items, func(a, b *Op) int { return a.Item - b.Item })
	}
	slices.SortFunc(hist, func(a, b porcupine.Operation) int { return int(a.Call - b.Call) })
	return porcupine.CheckOperationsTimeout(workshopModel(capacity), hist, timeout)
}
