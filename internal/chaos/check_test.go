package chaos_test

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/chaos"
	"github.com/reserve/reserve/internal/engine"
)

// history builds a small history of one workshop "w" of capacity 2 and
// the final state that matches it.
type history struct {
	ops   []*chaos.Op
	final chaos.Final
	n     int
}

func newHistory() *history {
	return &history{final: chaos.Final{
		Capacity: map[string]int{"w": 2, "vv": 3},
		Received: map[string]int{}, ReceivedPayloads: map[string][]byte{},
		StoredKeys: map[string]bool{},
	}}
}

func key(n int) engine.OperationKey {
	return engine.OperationKey(fmt.Sprintf("00000000-0000-4000-8000-%012d", n))
}

func id(n int) string { return fmt.Sprintf("%032x", n) }

// reserve adds an intent of actor from call to ret answered with status
// (reserved or unavailable), and its reservation and event to the final
// state when it was reserved; it returns the op and the reservation id.
func (h *history) reserve(actor string, call, ret int, status string) (*chaos.Op, string) {
	h.n++
	a := engine.Answer{Kind: engine.OperationReserve, Status: status, Workshop: "w", Quantity: 1}
	code := 409
	if status == engine.StatusReserved {
		a.ReservationID, code = id(h.n), 201
		h.final.Reservations = append(h.final.Reservations, engine.Reservation{ID: a.ReservationID, Actor: actor, OperationKey: key(h.n), Workshop: "w", Quantity: 1})
		h.event(engine.EventReserved, a.ReservationID)
	}
	op := &chaos.Op{Actor: actor, Role: chaos.Intent, Kind: engine.OperationReserve, Key: key(h.n), Workshop: "w", Quantity: 1, Via: "go",
		Call: time.Duration(call), Return: time.Duration(ret), Status: code, Body: a.JSON()}
	h.ops = append(h.ops, op)
	return op, a.ReservationID
}

// cancel adds a cancel of reservation rid answered with status.
func (h *history) cancel(actor, rid string, call, ret int, status string) *chaos.Op {
	h.n++
	a := engine.Answer{Kind: engine.OperationCancel, Status: status, ReservationID: rid, Workshop: "w", Quantity: 1}
	op := &chaos.Op{Actor: actor, Role: chaos.Intent, Kind: engine.OperationCancel, Key: key(h.n), Workshop: "w", Target: rid, Via: "go",
		Call: time.Duration(call), Return: time.Duration(ret), Status: 200, Body: a.JSON()}
	h.ops = append(h.ops, op)
	return op
}

func (h *history) event(typ, rid string) {
	evID := fmt.Sprintf("%032x", 1000+len(h.final.Events))
	h.final.Events = append(h.final.Events, engine.Event{ID: evID, Type: typ, ReservationID: rid})
	h.final.Received[evID] = 1
	h.final.ReceivedPayloads[evID] = fmt.Appendf(nil, `{"id":%q,"type":%q,"reservation_id":%q}`, evID, typ, rid)
}

// workshops sets the final workshop view from the final reservations.
func (h *history) workshops() chaos.Final {
	reserved := map[string]int{}
	for _, r := range h.final.Reservations {
		if !r.Cancelled() {
			reserved[r.Workshop] += r.Quantity
		}
	}
	h.final.Workshops = []engine.Workshop{{ID: "w", Capacity: 2, MaxQuantity: 2, Reserved: reserved["w"]}, {ID: "vv", Capacity: 3, MaxQuantity: 2, Reserved: reserved["vv"]}}
	return h.final
}

// item is one item of an atomic batch: its workshop and quantity, and its
// result: reserved, or else a problem's code and, for batch_refused, its
// detail. A key other than 0 is an earlier key the item uses again.
type item struct {
	workshop string
	quantity int
	code     string
	detail   string
	key      engine.OperationKey
}

// The reasons of batch_refused, as the service names them in the item's
// "reason" member.
const (
	reservable  = engine.ReasonOtherItemRefused
	unavailable = engine.ReasonUnavailable
	undecided   = engine.ReasonNotDecided
)

