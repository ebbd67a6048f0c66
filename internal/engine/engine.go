package engine

import (
	"context"
	"fmt"
	"sync"
	"time"
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
	fp := Fingerprint(req)
	out, err := e.operate(ctx, actor, key, payload{kind: OperationReserve, req: req}, func(tx Tx, clock func() time.Time) (Outcome, error, error) {
		return e.decide(tx, actor, key, req, fp, clock, func(now time.Time) (string, string) { return e.newID(now), e.newID(now) })
	})
	if err != nil && Undecided(ErrorCode(err)) {
		err = fmt.Errorf("reserve: %w", err)
	}
	return out, err
}

// operate runs one idempotent operation of actor under key: when a receipt
// exists it answers from a read transaction, without taking the writer;
// otherwise it runs decide in a write transaction, which returns the
// outcome, a refusal that stores nothing, or an error that rolls back.
// decide reads the clock (in UTC) inside the transaction, each time the
// store runs it, so that the time a decision is made at is the time it is
// decided, however long the transaction waited for the writer, a row lock
// or a retry: a hold's deadline is judged at that time.
func (e *Engine) operate(ctx context.Context, actor string, key OperationKey, p payload, decide func(tx Tx, clock func() time.Time) (Outcome, error, error)) (Outcome, error) {
	var out Outcome
	var decided error
	found := false
	err := e.store.View(ctx, func(tx Tx) error {
		var err error
		out, decided, found, err = lookUp(tx, actor, key, p)
		return err
	})
	if err != nil {
		return Outcome{}, err
	}
	if found {
		return out, decided
	}
	err = e.store.Update(ctx, func(tx Tx) error {
		var err error
		out, decided, err = decide(tx, e.utcNow)
		return err
	})
	if err != nil {
		return Outcome{}, err
	}
	return out, decided
}

// BatchItem is one reservation of a ReserveBatch: who reserves, under
// which operation key, and what.
type BatchItem struct {
	Actor   string
	Key     OperationKey
	Request Request
}

