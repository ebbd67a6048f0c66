// Package memstore is the reference engine.Store: every record in ordinary
// Go maps, guarded by locks, with nothing to configure. It exists so that the
// engine's whole contract (the conformance suite in package enginetest) runs
// in milliseconds inside `go test ./internal/engine/...`, without bbolt or
// PostgreSQL, and so that the meaning of each Tx primitive is written down
// once in the plainest possible form.
//
// Update copies the committed state, runs the transaction function on the
// copy and publishes the copy only when the function returns nil, so a
// failed transaction leaves no trace and a View always sees one consistent
// snapshot. The copy costs time proportional to the whole store, which is
// fine for tests and wrong for production: nothing outside tests may use
// this package. It imports nothing but the engine and the standard library.
package memstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// ErrClosed is returned by transactions on a closed Store.
var ErrClosed = errors.New("memstore: store is closed")

// errReadOnly is returned by a write inside View.
var errReadOnly = errors.New("memstore: write in a read-only transaction")

// Options tune a Store. The zero value runs every transaction function once.
type Options struct {
	// RunTwice makes Update run every transaction function twice, throwing
	// away the first run's writes, as a batching or retrying store may: it
	// proves that the engine's transaction functions have no effects
	// outside their Tx.
	RunTwice bool
}

// Store is an engine.Store in memory. It is safe for concurrent use.
type Store struct {
	opts Options

	writer sync.Mutex // Serializes Updates: one writer at a time.

	mu     sync.RWMutex // Guards state and closed.
	state  *state
	closed bool
}

var _ engine.Store = (*Store)(nil)

// New returns an empty Store.
func New(opts Options) *Store {
	return &Store{opts: opts, state: newState()}
}

// state is one immutable snapshot once published: Update works on a copy.
type state struct {
	workshops    map[string]engine.Workshop
	reservations map[string]engine.Reservation
	receipts     map[receiptKey]engine.Receipt
	tokens       map[string]engine.TokenRecord
	tombstones   map[receiptKey]engine.Tombstone
	events       map[string]engine.Event
	holds        map[string]engine.Hold
	bindings     map[engine.Subject]engine.Binding
	profiles     map[string]engine.Profile
	unrouted     map[string]bool
	endpoints    map[string]engine.WebhookEndpoint
	deliveries   map[string]engine.Delivery
	waitEntries  map[string]engine.WaitEntry
}

// receiptKey orders receipts and tombstones as the other stores do: by actor,
// then by operation key.
type receiptKey struct {
	actor string
	key   engine.OperationKey
}

func compareReceiptKeys(a, b receiptKey) int {
	return cmp.Or(cmp.Compare(a.actor, b.actor), cmp.Compare(a.key, b.key))
}

func newState() *state {
	return &state{
		workshops:    map[string]engine.Workshop{},
		reservations: map[string]engine.Reservation{},
		receipts:     map[receiptKey]engine.Receipt{},
		tokens:       map[string]engine.TokenRecord{},
		tombstones:   map[receiptKey]engine.Tombstone{},
		events:       map[string]engine.Event{},
		holds:        map[string]engine.Hold{},
		bindings:     map[engine.Subject]engine.Binding{},
		profiles:     map[string]engine.Profile{},
		unrouted:     map[string]bool{},
		endpoints:    map[string]engine.WebhookEndpoint{},
		deliveries:   map[string]engine.Delivery{},
		waitEntries:  map[string]engine.WaitEntry{},
	}
}