// atomic adds the decision of an atomic batch of actor from call to ret:
// every item reserved (and its reservation, receipt and event in the
// final state) when no item has a code, else refused as a whole. It
// returns the items' operations.
func (h *history) atomic(actor string, batch, call, ret int, items ...item) []*chaos.Op {
	refused := false
	for _, it := range items {
		refused = refused || it.code != ""
	}
	var ops []*chaos.Op
	for i, it := range items {
		h.n++
		k := key(h.n)
		if it.key != "" {
			k = it.key
		}
		op := &chaos.Op{Actor: actor, Role: chaos.Intent, Kind: engine.OperationReserve, Key: k, Workshop: it.workshop, Quantity: it.quantity, Via: "atomic",
			Call: time.Duration(call), Return: time.Duration(ret), Batch: batch, Item: i}
		switch {
		case refused:
			op.Role, op.Status, op.Code = chaos.Refused, 409, it.code
			// The detail of batch_refused is the reason's; an item's own
			// refusal has its code as its reason.
			reason := it.code
			if it.code == engine.CodeBatchRefused {
				reason = it.detail
			}
			op.Body = fmt.Appendf(nil, `{"type":"about:blank","title":"Conflict","status":409,"code":%q,"detail":%q,"reason":%q}`, it.code, it.detail, reason)
		default:
			a := engine.Answer{Kind: engine.OperationReserve, Status: engine.StatusReserved, ReservationID: id(h.n), Workshop: it.workshop, Quantity: it.quantity}
			op.Status, op.Body = 201, a.JSON()
			h.final.Reservations = append(h.final.Reservations, engine.Reservation{ID: a.ReservationID, Actor: actor, OperationKey: k, Workshop: it.workshop, Quantity: it.quantity})
			h.final.StoredKeys[actor+"/"+string(k)] = true
			h.event(engine.EventReserved, a.ReservationID)
			h.final.Events[len(h.final.Events)-1].Actor, h.final.Events[len(h.final.Events)-1].OperationKey = actor, k
		}
		h.ops = append(h.ops, op)
		ops = append(ops, op)
	}
	return ops
}

// withAtomicBatches adds to h, after its other operations, atomic batches
// that keep every promise: one reserved over both workshops, one refused
// for too few places (only because an item before it in its workshop
// could have been reserved) and an unknown workshop, one refused for an
// invalid item, one refused for a key used before with another payload,
// and that one sent again later and refused for the same reason; one
// reserved with an item twice under one key (one operation), and one
// refused with a key twice with two payloads.
func withAtomicBatches(h *history) *history {
	h.atomic("alice", 1, 300, 310, item{workshop: "w", quantity: 1}, item{workshop: "vv", quantity: 2})
	h.atomic("bob", 2, 320, 330, item{workshop: "vv", quantity: 1, code: engine.CodeBatchRefused, detail: reservable},
		item{workshop: "vv", quantity: 1, code: engine.CodeBatchRefused, detail: unavailable},
		item{workshop: "gone", quantity: 1, code: engine.CodeUnknownWorkshop, detail: `workshop "gone" does not exist`})
	h.atomic("carol", 3, 340, 350, item{workshop: "vv", quantity: 0, code: engine.CodeRequestContract, detail: "item 1: quantity"},
		item{workshop: "vv", quantity: 1, code: engine.CodeBatchRefused, detail: undecided})
	first := h.ops[1] // Bob's reservation of w×1.
	conflict := item{workshop: "w", quantity: 2, code: engine.CodeOperationConflict, detail: "another payload", key: first.Key}
	h.atomic("bob", 4, 360, 370, item{workshop: "vv", quantity: 1, code: engine.CodeBatchRefused, detail: undecided}, conflict)
	resent := h.ops[len(h.ops)-2].Key
	h.atomic("bob", 5, 380, 390, item{workshop: "vv", quantity: 1, code: engine.CodeBatchRefused, detail: undecided, key: resent}, conflict)
	twice := h.atomic("carol", 7, 420, 430, item{workshop: "vv", quantity: 1})[0]
	again := *twice
	again.Item = 1
	h.ops = append(h.ops, &again)
	k := key(900)
	h.atomic("carol", 8, 440, 450, item{workshop: "w", quantity: 1, code: engine.CodeBatchRefused, detail: unavailable, key: k},
		item{workshop: "w", quantity: 2, code: engine.CodeOperationConflict, detail: "item 2 has the operation key of item 1 with another payload", key: k})
	return h
}

// refusedItem returns the operation of item i of atomic batch n.
func (h *history) refusedItem(n, i int) *chaos.Op {
	for _, op := range h.ops {
		if op.Batch == n && op.Item == i {
			return op
		}
	}
	panic(fmt.Sprintf("no item %d in batch %d", i, n))
}

