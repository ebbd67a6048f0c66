package engine_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/engine/memstore"
)

// traceStore records, in order, what the transactions on its store read
// and write (each entry prefixed "view " in a read transaction) and, through
// clock, every read of the engine's clock.
type traceStore struct {
	engine.Store
	mu  sync.Mutex
	log []string
}

func (s *traceStore) note(what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, what)
}

// take returns what was recorded since the last take.
func (s *traceStore) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	log := s.log
	s.log = nil
	return log
}

func (s *traceStore) clock() time.Time {
	s.note("clock")
	return time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
}

func (s *traceStore) Update(ctx context.Context, fn func(engine.Tx) error) error {
	return s.Store.Update(ctx, func(tx engine.Tx) error { return fn(traceTx{Tx: tx, s: s}) })
}

func (s *traceStore) View(ctx context.Context, fn func(engine.Tx) error) error {
	return s.Store.View(ctx, func(tx engine.Tx) error { return fn(traceTx{Tx: tx, s: s, prefix: "view "}) })
}

// traceTx notes the reads of decisions' records and every write.
type traceTx struct {
	engine.Tx
	s      *traceStore
	prefix string
}

func (t traceTx) note(what string) { t.s.note(t.prefix + what) }

func (t traceTx) Receipt(actor string, key engine.OperationKey) (engine.Receipt, bool, error) {
	t.note("receipt")
	return t.Tx.Receipt(actor, key)
}

func (t traceTx) Tombstone(actor string, key engine.OperationKey) (engine.Tombstone, bool, error) {
	t.note("tombstone")
	return t.Tx.Tombstone(actor, key)
}

func (t traceTx) Workshop(id string) (engine.Workshop, bool, error) {
	t.note("workshop")
	return t.Tx.Workshop(id)
}

func (t traceTx) Hold(id string) (engine.Hold, bool, error) {
	t.note("hold")
	return t.Tx.Hold(id)
}

func (t traceTx) Reservation(id string) (engine.Reservation, bool, error) {
	t.note("reservation")
	return t.Tx.Reservation(id)
}

func (t traceTx) PutWorkshop(w engine.Workshop) error {
	t.note("put workshop")
	return t.Tx.PutWorkshop(w)
}

func (t traceTx) PutReservation(r engine.Reservation) error {
	t.note("put reservation")
	return t.Tx.PutReservation(r)
}

func (t traceTx) PutHold(h engine.Hold) error {
	t.note("put hold")
	return t.Tx.PutHold(h)
}

func (t traceTx) PutReceipt(r engine.Receipt) error {
	t.note("put receipt")
	return t.Tx.PutReceipt(r)
}

func (t traceTx) AddEvent(e engine.Event) error {
	t.note("add event")
	return t.Tx.AddEvent(e)
}

func newTraced(t *testing.T) (*engine.Engine, *traceStore) {
	t.Helper()
	s := &traceStore{Store: memstore.New(memstore.Options{})}
	t.Cleanup(func() { s.Close() })
	eng := engine.New(s, engine.WithClock(s.clock))
	if _, _, err := eng.PutWorkshop(context.Background(), "go-basics", engine.WorkshopSpec{Capacity: 10, MaxQuantity: 5}, nil); err != nil {
		t.Fatal(err)
	}
	s.take()
	return eng, s
}

func newOpKey() engine.OperationKey { return engine.OperationKey(uuid.NewString()) }

// upToClock returns the entries of log up to and including its first read
// of the clock, leaving out those of read transactions.
func upToClock(log []string) []string {
	var got []string
	for _, what := range log {
		if !strings.HasPrefix(what, "view ") {
			got = append(got, what)
		}
		if what == "clock" {
			break
		}
	}
	return got
}

