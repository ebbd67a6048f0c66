package enginetest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// This file holds the conformance tests of the time-ordered scans: receipt
// expiry in bounded steps and the operations view, which both read them.

// countingStore counts what the engine asks of a store: write transactions,
// the most receipts one run of a write function deletes, and the records
// that scans visit.
type countingStore struct {
	engine.Store
	updates    atomic.Int64
	maxDeletes atomic.Int64
	visited    atomic.Int64
}

func (c *countingStore) reset() {
	c.updates.Store(0)
	c.maxDeletes.Store(0)
	c.visited.Store(0)
}

func (c *countingStore) Update(ctx context.Context, fn func(engine.Tx) error) error {
	c.updates.Add(1)
	return c.Store.Update(ctx, func(tx engine.Tx) error {
		ct := &countingTx{Tx: tx, c: c}
		err := fn(ct)
		for {
			old := c.maxDeletes.Load()
			if ct.deletes <= old || c.maxDeletes.CompareAndSwap(old, ct.deletes) {
				return err
			}
		}
	})
}

func (c *countingStore) View(ctx context.Context, fn func(engine.Tx) error) error {
	return c.Store.View(ctx, func(tx engine.Tx) error { return fn(&countingTx{Tx: tx, c: c}) })
}

// countingTx is one run of a transaction function on a countingStore.
type countingTx struct {
	engine.Tx
	c       *countingStore
	deletes int64
}

// counted calls fn after counting the visit.
func counted[R any](c *countingStore, fn func(R) error) func(R) error {
	return func(r R) error {
		c.visited.Add(1)
		return fn(r)
	}
}

func (t *countingTx) DeleteReceipt(actor string, key engine.OperationKey) error {
	t.deletes++
	return t.Tx.DeleteReceipt(actor, key)
}

func (t *countingTx) ForEachReceipt(fn func(engine.Receipt) error) error {
	return t.Tx.ForEachReceipt(counted(t.c, fn))
}

func (t *countingTx) ForEachTombstone(fn func(engine.Tombstone) error) error {
	return t.Tx.ForEachTombstone(counted(t.c, fn))
}

func (t *countingTx) ForEachReceiptCreatedBefore(at time.Time, fn func(engine.Receipt) error) error {
	return t.Tx.ForEachReceiptCreatedBefore(at, counted(t.c, fn))
}

func (t *countingTx) ForEachReceiptNewestFirst(from engine.TimePosition, fn func(engine.Receipt) error) error {
	return t.Tx.ForEachReceiptNewestFirst(from, counted(t.c, fn))
}

func (t *countingTx) ForEachTombstoneNewestFirst(from engine.TimePosition, fn func(engine.Tombstone) error) error {
	return t.Tx.ForEachTombstoneNewestFirst(from, counted(t.c, fn))
}

func (t *countingTx) ForEachOpenHold(workshop string, through time.Time, fn func(engine.Hold) error) error {
	return t.Tx.ForEachOpenHold(workshop, through, counted(t.c, fn))
}

// reserveMany stores n reservations of one place in workshop, by a few
// actors, at the harness's current time.
func (h *harness) reserveMany(workshop string, n int) {
	h.t.Helper()
	items := make([]engine.BatchItem, n)
	for i := range items {
		items[i] = engine.BatchItem{Actor: fmt.Sprintf("actor-%d", i%7), Key: newKey(), Request: engine.Request{Workshop: workshop, Quantity: 1}}
	}
	vs, err := h.eng.ReserveBatch(h.ctx, items)
	if err != nil {
		h.t.Fatal(err)
	}
	for i, v := range vs {
		if v.Refusal != nil {
			h.t.Fatalf("batch item %d: %v", i, v.Refusal)
		}
	}
}