func TestCheckAcceptsAtomicBatches(t *testing.T) {
	h := withAtomicBatches(valid())
	if r := chaos.Check(h.ops, h.workshops()); len(r.Violations) != 0 || r.Unknown != 0 {
		t.Fatalf("violations in a valid history: %v (unknown %d)", r.Violations, r.Unknown)
	}
	counts := chaos.AtomicCounts(h.ops)
	if want := map[string]int{"reserved": 2, "refused": 5, "resent": 1}; !maps.Equal(counts, want) {
		t.Errorf("AtomicCounts = %v, want %v", counts, want)
	}
}

// valid is a history that breaks no promise: two reservations, one
// unavailable, a cancel, a replay and a conflict.
func valid() *history {
	h := newHistory()
	_, r1 := h.reserve("alice", 0, 10, engine.StatusReserved)
	h.reserve("bob", 5, 15, engine.StatusReserved)
	h.reserve("carol", 20, 30, engine.StatusUnavailable)
	h.cancel("alice", r1, 40, 50, engine.StatusCancelled)
	h.final.Reservations[0].CancelledAt = time.Unix(1, 0)
	h.event(engine.EventCancelled, r1)
	first := h.ops[1]
	h.ops = append(h.ops, &chaos.Op{Actor: first.Actor, Role: chaos.Replay, Kind: first.Kind, Key: first.Key, Workshop: "w", Quantity: 1,
		Call: 60, Return: 70, Status: first.Status, Body: first.Body})
	h.ops = append(h.ops, &chaos.Op{Actor: first.Actor, Role: chaos.Conflict, Kind: first.Kind, Key: first.Key, Workshop: "w", Quantity: 2,
		Call: 60, Return: 70, Status: 409, Code: engine.CodeOperationConflict, Body: []byte(`{"code":"operation_conflict"}`)})
	return h
}

func TestCheckAcceptsAValidHistory(t *testing.T) {
	h := valid()
	if r := chaos.Check(h.ops, h.workshops()); len(r.Violations) != 0 || r.Unknown != 0 {
		t.Fatalf("violations in a valid history: %v (unknown %d)", r.Violations, r.Unknown)
	}
}

// TestOutboxSinkGetsReservationEventsOnly: hold events are committed
// beside the reservation events, and the outbox's simple channel, which
// never delivered them, owes the sink none of them.
func TestOutboxSinkGetsReservationEventsOnly(t *testing.T) {
	h := valid()
	h.final.Events = append(h.final.Events, engine.Event{ID: id(99), Type: engine.EventHoldCreated, HoldID: id(98)})
	if r := chaos.Check(h.ops, h.workshops()); len(r.Violations) != 0 || r.Unknown != 0 {
		t.Fatalf("an undelivered hold event is a violation: %v (unknown %d)", r.Violations, r.Unknown)
	}
}

// hookBodies returns the body of each event of h, as a webhook endpoint
// gets it.
func hookBodies(h *history) map[string][][]byte {
	got := map[string][][]byte{}
	for _, ev := range h.final.Events {
		got[ev.ID] = [][]byte{fmt.Appendf(nil, `{"type":%q,"data":{}}`, engine.WebhookType(ev.Type))}
	}
	return got
}

// createdOnly is an endpoint subscribed to new reservations only.
var createdOnly = engine.WebhookEndpoint{ID: id(78), EventTypes: []string{engine.WebhookReservationCreated}}

// TestCheckAcceptsWebhooksAsTheyMayArrive: an endpoint that refused some
// attempts and got them again with the same body, and one subscribed to
// some types that got those only (some after refusing them), are what a
// campaign should see.
func TestCheckAcceptsWebhooksAsTheyMayArrive(t *testing.T) {
	h := valid()
	all, created := hookBodies(h), map[string][][]byte{}
	for _, ev := range h.final.Events {
		if ev.Type == engine.EventReserved {
			created[ev.ID] = all[ev.ID]
		}
	}
	h.final.Hooks = []chaos.HookEndpoint{
		{Endpoint: engine.WebhookEndpoint{ID: id(77)}, Received: all, Refused: all},
		{Endpoint: createdOnly, Received: created, Refused: created},
	}
	if r := chaos.Check(h.ops, h.workshops()); len(r.Violations) != 0 {
		t.Fatalf("violations: %v", r.Violations)
	}
}

