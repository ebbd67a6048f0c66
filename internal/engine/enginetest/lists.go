package enginetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// This file holds the conformance tests of a person's own reservations
// and holds.

// listAll pages through the reservations that f selects for who, limit at a
// time, and returns their ids in the order listed.
func (h *harness) listAll(who engine.Principal, f engine.ListFilter) []string {
	h.t.Helper()
	var ids []string
	for range 100 {
		rs, next, err := h.eng.Reservations(h.ctx, who, f)
		if err != nil {
			h.t.Fatalf("Reservations(%+v): %v", f, err)
		}
		for _, r := range rs {
			ids = append(ids, r.ID)
		}
		if next == "" {
			return ids
		}
		f.Cursor = next
	}
	h.t.Fatal("more than 100 pages")
	return nil
}

func testListReservations(t *testing.T, h *harness) {
	h.workshop("go-basics", 100, 1)
	h.workshop("rust", 100, 1)
	var mine, cancelled, rust []string
	for i := range 12 {
		w := "go-basics"
		if i%3 == 0 {
			w = "rust"
		}
		id := h.mustReserve("alice", newKey(), w, 1).Answer.ReservationID
		h.mustReserve("bob", newKey(), "go-basics", 1)
		if i%4 == 1 {
			h.mustCancel(alice, newKey(), id)
			cancelled = append(cancelled, id)
		} else if w == "rust" {
			rust = append(rust, id)
		}
		mine = append(mine, id)
		h.advance(time.Millisecond)
	}
	slices.Reverse(mine)
	slices.Reverse(cancelled)
	slices.Reverse(rust)
	active := slices.DeleteFunc(slices.Clone(mine), func(id string) bool { return slices.Contains(cancelled, id) })
	for _, limit := range []int{1, 5, 50} {
		if got := h.listAll(alice, engine.ListFilter{Status: engine.ListAll, Limit: limit}); !slices.Equal(got, mine) {
			t.Fatalf("all of alice's reservations, %d a page = %v, want newest first %v", limit, got, mine)
		}
	}
	if got := h.listAll(alice, engine.ListFilter{Limit: 4}); !slices.Equal(got, active) {
		t.Fatalf("alice's active reservations (the default) = %v, want %v", got, active)
	}
	if got := h.listAll(alice, engine.ListFilter{Status: engine.ListCancelled, Limit: 2}); !slices.Equal(got, cancelled) {
		t.Fatalf("alice's cancelled reservations = %v, want %v", got, cancelled)
	}
	if got := h.listAll(alice, engine.ListFilter{Workshop: "rust", Limit: 2}); !slices.Equal(got, rust) {
		t.Fatalf("alice's active rust reservations = %v, want %v", got, rust)
	}
	if got := h.listAll(ops, engine.ListFilter{Actor: "alice", Status: engine.ListAll}); !slices.Equal(got, mine) {
		t.Fatalf("an admin's list of alice's reservations = %v, want %v", got, mine)
	}
	if got := h.listAll(engine.Principal{Actor: "carol"}, engine.ListFilter{Status: engine.ListAll}); len(got) != 0 {
		t.Fatalf("carol, who reserved nothing, lists %v", got)
	}
	rs, _, err := h.eng.Reservations(h.ctx, alice, engine.ListFilter{Limit: 1})
	if err != nil || len(rs) != 1 || rs[0].Actor != "alice" || rs[0].Workshop == "" || rs[0].CreatedAt.IsZero() {
		t.Fatalf("a listed reservation = %+v, %v", rs, err)
	}
	_, _, err = h.eng.Reservations(h.ctx, bob, engine.ListFilter{Actor: "alice"})
	wantCode(t, err, engine.CodeForbidden)
	for _, f := range []engine.ListFilter{
		{Status: "gone"}, {Limit: -1}, {Limit: engine.MaxListLimit + 1}, {Workshop: "Not_An_Id"},
		{Cursor: "not a cursor"}, {Cursor: "MTIz"}, {Actor: "Bad Name"},
	} {
		_, _, err := h.eng.Reservations(h.ctx, ops, f)
		wantCode(t, err, engine.CodeRequestContract)
	}
}

func testListHolds(t *testing.T, h *harness) {
	h.workshop("go-basics", 100, 5)
	short, err := h.hold(alice, newKey(), "go-basics", 1, 30)
	if err != nil {
		t.Fatal(err)
	}
	h.advance(time.Millisecond)
	confirmed := h.mustHold(alice, "go-basics", 2).Answer.HoldID
	h.mustSettle(engine.OperationConfirm, alice, newKey(), confirmed)
	h.advance(time.Millisecond)
	open := h.mustHold(alice, "go-basics", 3).Answer.HoldID
	h.mustHold(bob, "go-basics", 1)
	h.advance(time.Minute) // short is past its deadline, never cleaned up.
	hs, next, err := h.eng.Holds(h.ctx, alice, engine.ListFilter{Status: engine.ListAll})
	if err != nil || next != "" || len(hs) != 3 {
		t.Fatalf("all of alice's holds = %+v, %q, %v", hs, next, err)
	}
	states := fmt.Sprintf("%v %v %v %v %v %v", hs[0].ID == open, hs[0].State, hs[1].ID == confirmed, hs[1].State, hs[2].ID == short.Answer.HoldID, hs[2].State)
	if states != "true held true confirmed true expired" {
		t.Fatalf("alice's holds, newest first, with their states now: %s", states)
	}
	for status, want := range map[string]string{"": open, "held": open, "confirmed": confirmed, "expired": short.Answer.HoldID} {
		hs, _, err := h.eng.Holds(h.ctx, alice, engine.ListFilter{Status: status})
		if err != nil || len(hs) != 1 || hs[0].ID != want {
			t.Errorf("alice's holds with status %q = %+v, %v; want %s", status, hs, err, want)
		}
	}
	hs, next, err = h.eng.Holds(h.ctx, alice, engine.ListFilter{Status: engine.ListAll, Limit: 2})
	if err != nil || len(hs) != 2 || next == "" {
		t.Fatalf("first page of 2 = %+v, %q, %v", hs, next, err)
	}
	rest, last, err := h.eng.Holds(h.ctx, alice, engine.ListFilter{Status: engine.ListAll, Cursor: next})
	if err != nil || last != "" || len(rest) != 1 || rest[0].ID != short.Answer.HoldID {
		t.Fatalf("second page = %+v, %q, %v", rest, last, err)
	}
	_, _, err = h.eng.Holds(h.ctx, alice, engine.ListFilter{Status: engine.ListActive})
	wantCode(t, err, engine.CodeRequestContract)
}

// testListVisitsOnlyItsPage: a page of an actor's reservations visits the
// page and one more record, whatever other actors and earlier pages hold.
func testListVisits(t *testing.T, h *harness) {
	h.workshop("go-basics", 1000, 1)
	for range 60 {
		h.mustReserve("bob", newKey(), "go-basics", 1)
	}
	for range 30 {
		h.mustReserve("alice", newKey(), "go-basics", 1)
		h.mustReserve("carol", newKey(), "go-basics", 1)
	}
	c := &countingStore{Store: h.store}
	eng := h.engineOn(c)
	f := engine.ListFilter{Limit: 5}
	for page := range 4 {
		c.reset()
		rs, next, err := eng.Reservations(h.ctx, alice, f)
		if err != nil || len(rs) != 5 || next == "" {
			t.Fatalf("page %d = %d reservations, next %q, %v", page, len(rs), next, err)
		}
		if v := c.visited.Load(); v > 6 {
			t.Fatalf("page %d of 5 reservations visited %d records", page, v)
		}
		f.Cursor = next
	}
}