// testExpiryInSteps: when nothing is old enough, expiry visits no receipt
// and writes nothing; many old receipts are turned in write transactions
// of at most engine.ExpireStep receipts, and each call visits only the
// receipts it turns (and one more), not the ones an earlier call turned nor
// the recent ones.
func testExpiryInSteps(t *testing.T, h *harness) {
	const old = 3*engine.ExpireStep + 5
	h.workshop("go-basics", 1000, 1)
	h.reserveMany("go-basics", old)
	c := &countingStore{Store: h.store}
	eng := h.engineOn(c)
	const retention = 24 * time.Hour

	n, err := eng.ExpireReceipts(h.ctx, retention, 1000)
	if err != nil || n != 0 || c.updates.Load() != 0 || c.visited.Load() != 0 {
		t.Fatalf("ExpireReceipts with nothing old = %d, %v after %d writes visiting %d receipts; want 0 after no write visiting none",
			n, err, c.updates.Load(), c.visited.Load())
	}

	h.advance(2 * retention)
	h.mustReserve("bob", newKey(), "go-basics", 1) // Recent: it stays.
	const limit = 100
	for _, want := range []int{limit, old - limit, 0} {
		c.reset()
		n, err := eng.ExpireReceipts(h.ctx, retention, limit)
		steps := int64((want + engine.ExpireStep - 1) / engine.ExpireStep)
		switch {
		case err != nil || n != want:
			t.Fatalf("ExpireReceipts(limit %d) = %d, %v; want %d", limit, n, err, want)
		case c.updates.Load() != steps:
			t.Fatalf("ExpireReceipts turned %d receipts in %d write transactions, want %d", n, c.updates.Load(), steps)
		case c.maxDeletes.Load() > engine.ExpireStep:
			t.Fatalf("one write transaction of ExpireReceipts deleted %d receipts, more than %d", c.maxDeletes.Load(), engine.ExpireStep)
		case c.visited.Load() > int64(want+1):
			t.Fatalf("ExpireReceipts turning %d receipts visited %d", n, c.visited.Load())
		}
	}
	h.wantCounts(old+1, 1)
}