// TestCheckCatchesEachViolation breaks one promise at a time in the valid
// history and expects the check that guards it, and only a violation, to
// report it: a checker that cannot fail proves nothing.
func TestCheckCatchesEachViolation(t *testing.T) {
	for _, c := range []struct {
		name, check string
		breakIt     func(h *history)
	}{
		{"double effect", chaos.CheckDoubleEffect, func(h *history) {
			r := h.final.Reservations[1]
			r.ID = id(99)
			h.final.Reservations = append(h.final.Reservations, r)
		}},
		{"lost ack", chaos.CheckLostAck, func(h *history) {
			h.final.Reservations = h.final.Reservations[:1]
		}},
		{"lost cancel", chaos.CheckLostAck, func(h *history) {
			h.final.Reservations[0].CancelledAt = time.Time{}
		}},
		{"phantom effect", chaos.CheckPhantomEffect, func(h *history) {
			h.final.Reservations = append(h.final.Reservations, engine.Reservation{ID: id(77), Actor: "mallory", OperationKey: key(77), Workshop: "w", Quantity: 1})
		}},
		{"unavailable while places were free", chaos.CheckLinearizable, func(h *history) {
			h.reserve("dave", 100, 110, engine.StatusUnavailable)
		}},
		{"already cancelled before any cancel", chaos.CheckLinearizable, func(h *history) {
			h.ops[3].Body = engine.Answer{Kind: engine.OperationCancel, Status: engine.StatusAlreadyCancelled, ReservationID: h.ops[3].Target, Workshop: "w", Quantity: 1}.JSON()
		}},
		{"capacity exceeded in the history", chaos.CheckLinearizable, func(h *history) {
			// A third reservation while two places are taken.
			h.reserve("erin", 12, 18, engine.StatusReserved)
		}},
		{"capacity exceeded in the store", chaos.CheckCapacity, func(h *history) {
			h.final.Workshops[0].Reserved = 3
		}},
		{"replay bytes differ", chaos.CheckReplay, func(h *history) {
			h.ops[4].Body = append([]byte(nil), h.ops[4].Body...)
			h.ops[4].Body[len(h.ops[4].Body)-2] = '2'
		}},
		{"answers of one intent differ", chaos.CheckReplay, func(h *history) {
			h.ops[0].Others = [][]byte{[]byte(`{"status":"unavailable","workshop":"w","quantity":1}`)}
		}},
		{"conflict not refused", chaos.CheckConflict, func(h *history) {
			h.ops[5].Status, h.ops[5].Code = 201, ""
		}},
		{"unsettled intent", chaos.CheckUnsettled, func(h *history) {
			h.ops[2].Return = -1
		}},
		{"event never delivered", chaos.CheckOutbox, func(h *history) {
			delete(h.final.Received, h.final.Events[0].ID)
		}},
		{"webhook never delivered", chaos.CheckWebhooks, func(h *history) {
			h.final.Hooks = []chaos.HookEndpoint{{Endpoint: engine.WebhookEndpoint{ID: id(77)}, Received: map[string][][]byte{}}}
		}},
		{"webhook with two bodies", chaos.CheckWebhooks, func(h *history) {
			got := map[string][][]byte{}
			for _, ev := range h.final.Events {
				body := fmt.Appendf(nil, `{"type":%q,"data":{}}`, engine.WebhookType(ev.Type))
				got[ev.ID] = [][]byte{body, append(body, ' ')}
			}
			h.final.Hooks = []chaos.HookEndpoint{{Endpoint: engine.WebhookEndpoint{ID: id(77)}, Received: got}}
		}},
		{"webhook refused with another body than it was delivered with", chaos.CheckWebhooks, func(h *history) {
			got := hookBodies(h)
			first := h.final.Events[0].ID
			refused := map[string][][]byte{first: {append(slices.Clone(got[first][0]), ' ')}}
			h.final.Hooks = []chaos.HookEndpoint{{Endpoint: engine.WebhookEndpoint{ID: id(77)}, Received: got, Refused: refused}}
		}},
		{"webhook refused of an event the store does not have", chaos.CheckWebhooks, func(h *history) {
			refused := map[string][][]byte{id(99): {[]byte(`{"type":"reservation.created","data":{}}`)}}
			h.final.Hooks = []chaos.HookEndpoint{{Endpoint: engine.WebhookEndpoint{ID: id(77)}, Received: hookBodies(h), Refused: refused}}
		}},
		{"webhook of a type the endpoint did not subscribe to", chaos.CheckWebhooks, func(h *history) {
			h.final.Hooks = []chaos.HookEndpoint{{Endpoint: createdOnly, Received: hookBodies(h)}}
		}},
		{"webhook refused of a type the endpoint did not subscribe to", chaos.CheckWebhooks, func(h *history) {
			got, refused := hookBodies(h), map[string][][]byte{}
			for _, ev := range h.final.Events {
				if ev.Type != engine.EventReserved {
					refused[ev.ID] = got[ev.ID]
					delete(got, ev.ID)
				}
			}
			h.final.Hooks = []chaos.HookEndpoint{{Endpoint: createdOnly, Received: got, Refused: refused}}
		}},
		{"webhook that did not verify", chaos.CheckWebhooks, func(h *history) {
			h.final.HookBad = []string{"a delivery to /all that does not verify"}
		}},
		{"two events for one effect", chaos.CheckOutbox, func(h *history) {
			h.event(engine.EventReserved, h.final.Reservations[1].ID)
		}},
		{"import differs", chaos.CheckImport, func(h *history) {
			h.final.ImportGot, h.final.ImportWant = []string{"reserved", "unavailable"}, []string{"reserved", "reserved"}
		}},
		{"reserved check finding", chaos.CheckStore, func(h *history) {
			h.final.CheckOutput = "workshop w: counter 2, reservations 1"
		}},
		{"atomic batch half reserved", chaos.CheckAtomic, func(h *history) {
			// Answered 200 with its item v×2 unavailable, and only its
			// other item stored.
			op := h.refusedItem(1, 1)
			op.Status, op.Body = 409, engine.Answer{Kind: engine.OperationReserve, Status: engine.StatusUnavailable, Workshop: "vv", Quantity: 2}.JSON()
			h.final.Reservations = slices.DeleteFunc(h.final.Reservations, func(r engine.Reservation) bool { return r.OperationKey == op.Key })
			h.final.Events = slices.DeleteFunc(h.final.Events, func(e engine.Event) bool { return e.OperationKey == op.Key })
			h.workshops()
		}},
		{"refused batch with a stored receipt", chaos.CheckAtomic, func(h *history) {
			op := h.refusedItem(2, 0)
			h.final.StoredKeys[op.Actor+"/"+string(op.Key)] = true
		}},
		{"refused batch with a stored reservation", chaos.CheckAtomic, func(h *history) {
			op := h.refusedItem(2, 0)
			h.final.Reservations = append(h.final.Reservations, engine.Reservation{ID: id(88), Actor: op.Actor, OperationKey: op.Key, Workshop: "vv", Quantity: 1})
			h.final.StoredKeys[op.Actor+"/"+string(op.Key)] = true
			h.event(engine.EventReserved, id(88))
			h.workshops()
		}},
		{"refused for too few places while places were free", chaos.CheckLinearizable, func(h *history) {
			h.atomic("dave", 6, 400, 410, item{workshop: "vv", quantity: 1, code: engine.CodeBatchRefused, detail: unavailable},
				item{workshop: "w", quantity: 1, code: engine.CodeBatchRefused, detail: unavailable})
		}},
		{"refused item said reservable without places", chaos.CheckLinearizable, func(h *history) {
			h.refusedItem(2, 0).Quantity = 2
		}},
		{"refused with no reason", chaos.CheckAtomic, func(h *history) {
			h.atomic("dave", 6, 400, 410, item{workshop: "w", quantity: 1, code: engine.CodeBatchRefused, detail: undecided},
				item{workshop: "vv", quantity: 1, code: engine.CodeBatchRefused, detail: undecided})
		}},
		{"refused for a reason that is not its code", chaos.CheckAtomic, func(h *history) {
			op := h.refusedItem(2, 2)
			op.Body = bytes.Replace(op.Body, []byte(`"reason":"unknown_workshop"`), []byte(`"reason":"unavailable"`), 1)
		}},
		{"refused for an unknown workshop that exists", chaos.CheckAtomic, func(h *history) {
			h.refusedItem(2, 2).Workshop = "vv"
		}},
		{"refused as invalid, and valid", chaos.CheckAtomic, func(h *history) {
			h.refusedItem(3, 0).Quantity = 1
		}},
		{"refused as a conflict with the same payload", chaos.CheckAtomic, func(h *history) {
			h.refusedItem(4, 1).Quantity = 1
		}},
		{"an item twice answered as two reservations", chaos.CheckLinearizable, func(h *history) {
			op := h.refusedItem(7, 1)
			op.Body = engine.Answer{Kind: engine.OperationReserve, Status: engine.StatusReserved, ReservationID: id(98), Workshop: "vv", Quantity: 1}.JSON()
		}},
		{"a conflict in a batch with the same payload", chaos.CheckAtomic, func(h *history) {
			h.refusedItem(8, 1).Quantity = 1
		}},
		{"refused item answered as made", chaos.CheckAtomic, func(h *history) {
			op := h.refusedItem(3, 1)
			op.Role, op.Status, op.Code = chaos.Intent, 409, ""
			op.Body = engine.Answer{Kind: engine.OperationReserve, Status: engine.StatusUnavailable, Workshop: "vv", Quantity: 1}.JSON()
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := withAtomicBatches(valid())
			h.workshops()
			c.breakIt(h)
			r := chaos.Check(h.ops, h.final)
			found := false
			var got []string
			for _, v := range r.Violations {
				got = append(got, v.String())
				found = found || v.Check == c.check
			}
			if !found {
				t.Errorf("no %s violation; got %s", c.check, strings.Join(got, "; "))
			}
		})
	}
}

