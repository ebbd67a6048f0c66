package chaos_test

import (
	"fmt"
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
		Capacity: map[string]int{"w": 2},
		Received: map[string]int{}, ReceivedPayloads: map[string][]byte{},
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
	reserved := 0
	for _, r := range h.final.Reservations {
		if !r.Cancelled() {
			reserved += r.Quantity
		}
	}
	h.final.Workshops = []engine.Workshop{{ID: "w", Capacity: 2, Reserved: reserved}}
	return h.final
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
		{"two events for one effect", chaos.CheckOutbox, func(h *history) {
			h.event(engine.EventReserved, h.final.Reservations[1].ID)
		}},
		{"import differs", chaos.CheckImport, func(h *history) {
			h.final.ImportGot, h.final.ImportWant = []string{"reserved", "unavailable"}, []string{"reserved", "reserved"}
		}},
		{"reserved check finding", chaos.CheckStore, func(h *history) {
			h.final.CheckOutput = "workshop w: counter 2, reservations 1"
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := valid()
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