// testOperationsOrder: the operations view lists receipts and tombstones
// together, newest first and ties by actor and then key, also across a
// receipt and a tombstone of the same time; paging through it with any
// limit gives every record once, in that order, and so do the filters.
func testOperationsOrder(t *testing.T, h *harness) {
	h.workshop("go-basics", 100, 2)
	h.workshop("tiny", 1, 1)
	// Two receipts that expire into tombstones created at Now, and then,
	// with the clock set back, receipts of the same time.
	h.mustReserve("alice", newKey(), "go-basics", 1)
	h.mustReserve("bob", newKey(), "go-basics", 2)
	h.advance(48 * time.Hour)
	if n, err := h.eng.ExpireReceipts(h.ctx, 24*time.Hour, 100); err != nil || n != 2 {
		t.Fatalf("ExpireReceipts = %d, %v; want 2", n, err)
	}
	h.advance(-48 * time.Hour)
	h.mustReserve("alice", newKey(), "go-basics", 1)
	h.mustReserve("carol", newKey(), "go-basics", 1)
	h.mustReserve("dave", newKey(), "tiny", 1)
	h.mustReserve("erin", newKey(), "tiny", 1) // Unavailable.
	h.advance(time.Second)
	res := h.mustReserve("alice", newKey(), "go-basics", 2)
	h.mustReserve("bob", newKey(), "go-basics", 1)
	h.advance(time.Second)
	h.mustCancel(alice, newKey(), res.Answer.ReservationID)

	type entry struct {
		at      time.Time
		actor   string
		key     engine.OperationKey
		status  string
		expired bool
	}
	var all []entry
	err := h.store.View(h.ctx, func(tx engine.Tx) error {
		all = all[:0]
		if err := tx.ForEachReceipt(func(r engine.Receipt) error {
			all = append(all, entry{r.CreatedAt, r.Actor, r.OperationKey, r.Answer.Status, false})
			return nil
		}); err != nil {
			return err
		}
		return tx.ForEachTombstone(func(ts engine.Tombstone) error {
			all = append(all, entry{ts.CreatedAt, ts.Actor, ts.OperationKey, ts.Answer.Status, true})
			return nil
		})
	})
	if err != nil || len(all) != 9 {
		t.Fatalf("records = %d, %v; want 9", len(all), err)
	}
	slices.SortFunc(all, func(a, b entry) int {
		return cmp.Or(b.at.Compare(a.at), cmp.Compare(a.actor, b.actor), cmp.Compare(a.key, b.key))
	})
	listAll := func(f engine.OperationFilter) []entry {
		t.Helper()
		var got []entry
		for page := 0; ; page++ {
			ops, next, err := h.eng.Operations(h.ctx, f)
			if err != nil || page > len(all) {
				t.Fatalf("Operations(%+v) page %d: %v", f, page, err)
			}
			for _, op := range ops {
				got = append(got, entry{op.CreatedAt, op.Actor, op.Operation, op.Answer.Status, op.Expired})
			}
			if next == "" {
				return got
			}
			if len(ops) != f.Limit {
				t.Fatalf("Operations(%+v) page %d holds %d records and names a next page", f, page, len(ops))
			}
			f.After = next
		}
	}
	same := func(a, b entry) bool {
		return a.at.Equal(b.at) && a.actor == b.actor && a.key == b.key && a.status == b.status && a.expired == b.expired
	}
	for limit := 1; limit <= len(all)+1; limit++ {
		if got := listAll(engine.OperationFilter{Limit: limit}); !slices.EqualFunc(got, all, same) {
			t.Fatalf("pages of %d:\n%+v\nwant\n%+v", limit, got, all)
		}
	}
	since := Now.Add(time.Second)
	for _, f := range []engine.OperationFilter{
		{Actor: "alice"}, {Actor: "bob"}, {Outcome: engine.StatusReserved}, {Outcome: engine.StatusUnavailable},
		{Outcome: engine.StatusCancelled}, {Since: since}, {Since: since, Actor: "bob"},
	} {
		var want []entry
		for _, e := range all {
			if (f.Actor == "" || e.actor == f.Actor) && (f.Outcome == "" || e.status == f.Outcome) && !e.at.Before(f.Since) {
				want = append(want, e)
			}
		}
		f.Limit = 2
		if got := listAll(f); !slices.EqualFunc(got, want, same) {
			t.Fatalf("filter %+v:\n%+v\nwant\n%+v", f, got, want)
		}
	}
}

// testOperationsVisits: a page of the operations view visits about as many
// records as it shows, not the whole store, and a view since a time stops
// at the first older record.
func testOperationsVisits(t *testing.T, h *harness) {
	const each = 20
	h.workshop("go-basics", 100, 1)
	for range each {
		h.mustReserve("alice", newKey(), "go-basics", 1)
		h.advance(time.Second)
	}
	h.advance(48 * time.Hour)
	if n, err := h.eng.ExpireReceipts(h.ctx, 24*time.Hour, 100); err != nil || n != each {
		t.Fatalf("ExpireReceipts = %d, %v; want %d", n, err, each)
	}
	start := Now.Add(time.Duration(h.later.Load()))
	for range each {
		h.mustReserve("bob", newKey(), "go-basics", 1)
		h.advance(time.Second)
	}
	c := &countingStore{Store: h.store}
	eng := h.engineOn(c)
	const limit = 3
	f := engine.OperationFilter{Limit: limit}
	for page := range 3 {
		c.reset()
		ops, next, err := eng.Operations(h.ctx, f)
		if err != nil || len(ops) != limit || next == "" {
			t.Fatalf("page %d = %d records, next %q, %v", page, len(ops), next, err)
		}
		// Each of the two scans: the record at the cursor, then the page
		// and one more.
		if v := c.visited.Load(); v > 2*(limit+2) {
			t.Fatalf("page %d of %d records visited %d of %d records", page, limit, v, 2*each)
		}
		f.After = next
	}
	c.reset()
	ops, _, err := eng.Operations(h.ctx, engine.OperationFilter{Since: start.Add((each - 2) * time.Second)})
	if err != nil || len(ops) != 2 {
		t.Fatalf("view of the last two seconds = %d records, %v", len(ops), err)
	}
	if v := c.visited.Load(); v > 4 {
		t.Fatalf("view of the last two seconds visited %d records", v)
	}
}