// hold adds a hold intent of actor for q places answered held (and the hold
// to the final state), and returns the op and the hold id.
func (h *history) hold(actor string, q, call, ret, epoch int) (*chaos.Op, string) {
	h.n++
	a := engine.Answer{Kind: engine.OperationHold, Status: engine.StatusHeld, HoldID: id(h.n), Workshop: "w", Quantity: q, ExpiresAt: time.Unix(1e9, 0).UTC()}
	h.final.Holds = append(h.final.Holds, engine.Hold{ID: a.HoldID, Actor: actor, OperationKey: key(h.n), Workshop: "w", Quantity: q})
	op := &chaos.Op{Actor: actor, Role: chaos.Intent, Kind: engine.OperationHold, Key: key(h.n), Workshop: "w", Quantity: q, TTL: 600, Via: "go",
		Call: time.Duration(call), Return: time.Duration(ret), Epoch: epoch, Status: 201, Body: a.JSON()}
	h.ops = append(h.ops, op)
	return op, a.HoldID
}

// settle adds a confirm or release of hold hid answered with status (and
// a reservation made by a confirm).
func (h *history) settle(actor string, kind engine.OperationKind, hid string, q, call, ret, epoch int, status string) {
	h.n++
	a := engine.Answer{Kind: kind, Status: status, HoldID: hid, Workshop: "w", Quantity: q}
	if status == engine.StatusReserved {
		a.ReservationID = id(h.n)
		h.final.Reservations = append(h.final.Reservations, engine.Reservation{ID: a.ReservationID, Actor: actor, OperationKey: key(h.n), Workshop: "w", Quantity: q})
		h.event(engine.EventReserved, a.ReservationID)
	}
	h.ops = append(h.ops, &chaos.Op{Actor: actor, Role: chaos.Intent, Kind: kind, Key: key(h.n), Workshop: "w", Quantity: q, Target: hid, Via: "go",
		Call: time.Duration(call), Return: time.Duration(ret), Epoch: epoch, Status: 201, Body: a.JSON()})
}