// TestDecisionsReadTheClockAfterTheirTarget: every decision looks its key
// up, reads (on PostgreSQL locks) what it acts on, and reads the clock
// once, only then and before it writes anything, so that the time it is
// decided at comes after every decision that held those rows before it.
func TestDecisionsReadTheClockAfterTheirTarget(t *testing.T) {
	ctx := context.Background()
	eng, s := newTraced(t)
	lookup := []string{"receipt", "tombstone"}
	want := func(name string, target ...string) {
		t.Helper()
		log := s.take()
		want := append(append(slices.Clone(lookup), target...), "clock")
		if got := upToClock(log); !slices.Equal(got, want) {
			t.Errorf("%s: the write transaction began %q, want %q", name, got, want)
		}
		if n := strings.Count(strings.Join(log, "\n"), "clock"); n != 1 {
			t.Errorf("%s read the clock %d times, want once: %q", name, n, log)
		}
	}

	out, err := eng.Reserve(ctx, "alice", newOpKey(), engine.Request{Workshop: "go-basics", Quantity: 1})
	if err != nil || out.Answer.Status != engine.StatusReserved {
		t.Fatalf("reserve = %+v, %v", out, err)
	}
	want("a reservation", "workshop")

	if _, err := eng.Cancel(ctx, engine.Principal{Actor: "alice"}, newOpKey(), out.Answer.ReservationID); err != nil {
		t.Fatal(err)
	}
	want("a cancellation", "reservation")

	for _, settle := range []struct {
		name string
		fn   func(context.Context, engine.Principal, engine.OperationKey, string) (engine.Outcome, error)
	}{{"a confirmation", eng.Confirm}, {"a release", eng.Release}} {
		held, err := eng.Hold(ctx, "alice", newOpKey(), engine.HoldRequest{Workshop: "go-basics", Quantity: 1, TTLSeconds: 60})
		if err != nil || held.Answer.Status != engine.StatusHeld {
			t.Fatalf("hold = %+v, %v", held, err)
		}
		want("a hold", "workshop")
		if _, err := settle.fn(ctx, engine.Principal{Actor: "alice"}, newOpKey(), held.Answer.HoldID); err != nil {
			t.Fatal(err)
		}
		want(settle.name, "hold", "workshop")
	}
}

// TestBatchItemsReadTheClockAfterTheirWorkshop: in a batch, every item is
// decided as a reservation is, with the clock read once per item, after
// its workshop is read and before the item writes anything.
func TestBatchItemsReadTheClockAfterTheirWorkshop(t *testing.T) {
	ctx := context.Background()
	eng, s := newTraced(t)
	check := func(name string, log []string, items int) {
		t.Helper()
		clocks := 0
		for i, what := range log {
			if what != "clock" {
				continue
			}
			clocks++
			if i < 3 || !slices.Equal(log[i-3:i], []string{"receipt", "tombstone", "workshop"}) {
				t.Errorf("%s: clock read %d follows %q, want the item's lookup and its workshop", name, clocks, log[max(0, i-3):i])
			}
		}
		if clocks != items {
			t.Errorf("%s read the clock %d times, want once for each of %d items: %q", name, clocks, items, log)
		}
	}
	req := engine.Request{Workshop: "go-basics", Quantity: 1}
	if _, err := eng.ReserveBatch(ctx, []engine.BatchItem{{Actor: "alice", Key: newOpKey(), Request: req}, {Actor: "bob", Key: newOpKey(), Request: req}}); err != nil {
		t.Fatal(err)
	}
	check("ReserveBatch", s.take(), 2)
	if _, err := eng.Batch(ctx, "alice", []engine.BatchEntry{{Key: newOpKey(), Request: req}, {Key: newOpKey(), Request: req}, {Key: newOpKey(), Request: req}}, true); err != nil {
		t.Fatal(err)
	}
	check("an atomic Batch", s.take(), 3)
}