// testTimeIndexFollowsRewrites: a receipt or tombstone written again with
// another creation time is found at its new time only, and a deleted
// receipt nowhere; the closing check finds no index entry left behind.
func testTimeIndexFollowsRewrites(t *testing.T, h *harness) {
	h.workshop("go-basics", 10, 2)
	key, gone := newKey(), newKey()
	h.mustReserve("alice", key, "go-basics", 1)
	h.mustReserve("bob", gone, "go-basics", 1)
	later := Now.Add(time.Hour)
	err := h.store.Update(h.ctx, func(tx engine.Tx) error {
		rec, ok, err := tx.Receipt("alice", key)
		if err != nil || !ok {
			return fmt.Errorf("receipt: %v %v", ok, err)
		}
		rec.CreatedAt = later
		if err := tx.PutReceipt(rec); err != nil {
			return err
		}
		// bob's receipt becomes a tombstone, which is then moved as well.
		old, ok, err := tx.Receipt("bob", gone)
		if err != nil || !ok {
			return fmt.Errorf("receipt: %v %v", ok, err)
		}
		ts := engine.TombstoneOf(old, later)
		if err := tx.PutTombstone(ts); err != nil {
			return err
		}
		if err := tx.DeleteReceipt("bob", gone); err != nil {
			return err
		}
		ts.CreatedAt = later
		return tx.PutTombstone(ts)
	})
	if err != nil {
		t.Fatal(err)
	}
	type visit struct {
		what string
		at   time.Time
	}
	var visits []visit
	err = h.store.View(h.ctx, func(tx engine.Tx) error {
		visits = visits[:0]
		for _, scan := range []struct {
			what string
			run  func(fn func(string, time.Time) error) error
		}{
			{"before an hour", func(fn func(string, time.Time) error) error {
				return tx.ForEachReceiptCreatedBefore(Now.Add(time.Minute), func(r engine.Receipt) error { return fn(r.Actor, r.CreatedAt) })
			}},
			{"before two hours", func(fn func(string, time.Time) error) error {
				return tx.ForEachReceiptCreatedBefore(Now.Add(2*time.Hour), func(r engine.Receipt) error { return fn(r.Actor, r.CreatedAt) })
			}},
			{"receipts until a minute", func(fn func(string, time.Time) error) error {
				return tx.ForEachReceiptNewestFirst(engine.TimePosition{At: Now.Add(time.Minute)}, func(r engine.Receipt) error { return fn(r.Actor, r.CreatedAt) })
			}},
			{"receipts", func(fn func(string, time.Time) error) error {
				return tx.ForEachReceiptNewestFirst(engine.TimePosition{}, func(r engine.Receipt) error { return fn(r.Actor, r.CreatedAt) })
			}},
			{"tombstones until a minute", func(fn func(string, time.Time) error) error {
				return tx.ForEachTombstoneNewestFirst(engine.TimePosition{At: Now.Add(time.Minute)}, func(t engine.Tombstone) error { return fn(t.Actor, t.CreatedAt) })
			}},
			{"tombstones", func(fn func(string, time.Time) error) error {
				return tx.ForEachTombstoneNewestFirst(engine.TimePosition{At: later}, func(t engine.Tombstone) error { return fn(t.Actor, t.CreatedAt) })
			}},
		} {
			if err := scan.run(func(actor string, at time.Time) error {
				visits = append(visits, visit{scan.what + ": " + actor, at})
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	want := []visit{{"before two hours: alice", later}, {"receipts: alice", later}, {"tombstones: bob", later}}
	if err != nil || !slices.EqualFunc(visits, want, func(a, b visit) bool { return a.what == b.what && a.at.Equal(b.at) }) {
		t.Fatalf("scans visit %+v, %v; want %+v", visits, err, want)
	}
}

// testTimeOrderedScans: the time-ordered scans visit every receipt once in
// their order, also through groups of one time larger than a store's page,
// and from any position on.
func testTimeOrderedScans(t *testing.T, h *harness) {
	h.workshop("go-basics", 1000, 1)
	for range 3 {
		h.reserveMany("go-basics", 70) // One transaction: one time.
		h.advance(time.Second)
	}
	var stored []engine.TimePosition
	var newest, before []engine.TimePosition
	from := func(p engine.TimePosition) []engine.TimePosition {
		t.Helper()
		var got []engine.TimePosition
		err := h.store.View(h.ctx, func(tx engine.Tx) error {
			got = got[:0]
			return tx.ForEachReceiptNewestFirst(p, func(r engine.Receipt) error { got = append(got, engine.ReceiptPosition(r)); return nil })
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	cutoff := Now.Add(2 * time.Second)
	err := h.store.View(h.ctx, func(tx engine.Tx) error {
		stored, before = stored[:0], before[:0]
		if err := tx.ForEachReceipt(func(r engine.Receipt) error { stored = append(stored, engine.ReceiptPosition(r)); return nil }); err != nil {
			return err
		}
		return tx.ForEachReceiptCreatedBefore(cutoff, func(r engine.Receipt) error { before = append(before, engine.ReceiptPosition(r)); return nil })
	})
	if err != nil || len(stored) != 210 {
		t.Fatalf("receipts = %d, %v", len(stored), err)
	}
	slices.SortFunc(stored, engine.TimePosition.Compare)
	if newest = from(engine.TimePosition{}); !slices.Equal(newest, stored) {
		t.Fatalf("newest first visits %d receipts out of order or not once each", len(newest))
	}
	for _, i := range []int{0, 1, 63, 64, 100, 139, 140, 209} {
		if got := from(stored[i]); !slices.Equal(got, stored[i:]) {
			t.Fatalf("newest first from receipt %d visits %d receipts, want %d from it", i, len(got), len(stored)-i)
		}
	}
	// From a time alone: every receipt of that time and the older ones.
	if got := from(engine.TimePosition{At: Now.Add(time.Second)}); !slices.Equal(got, stored[70:]) {
		t.Fatalf("newest first from a time visits %d receipts, want %d", len(got), len(stored)-70)
	}
	if len(before) != 140 || !slices.IsSortedFunc(before, func(p, q engine.TimePosition) int { return p.At.Compare(q.At) }) {
		t.Fatalf("oldest first before the cutoff visits %d receipts (sorted by time: %v), want 140", len(before), slices.IsSortedFunc(before, func(p, q engine.TimePosition) int { return p.At.Compare(q.At) }))
	}
	slices.SortFunc(before, engine.TimePosition.Compare)
	if !slices.Equal(before, stored[70:]) {
		t.Fatal("oldest first before the cutoff visits other receipts than those created before it")
	}
}

func (t *countingTx) ForEachReservation(fn func(engine.Reservation) error) error {
	return t.Tx.ForEachReservation(counted(t.c, fn))
}

func (t *countingTx) ForEachHold(fn func(engine.Hold) error) error {
	return t.Tx.ForEachHold(counted(t.c, fn))
}

func (t *countingTx) ForEachReservationOf(actor, before string, fn func(engine.Reservation) error) error {
	return t.Tx.ForEachReservationOf(actor, before, counted(t.c, fn))
}

func (t *countingTx) ForEachHoldOf(actor, before string, fn func(engine.Hold) error) error {
	return t.Tx.ForEachHoldOf(actor, before, counted(t.c, fn))
}