// TestCheckHolds runs the model of holds: held places count against
// capacity until confirmed, released or expired (by a clock jump), and a
// confirm or release answers by the hold's state and the clock.
func TestCheckHolds(t *testing.T) {
	for _, c := range []struct {
		name  string
		build func(h *history)
		legal bool
	}{
		{"hold, confirm, release after confirm", func(h *history) {
			_, hid := h.hold("alice", 2, 0, 10, 0)
			h.settle("alice", engine.OperationConfirm, hid, 2, 20, 30, 0, engine.StatusReserved)
			h.settle("alice", engine.OperationRelease, hid, 2, 40, 50, 0, engine.StatusAlreadyConfirmed)
		}, true},
		{"held places are taken", func(h *history) {
			h.hold("alice", 2, 0, 10, 0)
			h.reserve("bob", 20, 30, engine.StatusUnavailable)
		}, true},
		{"a reservation into held places", func(h *history) {
			h.hold("alice", 2, 0, 10, 0)
			h.reserve("bob", 20, 30, engine.StatusReserved)
		}, false},
		{"an expired hold frees its places", func(h *history) {
			h.hold("alice", 2, 0, 10, 0)
			h.reserve("bob", 20, 30, engine.StatusReserved)
			h.ops[len(h.ops)-1].Epoch = 1
		}, true},
		{"an expired hold cannot be confirmed", func(h *history) {
			_, hid := h.hold("alice", 2, 0, 10, 0)
			h.settle("alice", engine.OperationConfirm, hid, 2, 20, 30, 1, engine.StatusReserved)
		}, false},
		{"confirm after the jump answers expired", func(h *history) {
			_, hid := h.hold("alice", 2, 0, 10, 0)
			h.settle("alice", engine.OperationConfirm, hid, 2, 20, 30, 1, engine.StatusExpired)
		}, true},
		{"released, then confirmed", func(h *history) {
			_, hid := h.hold("alice", 1, 0, 10, 0)
			h.settle("alice", engine.OperationRelease, hid, 1, 20, 30, 0, engine.StatusReleased)
			h.settle("alice", engine.OperationConfirm, hid, 1, 40, 50, 0, engine.StatusReserved)
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHistory()
			c.build(h)
			h.workshops()
			h.final.Workshops[0].Held = 0
			r := chaos.Check(h.ops, h.final)
			illegal := false
			for _, v := range r.Violations {
				if v.Check == chaos.CheckLinearizable {
					illegal = true
				}
			}
			if illegal == c.legal {
				t.Errorf("linearizable = %v, want %v (violations %v)", !illegal, c.legal, r.Violations)
			}
		})
	}
}

