package pgstore_test

import (
	"crypto/rand"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/pgstore"
	"github.com/reserve/reserve/internal/pgstore/pgtest"
)

// newKey returns a random operation key (a lowercase UUIDv4).
func newKey(t *testing.T) engine.OperationKey {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return engine.OperationKey(fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]))
}

// TestTwoDaemonsOnAHotWorkshop lets two stores (two daemons) on one
// database reserve, repeat, cancel, hold and confirm places of one small
// workshop at once, so that both form groups: every key has at most one
// effect, a repeat answers what the first send answered, the workshop is
// never overbooked, and the check of the store finds nothing broken.
func TestTwoDaemonsOnAHotWorkshop(t *testing.T) {
	dsn, _ := pgtest.FreshSchema(t)
	var c commits
	stores := [2]*pgstore.Store{
		mustOpenDSN(t, dsn, pgstore.Options{MaxConns: 2, MaxAttempts: 50, OnCommit: c.record}),
		mustOpenDSN(t, dsn, pgstore.Options{MaxConns: 2, MaxAttempts: 50, OnCommit: c.record}),
	}
	engines := [2]*engine.Engine{engine.New(stores[0]), engine.New(stores[1])}
	const capacity = 7
	if _, _, err := engines[0].PutWorkshop(t.Context(), "hot", engine.WorkshopSpec{Capacity: capacity, MaxQuantity: 3}, nil); err != nil {
		t.Fatal(err)
	}
	const n = 40
	type result struct {
		key  engine.OperationKey
		outs [2]engine.Outcome
		errs [2]error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		results[i].key = newKey(t)
		for send := range 2 {
			wg.Go(func() {
				req := engine.Request{Workshop: "hot", Quantity: 1 + i%2}
				results[i].outs[send], results[i].errs[send] = engines[(i+send)%2].Reserve(t.Context(), "alice", results[i].key, req)
			})
		}
	}
	wg.Wait()
	reserved := 0
	var ids []string
	for i, r := range results {
		for send, err := range r.errs {
			if err != nil {
				t.Fatalf("reserve %d, send %d: %v", i, send, err)
			}
		}
		a, b := r.outs[0].Answer, r.outs[1].Answer
		if string(a.JSON()) != string(b.JSON()) {
			t.Errorf("key %s answered %s and %s", r.key, a.JSON(), b.JSON())
		}
		if a.Status == engine.StatusReserved {
			reserved += a.Quantity
			ids = append(ids, a.ReservationID)
		}
	}
	if reserved > capacity {
		t.Fatalf("%d places reserved of %d", reserved, capacity)
	}
	// Cancel every reservation from both daemons at once while new holds
	// and reservations compete for the places that come free.
	for i, id := range ids {
		key := newKey(t)
		for send := range 2 {
			wg.Go(func() {
				if _, err := engines[(i+send)%2].Cancel(t.Context(), engine.Principal{Actor: "alice"}, key, id); err != nil {
					t.Errorf("cancel %s: %v", id, err)
				}
			})
		}
	}
	for i := range n {
		wg.Go(func() {
			key := newKey(t)
			out, err := engines[i%2].Hold(t.Context(), "bob", key, engine.HoldRequest{Workshop: "hot", Quantity: 1, TTLSeconds: 600})
			if err != nil {
				t.Errorf("hold: %v", err)
				return
			}
			if out.Answer.Status != engine.StatusHeld {
				return
			}
			if _, err := engines[1-i%2].Confirm(t.Context(), engine.Principal{Actor: "bob"}, newKey(t), out.Answer.HoldID); err != nil {
				t.Errorf("confirm: %v", err)
			}
		})
	}
	wg.Wait()
	findings, err := stores[0].Check(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		t.Error(f)
	}
	w, err := engines[0].Workshop(t.Context(), "hot")
	if err != nil {
		t.Fatal(err)
	}
	if w.Reserved+w.Held > capacity {
		t.Fatalf("workshop %+v overbooked", w)
	}
	if !slices.ContainsFunc(c.get(), func(calls int) bool { return calls > 1 }) {
		t.Errorf("commits of %v Updates: no group formed", c.get())
	}
}