// TestBatchLookupsStopAtTheFirstNewItem: the read transaction that answers
// a batch of replays without the writer looks up every item of such a
// batch and of an atomic one (whose every replay keeps its answer if the
// batch is refused), but a batch that is not atomic stops at its first new
// key, which the write transaction decides anyway; so bulk loading reads
// no receipt twice.
func TestBatchLookupsStopAtTheFirstNewItem(t *testing.T) {
	ctx := context.Background()
	eng, s := newTraced(t)
	req := engine.Request{Workshop: "go-basics", Quantity: 1}
	entries := func(keys ...engine.OperationKey) []engine.BatchEntry {
		var es []engine.BatchEntry
		for _, k := range keys {
			es = append(es, engine.BatchEntry{Key: k, Request: req})
		}
		return es
	}
	viewReceipts := func() int {
		n := 0
		for _, what := range s.take() {
			if what == "view receipt" {
				n++
			}
		}
		return n
	}
	known := []engine.OperationKey{newOpKey(), newOpKey()}
	if _, err := eng.Batch(ctx, "alice", entries(known...), false); err != nil {
		t.Fatal(err)
	}
	if n := viewReceipts(); n != 1 {
		t.Errorf("a batch of 2 new keys, not atomic, looked up %d receipts before the write, want 1", n)
	}
	if _, err := eng.Batch(ctx, "alice", entries(known[0], known[1], newOpKey(), newOpKey()), false); err != nil {
		t.Fatal(err)
	}
	if n := viewReceipts(); n != 3 {
		t.Errorf("a batch of 2 replays then 2 new keys, not atomic, looked up %d receipts before the write, want 3", n)
	}
	res, err := eng.Batch(ctx, "alice", entries(known...), false)
	if err != nil || !res.Items[0].Outcome.Replayed || !res.Items[1].Outcome.Replayed {
		t.Fatalf("the batch again = %+v, %v", res, err)
	}
	if log := s.take(); slices.Contains(log, "receipt") || strings.Count(strings.Join(log, "\n"), "view receipt") != 2 {
		t.Errorf("a batch of replays: %q, want 2 lookups and no write transaction", log)
	}
	if _, err := eng.Batch(ctx, "alice", entries(newOpKey(), newOpKey(), newOpKey()), true); err != nil {
		t.Fatal(err)
	}
	if n := viewReceipts(); n != 3 {
		t.Errorf("an atomic batch of 3 new keys looked up %d receipts before the write, want 3", n)
	}
}

// TestReceiptOfAnUnknownFingerprintVersionIsAFailure: a receipt whose
// fingerprint version this engine does not know cannot be replayed or told
// apart from another payload: that is a failure, which rolls back and
// leaves the operation undecided, never a refusal; in a batch it fails the
// whole batch, and no other item is stored.
func TestReceiptOfAnUnknownFingerprintVersionIsAFailure(t *testing.T) {
	ctx := context.Background()
	eng, s := newTraced(t)
	key := newOpKey()
	req := engine.Request{Workshop: "go-basics", Quantity: 1}
	err := s.Update(ctx, func(tx engine.Tx) error {
		return tx.PutReceipt(engine.Receipt{Actor: "alice", OperationKey: key, FingerprintVersion: 99, Fingerprint: "x", Request: req,
			Answer: engine.Answer{Status: engine.StatusReserved, Workshop: "go-basics", Quantity: 1}})
	})
	if err != nil {
		t.Fatal(err)
	}
	wantFailure := func(name string, err error) {
		t.Helper()
		if engine.ErrorCode(err) != engine.CodeInternal || !engine.Undecided(engine.ErrorCode(err)) || !strings.Contains(err.Error(), "unknown fingerprint version 99") {
			t.Errorf("%s: %v, want the failure of an unknown fingerprint version", name, err)
		}
	}
	_, err = eng.Reserve(ctx, "alice", key, req)
	wantFailure("Reserve", err)
	other := newOpKey()
	res, err := eng.Batch(ctx, "alice", []engine.BatchEntry{{Key: other, Request: req}, {Key: key, Request: req}}, false)
	wantFailure("Batch", err)
	if len(res.Items) != 0 {
		t.Errorf("Batch answered items %+v beside its failure", res.Items)
	}
	vs, err := eng.ReserveBatch(ctx, []engine.BatchItem{{Actor: "bob", Key: newOpKey(), Request: req}, {Actor: "alice", Key: key, Request: req}})
	wantFailure("ReserveBatch", err)
	if vs != nil {
		t.Errorf("ReserveBatch answered %+v beside its failure", vs)
	}
	if w, err := eng.Workshop(ctx, "go-basics"); err != nil || w.Reserved != 0 {
		t.Errorf("after the failures the workshop is %+v, %v; want nothing reserved", w, err)
	}
	if _, err := eng.Operation(ctx, "alice", other); engine.ErrorCode(err) != engine.CodeUnknownOperation {
		t.Errorf("the batch's other item: %v, want no receipt", err)
	}
}