// TestCheckWaitingLists: a workshop with a waiting list is left out of
// the linearizability model (a walk-in refused while places are free is
// legal there) and judged by what the store holds: an entry nobody was
// told of, an acknowledged entry that is gone, and a second offer of one
// entry are violations.
func TestCheckWaitingLists(t *testing.T) {
	build := func() *history {
		h := newHistory()
		h.final.Waitlisted = []string{"w"}
		h.n++
		a := engine.Answer{Kind: engine.OperationReserve, Status: engine.StatusWaiting, EntryID: id(100), Workshop: "w", Quantity: 1, Position: 1}
		h.ops = append(h.ops, &chaos.Op{Actor: "alice", Role: chaos.Intent, Kind: engine.OperationReserve, Key: key(h.n), Workshop: "w", Quantity: 1,
			Waitlist: true, Via: "go", Call: 0, Return: 10, Status: 202, Body: a.JSON()})
		h.final.Entries = append(h.final.Entries, engine.WaitEntry{ID: id(100), Actor: "alice", OperationKey: key(h.n), Workshop: "w", Quantity: 1,
			State: engine.WaitOffered, HoldID: id(101)})
		h.final.Holds = append(h.final.Holds, engine.Hold{ID: id(101), Actor: "alice", OperationKey: key(h.n), Workshop: "w", Quantity: 1,
			State: engine.HoldHeld, WaitEntry: id(100)})
		h.reserve("bob", 20, 30, engine.StatusUnavailable) // A walk-in while alice waits.
		h.workshops()
		h.final.Workshops[0].Held = 1
		return h
	}
	if r := chaos.Check(build().ops, build().final); len(r.Violations) != 0 {
		t.Fatalf("a valid history with a waiting list: %v", r.Violations)
	}
	for _, c := range []struct {
		name, want string
		spoil      func(h *history)
	}{
		{"an entry nobody was told of", "was never acknowledged", func(h *history) {
			h.final.Entries = append(h.final.Entries, engine.WaitEntry{ID: id(200), Actor: "carol", OperationKey: key(200), Workshop: "w", Quantity: 1, State: engine.WaitWaiting})
		}},
		{"an acknowledged entry that is gone", "is not in the store", func(h *history) {
			h.final.Entries, h.final.Holds = nil, nil
		}},
		{"two offers of one entry", "offered places 2 times", func(h *history) {
			h.final.Holds = append(h.final.Holds, engine.Hold{ID: id(102), Actor: "alice", Workshop: "w", Quantity: 1, State: engine.HoldHeld, WaitEntry: id(100)})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := build()
			c.spoil(h)
			r := chaos.Check(h.ops, h.final)
			found := false
			for _, v := range r.Violations {
				found = found || strings.Contains(v.Detail, c.want)
			}
			if !found {
				t.Errorf("violations %v, want one saying %q", r.Violations, c.want)
			}
		})
	}
}