// ReserveBatch decides many reservations in a single transaction, each with
// exactly the rules of Reserve, and commits them all or none. It is meant for
// bulk loading (database generators, tests); refusals that store nothing are
// returned per item in errs.
func (e *Engine) ReserveBatch(ctx context.Context, items []BatchItem) (outs []Outcome, errs []error, err error) {
	for _, it := range items {
		if err := checkOperation(it.Actor, it.Key, it.Request); err != nil {
			return nil, nil, err
		}
	}
	now := e.now().UTC()
	ids, eventIDs := make([]string, len(items)), make([]string, len(items))
	for i := range ids {
		ids[i], eventIDs[i] = e.newID(now), e.newID(now)
	}
	err = e.store.Update(ctx, func(tx Tx) error {
		outs, errs = make([]Outcome, len(items)), make([]error, len(items))
		for i, it := range items {
			var err error
			outs[i], errs[i], err = e.decide(tx, it.Actor, it.Key, it.Request, Fingerprint(it.Request),
				func() time.Time { return now }, func(time.Time) (string, string) { return ids[i], eventIDs[i] })
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("reserve batch: %w", err)
	}
	return outs, errs, nil
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
	if !isCanonicalUUIDv4(string(key)) {
		return Errorf(CodeInvalidIdempotencyKey, "operation key %q is not a lowercase canonical UUIDv4", truncate(string(key), 80))
	}
	return nil
}

// decide is the one reservation decision, run inside a write transaction. It
// returns the outcome, or a refusal that stores nothing (decision), or an
// error that must roll the transaction back (err). It reads the clock only
// once it has read (on PostgreSQL locked) the workshop, so that the holds
// whose deadline passed while it waited for that lock no longer count, and
// mint then gives it the ids of the reservation and of its confirmation
// event. It has no effects outside tx.
func (e *Engine) decide(tx Tx, actor string, key OperationKey, req Request, fp string, clock func() time.Time, mint func(time.Time) (id, eventID string)) (out Outcome, decision, err error) {
	out, decision, found, err := lookUp(tx, actor, key, payload{kind: OperationReserve, req: req})
	if err != nil || found {
		return out, decision, err
	}
	w, decision, err := requestedWorkshop(tx, req)
	if err != nil || decision != nil {
		return Outcome{}, decision, err
	}
	now := clock()
	id, eventID := mint(now)
	rec := Receipt{
		Actor: actor, OperationKey: key,
		FingerprintVersion: ReserveFingerprintV1, Fingerprint: fp,
		Request: req, CreatedAt: now,
	}
	status := StatusUnavailable
	w, expired, err := makeRoom(tx, w, req.Quantity, now)
	if err != nil {
		return Outcome{}, nil, err
	}
	if w.free() >= req.Quantity {
		if _, taken, err := tx.Reservation(id); err != nil || taken {
			return Outcome{}, nil, fmt.Errorf("reservation id %s: already taken or unreadable: %v", id, err)
		}
		w.Reserved += req.Quantity
		if err := tx.PutWorkshop(w); err != nil {
			return Outcome{}, nil, fmt.Errorf("update workshop %s: %w", w.ID, err)
		}
		res := Reservation{ID: id, Actor: actor, OperationKey: key, Workshop: req.Workshop, Quantity: req.Quantity, CreatedAt: now}
		if err := tx.PutReservation(res); err != nil {
			return Outcome{}, nil, fmt.Errorf("insert reservation: %w", err)
		}
		if err := addEvent(tx, eventID, EventReserved, res, actor, key, now); err != nil {
			return Outcome{}, nil, err
		}
		status, rec.ReservationID = StatusReserved, id
	}
	out, err = storeReceipt(tx, rec, status)
	out.ExpiredHolds = expired
	return out, nil, err
}

// storeReceipt stores rec with the answer of status (built from rec by
// AnswerOf, so a store may keep only the status) and returns it as the
// first answer.
func storeReceipt(tx Tx, rec Receipt, status string) (Outcome, error) {
	rec.Answer = rec.AnswerOf(status)
	if err := tx.PutReceipt(rec); err != nil {
		return Outcome{}, fmt.Errorf("store receipt: %w", err)
	}
	return Outcome{Answer: rec.Answer}, nil
}

// replay answers an operation from its existing receipt: the stored answer
// when the payload matches, CodeOperationConflict when the key was
// used for another payload or another kind of operation.
func replay(rec Receipt, p payload) (Outcome, error) {
	same, err := p.matches(rec.FingerprintVersion, rec.Fingerprint)
	if err != nil {
		return Outcome{}, fmt.Errorf("receipt %s of %s: %w", rec.OperationKey, rec.Actor, err)
	}
	if !same {
		return Outcome{}, conflict(rec.OperationKey, rec.Kind(), rec.Request, rec.AnswerOf(rec.Answer.Status))
	}
	return Outcome{Answer: rec.Answer, Replayed: true}, nil
}

// conflict is the refusal of a key already used for another payload: kind,
// req and reservationID describe that first use.
func conflict(key OperationKey, kind OperationKind, req Request, a Answer) error {
	var use string
	switch kind {
	case OperationCancel:
		use = "to cancel reservation " + a.ReservationID
	case OperationHold:
		use = fmt.Sprintf("for a different hold request (workshop %q, quantity %d)", req.Workshop, req.Quantity)
	case OperationConfirm, OperationRelease:
		use = fmt.Sprintf("to %s hold %s", kind, a.HoldID)
	default:
		use = fmt.Sprintf("for a different reservation (workshop %q, quantity %d)", req.Workshop, req.Quantity)
	}
	return Errorf(CodeOperationConflict, "operation key %s was already used %s; a different operation needs a new operation key", key, use)
}

// lookUp answers an operation whose key was used before: from its receipt
// (replay or conflict) or, once the receipt expired, from its tombstone
// (CodeOperationExpired or conflict). found is false when the key is new.
func lookUp(tx Tx, actor string, key OperationKey, p payload) (out Outcome, decision error, found bool, err error) {
	rec, ok, err := tx.Receipt(actor, key)
	if err != nil {
		return Outcome{}, nil, false, fmt.Errorf("look up receipt: %w", err)
	}
	if ok {
		out, decision = replay(rec, p)
		return out, decision, true, nil
	}
	ts, ok, err := tx.Tombstone(actor, key)
	if err != nil {
		return Outcome{}, nil, false, fmt.Errorf("look up tombstone: %w", err)
	}
	if !ok {
		return Outcome{}, nil, false, nil
	}
	same, err := p.matches(ts.FingerprintVersion, ts.Fingerprint)
	if err != nil {
		return Outcome{}, nil, false, fmt.Errorf("tombstone %s of %s: %w", key, actor, err)
	}
	if !same {
		return Outcome{}, conflict(key, ts.Kind(), ts.Request(), ts.Answer), true, nil
	}
	return Outcome{}, ts.expired(), true, nil
}