// clone copies the maps. Records are values, and the bytes they hold (an
// event's stored payload) are never changed once made, so the copies share
// nothing mutable.
func (s *state) clone() *state {
	return &state{
		workshops:    maps.Clone(s.workshops),
		reservations: maps.Clone(s.reservations),
		receipts:     maps.Clone(s.receipts),
		tokens:       maps.Clone(s.tokens),
		tombstones:   maps.Clone(s.tombstones),
		events:       maps.Clone(s.events),
		holds:        maps.Clone(s.holds),
		bindings:     maps.Clone(s.bindings),
		profiles:     maps.Clone(s.profiles),
		unrouted:     maps.Clone(s.unrouted),
		endpoints:    maps.Clone(s.endpoints),
		deliveries:   maps.Clone(s.deliveries),
		waitEntries:  maps.Clone(s.waitEntries),
	}
}

// snapshot returns the committed state, or ErrClosed.
func (s *Store) snapshot() (*state, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	return s.state, nil
}

// Update runs fn on a copy of the committed state and publishes the copy
// if fn returns nil. With Options.RunTwice fn runs once more on a fresh
// copy first, and that run's writes are discarded.
func (s *Store) Update(ctx context.Context, fn func(tx engine.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.writer.Lock()
	defer s.writer.Unlock()
	base, err := s.snapshot()
	if err != nil {
		return err
	}
	if s.opts.RunTwice {
		if err := fn(&tx{s: base.clone(), writable: true}); err != nil {
			return err
		}
	}
	next := base.clone()
	if err := fn(&tx{s: next, writable: true}); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.state = next
	return nil
}

// View runs fn on the committed state; writes inside fn fail.
func (s *Store) View(ctx context.Context, fn func(tx engine.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	st, err := s.snapshot()
	if err != nil {
		return err
	}
	return fn(&tx{s: st})
}

// Close makes every later transaction fail with ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

// tx is one transaction on a state: the committed one for a View, a private
// copy for an Update.
type tx struct {
	s        *state
	writable bool
}

var _ engine.Tx = (*tx)(nil)

func (t *tx) write() error {
	if !t.writable {
		return errReadOnly
	}
	return nil
}

// get, put and forEach are the three primitives every record kind uses.
func get[K comparable, R any](m map[K]R, k K) (R, bool, error) {
	r, ok := m[k]
	return r, ok, nil
}

func put[K comparable, R any](t *tx, m map[K]R, k K, r R) error {
	if err := t.write(); err != nil {
		return err
	}
	m[k] = r
	return nil
}

// forEach visits m in key order. The keys are collected first, so fn may
// write to the transaction it iterates, as it may in the other stores.
func forEach[K comparable, R any](m map[K]R, compare func(a, b K) int, fn func(R) error) error {
	keys := slices.SortedFunc(maps.Keys(m), compare)
	for _, k := range keys {
		r, ok := m[k]
		if !ok {
			continue // Deleted by fn.
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) Workshop(id string) (engine.Workshop, bool, error) {
	return get(t.s.workshops, id)
}

func (t *tx) PutWorkshop(w engine.Workshop) error { return put(t, t.s.workshops, w.ID, w) }

func (t *tx) ForEachWorkshop(fn func(engine.Workshop) error) error {
	return forEach(t.s.workshops, cmp.Compare[string], fn)
}

func (t *tx) Reservation(id string) (engine.Reservation, bool, error) {
	return get(t.s.reservations, id)
}

func (t *tx) PutReservation(r engine.Reservation) error {
	return put(t, t.s.reservations, r.ID, r)
}

func (t *tx) ForEachReservation(fn func(engine.Reservation) error) error {
	return forEach(t.s.reservations, cmp.Compare[string], fn)
}

func (t *tx) Receipt(actor string, key engine.OperationKey) (engine.Receipt, bool, error) {
	return get(t.s.receipts, receiptKey{actor, key})
}

func (t *tx) PutReceipt(r engine.Receipt) error {
	return put(t, t.s.receipts, receiptKey{r.Actor, r.OperationKey}, r)
}

func (t *tx) ForEachReceipt(fn func(engine.Receipt) error) error {
	return forEach(t.s.receipts, compareReceiptKeys, fn)
}

func (t *tx) DeleteReceipt(actor string, key engine.OperationKey) error {
	if err := t.write(); err != nil {
		return err
	}
	delete(t.s.receipts, receiptKey{actor, key})
	return nil
}

func (t *tx) Token(hash string) (engine.TokenRecord, bool, error) {
	return get(t.s.tokens, hash)
}

func (t *tx) PutToken(r engine.TokenRecord) error { return put(t, t.s.tokens, r.Hash, r) }

func (t *tx) DeleteToken(hash string) error {
	if err := t.write(); err != nil {
		return err
	}
	delete(t.s.tokens, hash)
	return nil
}

func (t *tx) ForEachToken(fn func(engine.TokenRecord) error) error {
	return forEach(t.s.tokens, cmp.Compare[string], fn)
}

// APIToken and ForEachAPIToken look through every credential; the other
// stores read an index of API tokens by id instead.
func (t *tx) APIToken(id string) (engine.TokenRecord, bool, error) {
	for _, r := range t.s.tokens {
		if r.Kind == engine.TokenAPI && engine.TokenID(r.Hash) == id {
			return r, true, nil
		}
	}
	return engine.TokenRecord{}, false, nil
}

func (t *tx) ForEachAPIToken(fn func(engine.TokenRecord) error) error {
	byID := map[string]string{}
	for hash, r := range t.s.tokens {
		if r.Kind == engine.TokenAPI {
			byID[engine.TokenID(hash)] = hash
		}
	}
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		r, ok := t.s.tokens[byID[id]]
		if !ok {
			continue // Deleted by fn.
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) Tombstone(actor string, key engine.OperationKey) (engine.Tombstone, bool, error) {
	return get(t.s.tombstones, receiptKey{actor, key})
}

func (t *tx) PutTombstone(r engine.Tombstone) error {
	return put(t, t.s.tombstones, receiptKey{r.Actor, r.OperationKey}, r)
}

func (t *tx) ForEachTombstone(fn func(engine.Tombstone) error) error {
	return forEach(t.s.tombstones, compareReceiptKeys, fn)
}

// ForEachReceiptCreatedBefore and the other time-ordered scans sort the
// records on each call; the other stores read an index instead.
func (t *tx) ForEachReceiptCreatedBefore(at time.Time, fn func(engine.Receipt) error) error {
	return forEachByTime(t.s.receipts, engine.ReceiptPosition, func(p engine.TimePosition) bool { return p.At.Before(at) },
		func(p, q engine.TimePosition) int {
			return cmp.Or(p.At.Compare(q.At), cmp.Compare(p.Actor, q.Actor), cmp.Compare(p.Key, q.Key))
		}, fn)
}

func (t *tx) ForEachReceiptNewestFirst(from engine.TimePosition, fn func(engine.Receipt) error) error {
	return forEachByTime(t.s.receipts, engine.ReceiptPosition, notBefore(from), engine.TimePosition.Compare, fn)
}

func (t *tx) ForEachTombstoneNewestFirst(from engine.TimePosition, fn func(engine.Tombstone) error) error {
	return forEachByTime(t.s.tombstones, engine.TombstonePosition, notBefore(from), engine.TimePosition.Compare, fn)
}

// notBefore selects the positions at from or after it.
func notBefore(from engine.TimePosition) func(engine.TimePosition) bool {
	return func(p engine.TimePosition) bool { return !p.Before(from) }
}

// forEachByTime visits the records of m whose position keep selects, in the
// order of compare. The records are collected first; a record deleted or
// moved to another position meanwhile is skipped.
func forEachByTime[R any](m map[receiptKey]R, position func(R) engine.TimePosition, keep func(engine.TimePosition) bool,
	compare func(p, q engine.TimePosition) int, fn func(R) error) error {
	var order []engine.TimePosition
	for _, r := range m {
		if p := position(r); keep(p) {
			order = append(order, p)
		}
	}
	slices.SortFunc(order, compare)
	for _, p := range order {
		r, ok := m[receiptKey{p.Actor, p.Key}]
		if !ok || compare(position(r), p) != 0 {
			continue
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// AddEvent inserts a new event; an existing id is an error, as in every
// store, because an event id names exactly one effect.
func (t *tx) AddEvent(e engine.Event) error {
	if _, ok := t.s.events[e.ID]; ok {
		return fmt.Errorf("event %s exists", e.ID)
	}
	if err := put(t, t.s.events, e.ID, e); err != nil {
		return err
	}
	return put(t, t.s.unrouted, e.ID, true)
}

func (t *tx) MarkEventDelivered(id string, at time.Time) error {
	e, ok := t.s.events[id]
	if !ok {
		return fmt.Errorf("no event %s", id)
	}
	e.DeliveredAt = at
	return put(t, t.s.events, id, e)
}

func (t *tx) Event(id string) (engine.Event, bool, error) {
	return get(t.s.events, id)
}

func (t *tx) ForEachEvent(fn func(engine.Event) error) error {
	return forEach(t.s.events, cmp.Compare[string], fn)
}

// ForEachPendingEvent visits the undelivered events of the simple channels
// in id order. It scans every event, which the other stores avoid with an
// index; here plainness wins.
func (t *tx) ForEachPendingEvent(fn func(engine.Event) error) error {
	return t.ForEachEvent(func(e engine.Event) error {
		if e.Delivered() || !e.ForSimpleChannels() {
			return nil
		}
		return fn(e)
	})
}

func (t *tx) ForEachUnroutedEvent(fn func(engine.Event) error) error {
	ids := slices.Sorted(maps.Keys(t.s.unrouted))
	for _, id := range ids {
		if !t.s.unrouted[id] {
			continue
		}
		if err := fn(t.s.events[id]); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) MarkEventRouted(id string) error {
	if err := t.write(); err != nil {
		return err
	}
	if _, ok := t.s.events[id]; !ok {
		return fmt.Errorf("no event %s", id)
	}
	delete(t.s.unrouted, id)
	return nil
}

func (t *tx) WebhookEndpoint(id string) (engine.WebhookEndpoint, bool, error) {
	return get(t.s.endpoints, id)
}

func (t *tx) PutWebhookEndpoint(w engine.WebhookEndpoint) error {
	w.EventTypes = slices.Clone(w.EventTypes)
	return put(t, t.s.endpoints, w.ID, w)
}

func (t *tx) DeleteWebhookEndpoint(id string) error {
	if err := t.write(); err != nil {
		return err
	}
	delete(t.s.endpoints, id)
	return nil
}

func (t *tx) ForEachWebhookEndpoint(fn func(engine.WebhookEndpoint) error) error {
	return forEach(t.s.endpoints, cmp.Compare[string], fn)
}

func (t *tx) Delivery(id string) (engine.Delivery, bool, error) { return get(t.s.deliveries, id) }

func (t *tx) PutDelivery(d engine.Delivery) error { return put(t, t.s.deliveries, d.ID, d) }

// ForEachDueDelivery sorts the pending deliveries on every call.
func (t *tx) ForEachDueDelivery(through time.Time, fn func(engine.Delivery) error) error {
	var due []engine.Delivery
	for _, d := range t.s.deliveries {
		if d.State == engine.DeliveryPending && !d.NextAttemptAt.After(through) {
			due = append(due, d)
		}
	}
	slices.SortFunc(due, func(a, b engine.Delivery) int {
		return cmp.Or(a.NextAttemptAt.Compare(b.NextAttemptAt), cmp.Compare(a.ID, b.ID))
	})
	for _, d := range due {
		if err := fn(d); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) ForEachDeliveryIn(state engine.DeliveryState, after string, fn func(engine.Delivery) error) error {
	return forEach(t.s.deliveries, cmp.Compare[string], func(d engine.Delivery) error {
		if d.State != state || d.ID <= after {
			return nil
		}
		return fn(d)
	})
}

func (t *tx) Hold(id string) (engine.Hold, bool, error) { return get(t.s.holds, id) }

func (t *tx) PutHold(h engine.Hold) error { return put(t, t.s.holds, h.ID, h) }

func (t *tx) ForEachHold(fn func(engine.Hold) error) error {
	return forEach(t.s.holds, cmp.Compare[string], fn)
}

// ForEachOpenHold scans every hold, sorting the due open ones of workshop
// by deadline then id; the other stores keep an index instead.
func (t *tx) ForEachOpenHold(workshop string, through time.Time, fn func(engine.Hold) error) error {
	var due []engine.Hold
	for _, h := range t.s.holds {
		if h.Open() && h.Workshop == workshop && !h.ExpiresAt.After(through) {
			due = append(due, h)
		}
	}
	slices.SortFunc(due, func(a, b engine.Hold) int {
		return cmp.Or(a.ExpiresAt.Compare(b.ExpiresAt), cmp.Compare(a.ID, b.ID))
	})
	for _, h := range due {
		if err := fn(h); err != nil {
			return err
		}
	}
	return nil
}

// ForEachReservationOf sorts the actor's reservations on every call; the
// other stores keep an index instead.
func (t *tx) ForEachReservationOf(actor, before string, fn func(engine.Reservation) error) error {
	return newestOf(t.s.reservations, actor, before, func(r engine.Reservation) string { return r.Actor }, fn)
}

// ForEachHoldOf sorts the actor's holds on every call.
func (t *tx) ForEachHoldOf(actor, before string, fn func(engine.Hold) error) error {
	return newestOf(t.s.holds, actor, before, func(h engine.Hold) string { return h.Actor }, fn)
}

// newestOf visits the records of m (keyed by id) whose owner is actor and
// whose id is below before (any, for ""), in descending order of id.
func newestOf[R any](m map[string]R, actor, before string, owner func(R) string, fn func(R) error) error {
	var ids []string
	for id, r := range m {
		if owner(r) == actor && (before == "" || id < before) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range slices.Backward(ids) {
		if err := fn(m[id]); err != nil {
			return err
		}
	}
	return nil
}

// HasReceiptsOf scans every receipt and tombstone; the other stores read
// the first key of the actor's range instead.
func (t *tx) HasReceiptsOf(actor string) (bool, error) {
	for k := range t.s.receipts {
		if k.actor == actor {
			return true, nil
		}
	}
	for k := range t.s.tombstones {
		if k.actor == actor {
			return true, nil
		}
	}
	return false, nil
}

func (t *tx) Binding(kind, subject string) (engine.Binding, bool, error) {
	return get(t.s.bindings, engine.Subject{Kind: kind, ID: subject})
}

// BindingOfActor scans every binding; the other stores keep an index by
// actor instead.
func (t *tx) BindingOfActor(actor string) (engine.Binding, bool, error) {
	for _, b := range t.s.bindings {
		if b.Actor == actor {
			return b, true, nil
		}
	}
	return engine.Binding{}, false, nil
}

// AddBinding refuses a subject or an actor that is bound already, as every
// store does: a binding is never changed, and an actor never moves to
// another subject.
func (t *tx) AddBinding(b engine.Binding) error {
	if old, ok := t.s.bindings[b.Of()]; ok {
		return fmt.Errorf("%s is bound to %s already", b.Of(), old.Actor)
	}
	if old, ok, _ := t.BindingOfActor(b.Actor); ok {
		return fmt.Errorf("actor %s is bound to %s already", b.Actor, old.Of())
	}
	return put(t, t.s.bindings, b.Of(), b)
}

func (t *tx) ForEachBinding(fn func(engine.Binding) error) error {
	return forEach(t.s.bindings, func(a, b engine.Subject) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.ID, b.ID))
	}, fn)
}

func (t *tx) Profile(actor string) (engine.Profile, bool, error) {
	return get(t.s.profiles, actor)
}

func (t *tx) PutProfile(p engine.Profile) error { return put(t, t.s.profiles, p.Actor, p) }

func (t *tx) ForEachProfile(fn func(engine.Profile) error) error {
	return forEach(t.s.profiles, cmp.Compare[string], fn)
}

// ForEachReservationIn sorts the workshop's reservations on every call.
func (t *tx) ForEachReservationIn(workshop string, after engine.PersonPosition, fn func(engine.Reservation) error) error {
	return inWorkshop(t.s.reservations, workshop, after, func(r engine.Reservation) (string, string) { return r.Workshop, r.Actor }, fn)
}

// ForEachHoldIn sorts the workshop's holds on every call.
func (t *tx) ForEachHoldIn(workshop string, after engine.PersonPosition, fn func(engine.Hold) error) error {
	return inWorkshop(t.s.holds, workshop, after, func(h engine.Hold) (string, string) { return h.Workshop, h.Actor }, fn)
}

// inWorkshop visits the records of m (keyed by id) of workshop whose
// position (actor, id) is after after, in order of position.
func inWorkshop[R any](m map[string]R, workshop string, after engine.PersonPosition, of func(R) (workshop, actor string), fn func(R) error) error {
	var at []engine.PersonPosition
	for id, r := range m {
		w, actor := of(r)
		if p := (engine.PersonPosition{Actor: actor, ID: id}); w == workshop && after.Before(p) {
			at = append(at, p)
		}
	}
	slices.SortFunc(at, func(a, b engine.PersonPosition) int {
		return cmp.Or(cmp.Compare(a.Actor, b.Actor), cmp.Compare(a.ID, b.ID))
	})
	for _, p := range at {
		if err := fn(m[p.ID]); err != nil {
			return err
		}
	}
	return nil
}

// DeleteWorkshop removes the workshop id.
func (t *tx) DeleteWorkshop(id string) error {
	if err := t.write(); err != nil {
		return err
	}
	delete(t.s.workshops, id)
	return nil
}

func (t *tx) WaitEntry(id string) (engine.WaitEntry, bool, error) { return get(t.s.waitEntries, id) }

func (t *tx) PutWaitEntry(e engine.WaitEntry) error {
	e.Position = 0 // A view's, not stored.
	return put(t, t.s.waitEntries, e.ID, e)
}

// ForEachWaitingEntry, ForEachWaitEntryIn and ForEachWaitEntryOf scan
// every entry on each call; the other stores keep indexes instead.
func (t *tx) ForEachWaitingEntry(workshop string, fn func(engine.WaitEntry) error) error {
	return t.ForEachWaitEntryIn(workshop, "", func(e engine.WaitEntry) error {
		if e.State != engine.WaitWaiting {
			return nil
		}
		return fn(e)
	})
}

func (t *tx) ForEachWaitEntryIn(workshop, after string, fn func(engine.WaitEntry) error) error {
	return forEach(t.s.waitEntries, cmp.Compare[string], func(e engine.WaitEntry) error {
		if e.Workshop != workshop || e.ID <= after {
			return nil
		}
		return fn(e)
	})
}

func (t *tx) ForEachWaitEntryOf(actor, before string, fn func(engine.WaitEntry) error) error {
	return newestOf(t.s.waitEntries, actor, before, func(e engine.WaitEntry) string { return e.Actor }, fn)
}

func (t *tx) ForEachWaitEntry(fn func(engine.WaitEntry) error) error {
	return forEach(t.s.waitEntries, cmp.Compare[string], fn)
}

// PlacesOf scans: the memory store keeps no count of places, and is not
// meant for histories long enough to need one.
func (t *tx) PlacesOf(workshop, actor string, now time.Time) (engine.Places, error) {
	return engine.CountPlaces(t, workshop, actor, now)
}
