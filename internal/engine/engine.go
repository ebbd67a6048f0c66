package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/reserve/reserve/internal/tracing"
)

// Engine makes every decision of reserve against a Store. It is safe for
// concurrent use.
type Engine struct {
	store  Store
	now    func() time.Time
	newID  func(time.Time) string
	tokens tokenCache
	use    tokenUse
	// exclusive is set when this engine is the only one using its store
	// (WithExclusiveStore).
	exclusive bool
	// bindings remembers the actors of the subjects it has read: a binding
	// never changes and is never removed.
	bindings cache[Subject, string]
	// ping is the read of Ping that waits for the store, if any, which
	// every Ping meanwhile shares; pingMu guards it.
	pingMu sync.Mutex
	ping   *pingRead
	// tracer starts a span for each decision; nil is tracing off.
	tracer *tracing.Tracer
}

// Option configures an Engine.
type Option func(*Engine)

// WithClock injects the clock (tests fix it).
func WithClock(now func() time.Time) Option { return func(e *Engine) { e.now = now } }

// WithIDs injects the reservation id source (tests fix it). It must return
// ids for which IsReservationID holds.
func WithIDs(newID func(time.Time) string) Option { return func(e *Engine) { e.newID = newID } }

// WithExclusiveStore declares that this engine is the only one that uses
// its store (the daemon on its bbolt file, which it locks), so a token
// revocation takes effect everywhere by leaving this engine's cache, and
// RevokeToken need not wait for the caches of other engines to lapse.
func WithExclusiveStore() Option { return func(e *Engine) { e.exclusive = true } }

// WithTokenCacheTTL sets how long the engine trusts what it read of an API
// token (DefaultTokenCacheTTL unless given; tests shorten it). A revocation
// on an engine without WithExclusiveStore waits this long.
func WithTokenCacheTTL(d time.Duration) Option { return func(e *Engine) { e.tokens.ttl = d } }

// WithTracer gives each decision of an idempotent operation a span
// (tracing.SpanDecision) in the trace of the context it is asked in.
func WithTracer(t *tracing.Tracer) Option { return func(e *Engine) { e.tracer = t } }

// utcNow reads the clock in UTC.
func (e *Engine) utcNow() time.Time { return e.now().UTC() }

// New returns an Engine deciding against store.
func New(store Store, opts ...Option) *Engine {
	e := &Engine{store: store, now: time.Now, newID: NewReservationID, tokens: tokenCache{ttl: DefaultTokenCacheTTL}}
	for _, o := range opts {
		o(e)
	}
	return e
}

// Reserve is the idempotent reservation operation: for (actor, key) it either
// replays the stored answer (same payload), refuses with CodeOperationConflict
// (different payload), or decides the intent once — unknown workshop and
// quantity above the workshop's max_quantity are refused without storing
// anything; otherwise the reservation (if capacity suffices), the workshop's
// counter and the receipt are written in one transaction, and the answer is
// reserved or unavailable. A repeat of a key whose receipt exists is
// answered from a read transaction without taking the writer.
func (e *Engine) Reserve(ctx context.Context, actor string, key OperationKey, req Request) (Outcome, error) {
	if err := checkOperation(actor, key, req); err != nil {
		return Outcome{}, err
	}
	return operate(e, ctx, Principal{Actor: actor}, key, payload{kind: OperationReserve, req: req}, reservation{}, "reserve")
}

func checkOperation(actor string, key OperationKey, req Request) error {
	if err := checkActorKey(actor, key); err != nil {
		return err
	}
	return req.Validate()
}

// checkActorKey refuses an operation of an actor that is not a valid actor
// name or under a key that is not an operation key.
func checkActorKey(actor string, key OperationKey) error {
	if err := ValidateActor(actor); err != nil {
		return Errorf(CodeUnauthenticated, "%v", err)
	}
	if !IsOperationKey(key) {
		return Errorf(CodeInvalidIdempotencyKey, "operation key %q is not %s", truncate(string(key), 80), KeyForm)
	}
	return nil
}

// reservation is the decision's part of a reservation request: its target
// is the requested workshop; when the places free at the decision's time
// suffice, the reservation is inserted, the workshop's counter grows and
// the confirmation event enters the outbox ("reserved"), and otherwise
// the answer is "unavailable".
type reservation struct{}

func (reservation) target(tx Tx, _ Principal, p payload) (Workshop, *Error, error) {
	return requestedWorkshop(tx, p.req)
}

func (reservation) effect(tx Tx, p payload, w Workshop, d *draft) (string, error) {
	req := Request{Workshop: p.req.Workshop, Quantity: p.req.Quantity}
	d.Request = req
	id, eventID := d.mint(), d.mint()
	w, err := d.serveFirst(tx, w)
	if err != nil {
		return "", err
	}
	if refusal, err := d.admit(tx, w, req.Quantity); err != nil || refusal != "" {
		return refusal, err
	}
	w, queued, err := d.queue(tx, w, req.Quantity)
	if err != nil {
		return "", err
	}
	if queued {
		if p.req.Waitlist {
			return d.join(tx, w, req)
		}
		return StatusUnavailable, nil
	}
	w.Reserved += req.Quantity
	if err := tx.PutWorkshop(w); err != nil {
		return "", fmt.Errorf("update workshop %s: %w", w.ID, err)
	}
	res := Reservation{ID: id, Actor: d.Actor, OperationKey: d.OperationKey, Workshop: req.Workshop, Quantity: req.Quantity, CreatedAt: d.now}
	if err := insertReservation(tx, res, eventID); err != nil {
		return "", err
	}
	d.ReservationID = id
	return StatusReserved, nil
}

// insertReservation inserts the new reservation res, made under its
// operation key, and its confirmation event eventID in the outbox.
func insertReservation(tx Tx, res Reservation, eventID string) error {
	if _, taken, err := tx.Reservation(res.ID); err != nil || taken {
		return fmt.Errorf("reservation id %s: already taken or unreadable: %v", res.ID, err)
	}
	if err := tx.PutReservation(res); err != nil {
		return fmt.Errorf("insert reservation: %w", err)
	}
	return addEvent(tx, eventID, EventReserved, res, res.Actor, res.OperationKey, res.CreatedAt)
}
