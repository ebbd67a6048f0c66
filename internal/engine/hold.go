package engine

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The bounds of a hold's time to live, in seconds.
const (
	MinHoldTTLSeconds = 30
	MaxHoldTTLSeconds = 86400
)

// HoldState is where a hold stands. A store keeps HoldHeld, HoldConfirmed,
// HoldReleased or HoldExpired (the last once a cleanup has given back the
// places of a hold past its deadline); what a hold is at a given time is
// its StateAt, which is HoldExpired from the instant its deadline passes,
// whatever has been stored.
type HoldState string

// The states of a hold.
const (
	HoldHeld      HoldState = "held"
	HoldConfirmed HoldState = "confirmed"
	HoldReleased  HoldState = "released"
	HoldExpired   HoldState = "expired"
)

// Hold keeps places of a workshop for its owner until ExpiresAt: they count
// against the workshop's capacity while it is open, and a confirmation
// turns them into a reservation (ReservationID) without checking the
// capacity again. OperationKey is the key of the hold request;
// SettleOperation and SettledAt name the confirmation, release or cleanup
// that settled it.
type Hold struct {
	ID              string       `json:"hold_id"`
	Actor           string       `json:"actor"`
	OperationKey    OperationKey `json:"operation"`
	Workshop        string       `json:"workshop"`
	Quantity        int          `json:"quantity"`
	State           HoldState    `json:"state"`
	CreatedAt       time.Time    `json:"created_at"`
	ExpiresAt       time.Time    `json:"expires_at"`
	ReservationID   string       `json:"reservation_id,omitempty"`
	SettledAt       time.Time    `json:"settled_at,omitzero"`
	SettleOperation OperationKey `json:"settle_operation,omitempty"`
	// WaitEntry names the waiting list entry a hold is the offer of; its
	// OperationKey is then the key the entry joined with.
	WaitEntry string `json:"entry_id,omitempty"`
}

// Open reports whether the hold's places are still counted in its
// workshop's Holding counter: it is stored as held.
func (h Hold) Open() bool { return h.State == HoldHeld }

// StateAt returns the hold's state at now: an open hold whose deadline has
// come is expired.
func (h Hold) StateAt(now time.Time) HoldState {
	if h.Open() && !now.Before(h.ExpiresAt) {
		return HoldExpired
	}
	return h.State
}

// HoldRequest is the typed payload of a hold request: its workshop and
// quantity as for a reservation, and how long the places are kept.
type HoldRequest struct {
	Workshop   string `json:"workshop"`
	Quantity   int    `json:"quantity"`
	TTLSeconds int    `json:"ttl_seconds"`
}

// Validate checks a HoldRequest built in code against the rules of the
// request contract (api.DecodeHoldRequest).
func (r HoldRequest) Validate() error {
	if err := r.request().Validate(); err != nil {
		return err
	}
	if r.TTLSeconds < MinHoldTTLSeconds || r.TTLSeconds > MaxHoldTTLSeconds {
		return Errorf(CodeRequestContract, "member \"ttl_seconds\" must be an integer from %d to %d", MinHoldTTLSeconds, MaxHoldTTLSeconds)
	}
	return nil
}

// request returns the workshop and quantity r asks for.
func (r HoldRequest) request() Request { return Request{Workshop: r.Workshop, Quantity: r.Quantity} }

// IsHoldID reports whether id has the form of a hold id (the form of a
// reservation id).
func IsHoldID(id string) bool { return IsReservationID(id) }

// Hold is the idempotent hold request: for (actor, key) it replays the
// stored answer (same payload), refuses with CodeOperationConflict
// (another payload), or decides once, as Reserve does, with the places of
// open holds counted against capacity: when they suffice a hold is stored
// whose deadline is the decision's time (to the second) plus the time to
// live, the workshop's Holding counter grows, and the answer is "held";
// otherwise the answer is "unavailable".
func (e *Engine) Hold(ctx context.Context, actor string, key OperationKey, req HoldRequest) (Outcome, error) {
	if err := checkActorKey(actor, key); err != nil {
		return Outcome{}, err
	}
	if err := req.Validate(); err != nil {
		return Outcome{}, err
	}
	return operate(e, ctx, Principal{Actor: actor}, key, payload{kind: OperationHold, hold: req}, holding{}, "hold")
}

// holding is the decision's part of a hold request, with the target of a
// reservation request: when the places free at the decision's time
// suffice, a hold is stored whose deadline counts from that time, and the
// workshop's Holding counter grows.
type holding struct{}

func (holding) target(tx Tx, _ Principal, p payload) (Workshop, *Error, error) {
	return requestedWorkshop(tx, p.hold.request())
}

func (holding) effect(tx Tx, p payload, w Workshop, d *draft) (string, error) {
	req := p.hold.request()
	d.Request, d.HoldTTLSeconds = req, p.hold.TTLSeconds
	id := d.mint()
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
		return StatusUnavailable, nil
	}
	if _, taken, err := tx.Hold(id); err != nil || taken {
		return "", fmt.Errorf("hold id %s: already taken or unreadable: %v", id, err)
	}
	h := Hold{
		ID: id, Actor: d.Actor, OperationKey: d.OperationKey, Workshop: w.ID, Quantity: req.Quantity, State: HoldHeld,
		CreatedAt: d.now, ExpiresAt: d.now.Truncate(time.Second).Add(time.Duration(p.hold.TTLSeconds) * time.Second),
	}
	w.Holding += req.Quantity
	if err := tx.PutWorkshop(w); err != nil {
		return "", fmt.Errorf("update workshop %s: %w", w.ID, err)
	}
	if err := tx.PutHold(h); err != nil {
		return "", fmt.Errorf("insert hold: %w", err)
	}
	if err := addHoldEvent(tx, d.mint(), EventHoldCreated, h, d.Actor, d.OperationKey, d.now); err != nil {
		return "", err
	}
	d.HoldID, d.HoldExpiresAt = h.ID, h.ExpiresAt
	return StatusHeld, nil
}

// requestedWorkshop returns the workshop a request names, or the refusal
// of a request for an unknown workshop or above its max_quantity, which
// stores nothing.
func requestedWorkshop(tx Tx, req Request) (Workshop, *Error, error) {
	w, ok, err := tx.Workshop(req.Workshop)
	if err != nil {
		return Workshop{}, nil, fmt.Errorf("look up workshop %s: %w", req.Workshop, err)
	}
	if !ok {
		return Workshop{}, Errorf(CodeUnknownWorkshop, "workshop %q does not exist", req.Workshop), nil
	}
	if req.Quantity > w.MaxQuantity {
		return Workshop{}, Errorf(CodeRequestContract, "member \"quantity\" is %d, above the maximum of %d for workshop %q", req.Quantity, w.MaxQuantity, w.ID), nil
	}
	return w, nil, nil
}

// heldAt returns the places of w's open holds whose deadline has not come
// at now, for a read that cannot clean up: the Holding counter less the
// open holds past their deadline, which the store finds through its index
// of open holds by deadline, so the cost is the number of holds that
// expired and were not yet cleaned up. Decisions use makeRoom instead.
func heldAt(tx Tx, w Workshop, now time.Time) (int, error) {
	held := w.Holding
	if held == 0 {
		return 0, nil
	}
	err := tx.ForEachOpenHold(w.ID, now, func(h Hold) error {
		held -= h.Quantity
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("read the expired holds of workshop %s: %w", w.ID, err)
	}
	return held, nil
}

// free returns the places of w counted neither as reserved nor in its
// Holding counter: the places free at any time, and all of them once no
// open hold of w is past its deadline.
func (w Workshop) free() int { return w.Capacity - w.Reserved - w.Holding }

// makeRoom is how a decision d that wants need places of w learns whether
// they are free at its time, in write transaction tx: when the places
// counted neither as reserved nor in open holds suffice, it reads nothing
// more; otherwise it cleans up open holds of w whose deadline has passed,
// oldest deadline first, until need places are free or none is left. Each
// hold it cleans is stored as expired and its places leave w's Holding
// counter, and w is written once; it returns w as it then stands, and
// counts the holds it cleaned in d's expiredHolds. So a hold past its
// deadline is walked by one decision at most, which stores it as expired,
// and a decision that finds its places without the places of expired
// holds walks none: however many expired holds nobody cleaned up, the
// decisions that follow walk each of them once between them, instead of
// every one of them each. Once it has cleaned every open hold past its
// deadline, w's Holding counter is exactly the places held at d's time, so
// w.free() < need is the exact refusal.
func (d *draft) makeRoom(tx Tx, w Workshop, need int) (Workshop, error) {
	if w.free() >= need {
		return w, nil
	}
	room := w.free()
	var due []Hold
	err := tx.ForEachOpenHold(w.ID, d.now, func(h Hold) error {
		due = append(due, h)
		if room += h.Quantity; room >= need {
			return errEnough
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return Workshop{}, fmt.Errorf("read the expired holds of workshop %s: %w", w.ID, err)
	}
	if len(due) == 0 {
		return w, nil
	}
	for _, h := range due {
		w.Holding -= h.Quantity
		if err := putExpired(tx, h, d.now, d.mint()); err != nil {
			return Workshop{}, err
		}
	}
	if err := tx.PutWorkshop(w); err != nil {
		return Workshop{}, fmt.Errorf("update workshop %s: %w", w.ID, err)
	}
	d.expiredHolds += len(due)
	return w, nil
}

// viewAt fills in the Held and Available members of w as a view shows them
// at now.
func viewAt(tx Tx, w Workshop, now time.Time) (Workshop, error) {
	held, err := heldAt(tx, w, now)
	if err != nil {
		return Workshop{}, err
	}
	w.Held, w.Available = held, w.Capacity-w.Reserved-held
	if !w.Schedule.IsZero() { // A workshop without one shows what it always showed.
		w.Registration = w.Schedule.RegistrationAt(now)
		w.Schedule = w.Schedule.inZone()
	}
	return w, nil
}

// Confirm is the idempotent confirmation of hold id by its owner who under
// operation key: it replays, refuses with CodeOperationConflict, or decides
// once, in one transaction: a hold that is not who's is CodeUnknownHold and
// stores nothing; an open hold before its deadline becomes a reservation
// (its places move from the workshop's holding counter to its reserved
// counter, with no capacity check, and the reservation's confirmation event
// enters the outbox) answered "reserved"; otherwise the stored answer is
// "expired", "released" or "already_confirmed".
func (e *Engine) Confirm(ctx context.Context, who Principal, key OperationKey, id string) (Outcome, error) {
	return e.settle(ctx, who, key, id, OperationConfirm)
}

// Release is the idempotent release of hold id by its owner, with the
// results of Confirm, except that an open hold before its deadline gives
// its places back and is answered "released", and the other stored answers
// are "expired", "already_confirmed" and "already_released".
func (e *Engine) Release(ctx context.Context, who Principal, key OperationKey, id string) (Outcome, error) {
	return e.settle(ctx, who, key, id, OperationRelease)
}

// settle runs a confirmation or release (kind) of hold id.
func (e *Engine) settle(ctx context.Context, who Principal, key OperationKey, id string, kind OperationKind) (Outcome, error) {
	if err := checkActorKey(who.Actor, key); err != nil {
		return Outcome{}, err
	}
	if !IsHoldID(id) {
		return Outcome{}, unknownHold(who, id)
	}
	return operate(e, ctx, who, key, payload{kind: kind, holdID: id}, settlement{}, fmt.Sprintf("%s hold %s", kind, id))
}

func unknownHold(who Principal, id string) *Error {
	return Errorf(CodeUnknownHold, "no hold %s is visible to %s", truncate(id, 40), who.Actor)
}

// settleStatus is the answer of a confirmation or release (kind) of a hold
// in state s, other than the first settlement of an open hold.
var settleStatus = map[OperationKind]map[HoldState]string{
	OperationConfirm: {HoldExpired: StatusExpired, HoldReleased: StatusReleased, HoldConfirmed: StatusAlreadyConfirmed},
	OperationRelease: {HoldExpired: StatusExpired, HoldReleased: StatusAlreadyReleased, HoldConfirmed: StatusAlreadyConfirmed},
}

// heldHold is what a confirmation or release acts on: the hold and its
// workshop.
type heldHold struct {
	h Hold
	w Workshop
}

// settlement is the decision's part of a confirmation or release (the
// payload's kind). Its target is the hold, which must be who's (else
// CodeUnknownHold, which stores nothing), and, while the hold is open,
// its workshop. The decision
// reads the clock only once both are read, which in a store with row
// locks (PostgreSQL) waits until no other transaction can change either:
// a decision that took the places of the hold once its deadline passed
// has committed by then, so its time is before this one, and a hold past
// its deadline is never confirmed, whatever cleanup has or has not run.
// Deciding on such a hold also cleans it up.
type settlement struct{}

func (settlement) target(tx Tx, who Principal, p payload) (heldHold, *Error, error) {
	h, ok, err := tx.Hold(p.holdID)
	if err != nil {
		return heldHold{}, nil, fmt.Errorf("look up hold %s: %w", p.holdID, err)
	}
	if !ok || h.Actor != who.Actor {
		return heldHold{}, unknownHold(who, p.holdID), nil
	}
	if !h.Open() {
		// A settled hold is answered from its state alone: its workshop
		// may have been deleted since (a workshop is deleted only once
		// none of its holds is open).
		return heldHold{h: h}, nil, nil
	}
	w, ok, err := tx.Workshop(h.Workshop)
	if err != nil {
		return heldHold{}, nil, fmt.Errorf("look up workshop %s: %w", h.Workshop, err)
	}
	if !ok {
		return heldHold{}, nil, fmt.Errorf("hold %s is for workshop %q, which does not exist", h.ID, h.Workshop)
	}
	return heldHold{h, w}, nil, nil
}

func (settlement) effect(tx Tx, p payload, t heldHold, d *draft) (string, error) {
	h, w, now := t.h, t.w, d.now
	d.Request, d.HoldID = Request{Workshop: h.Workshop, Quantity: h.Quantity}, h.ID
	state := h.StateAt(now)
	if state == HoldExpired && h.Open() {
		w.Holding -= h.Quantity
		if err := putExpired(tx, h, now, d.mint()); err != nil {
			return "", err
		}
		d.expiredHolds = 1
		if _, err := d.serve(tx, &w); err != nil {
			return "", err
		}
		if err := tx.PutWorkshop(w); err != nil {
			return "", fmt.Errorf("update workshop %s: %w", w.ID, err)
		}
	}
	if state != HoldHeld {
		return settleStatus[p.kind][state], nil
	}
	w.Holding -= h.Quantity
	h.SettledAt, h.SettleOperation = now, d.OperationKey
	status := StatusReleased
	h.State = HoldReleased
	if p.kind == OperationConfirm {
		resID, eventID := d.mint(), d.mint()
		w.Reserved += h.Quantity
		res := Reservation{ID: resID, Actor: h.Actor, OperationKey: d.OperationKey, Workshop: h.Workshop, Quantity: h.Quantity, CreatedAt: now}
		if err := insertReservation(tx, res, eventID); err != nil {
			return "", err
		}
		status, h.State, h.ReservationID, d.ReservationID = StatusReserved, HoldConfirmed, resID, resID
	}
	if err := tx.PutHold(h); err != nil {
		return "", fmt.Errorf("update hold %s: %w", h.ID, err)
	}
	if err := settleOffer(tx, h, offerEnd[h.State], now); err != nil {
		return "", err
	}
	// A release passes its places on to the people waiting; either
	// settlement is a decision on w, which also passes on the places of
	// w's holds and offers whose deadline has passed.
	if _, err := d.serve(tx, &w); err != nil {
		return "", err
	}
	if err := tx.PutWorkshop(w); err != nil {
		return "", fmt.Errorf("update workshop %s: %w", w.ID, err)
	}
	typ := EventHoldReleased
	if h.State == HoldConfirmed {
		typ = EventHoldConfirmed
	}
	if err := addHoldEvent(tx, d.mint(), typ, h, d.Actor, d.OperationKey, now); err != nil {
		return "", err
	}
	return status, nil
}

// expireHold cleans up open hold h past its deadline at d's time: it is
// stored as expired, its places leave the holding counter of its
// workshop w, and they go to the people waiting, if any.
func (d *draft) expireHold(tx Tx, w Workshop, h Hold) error {
	w.Holding -= h.Quantity
	if err := putExpired(tx, h, d.now, d.mint()); err != nil {
		return err
	}
	if _, err := d.serve(tx, &w); err != nil {
		return err
	}
	if err := tx.PutWorkshop(w); err != nil {
		return fmt.Errorf("update workshop %s: %w", w.ID, err)
	}
	return nil
}

// putExpired stores open hold h, past its deadline, as cleaned up at now,
// with its hold.expired event eventID; its caller takes its places out of
// its workshop's Holding counter. The event is written where the hold is
// stored as expired, once, whichever decision or cleanup does it.
func putExpired(tx Tx, h Hold, now time.Time, eventID string) error {
	h.State, h.SettledAt = HoldExpired, now
	if err := tx.PutHold(h); err != nil {
		return fmt.Errorf("expire hold %s: %w", h.ID, err)
	}
	if err := settleOffer(tx, h, WaitExpired, now); err != nil {
		return err
	}
	return addHoldEvent(tx, eventID, EventHoldExpired, h, "", "", now)
}

// HoldOf returns hold id as it stands now, if who owns it or is an admin,
// and CodeUnknownHold otherwise, so that ids of others are not revealed.
func (e *Engine) HoldOf(ctx context.Context, who Principal, id string) (Hold, error) {
	if !IsHoldID(id) {
		return Hold{}, unknownHold(who, id)
	}
	var h Hold
	var ok bool
	err := e.store.View(ctx, func(tx Tx) error {
		var err error
		h, ok, err = tx.Hold(id)
		return err
	})
	if err != nil {
		return Hold{}, fmt.Errorf("get hold %s: %w", id, err)
	}
	if !ok || (h.Actor != who.Actor && !who.Admin) {
		return Hold{}, unknownHold(who, id)
	}
	h.State = h.StateAt(e.now())
	return h, nil
}

// expireHoldsStep bounds the holds one write transaction of ExpireHolds
// cleans up, so that no step holds the writer for long.
const expireHoldsStep = 64

// ExpireHolds cleans up to limit open holds whose deadline has passed:
// each is stored as expired and its places leave its workshop's holding
// counter. It finds them in a read transaction through the stores' index
// of open holds by deadline, then cleans them in write transactions of at
// most a few dozen holds each, rechecking each hold there (one that a
// decision settled meanwhile is left as it is). It returns how many it
// cleaned, and more when it found limit holds, so that more may be left:
// the daemon's janitor calls it again while more is true. No decision
// depends on it for correctness: every decision treats a hold past its
// deadline as expired. Waiting lists do: an offer past its deadline passes
// on at the next decision on its workshop, or here, whichever comes first.
// Each hold it cleans gives its places to its workshop's waiting list.
func (e *Engine) ExpireHolds(ctx context.Context, limit int) (cleaned int, more bool, err error) {
	now := e.utcNow()
	var due []string
	err = e.store.View(ctx, func(tx Tx) error {
		due = due[:0]
		return tx.ForEachWorkshop(func(w Workshop) error {
			if w.Holding == 0 || len(due) >= limit {
				return nil
			}
			err := tx.ForEachOpenHold(w.ID, now, func(h Hold) error {
				if len(due) >= limit {
					return errEnough
				}
				due = append(due, h.ID)
				return nil
			})
			if err == errEnough {
				return nil
			}
			return err
		})
	})
	if err != nil {
		return 0, false, fmt.Errorf("find expired holds: %w", err)
	}
	more = len(due) >= limit
	for len(due) > 0 {
		step := due[:min(len(due), expireHoldsStep)]
		due = due[len(step):]
		done := 0
		err := e.store.Update(ctx, func(tx Tx) error {
			done = 0
			for _, id := range step {
				h, ok, err := tx.Hold(id)
				if err != nil {
					return fmt.Errorf("look up hold %s: %w", id, err)
				}
				if !ok || !h.Open() || now.Before(h.ExpiresAt) {
					continue
				}
				w, ok, err := tx.Workshop(h.Workshop)
				if err != nil {
					return fmt.Errorf("look up workshop %s: %w", h.Workshop, err)
				}
				if !ok {
					return fmt.Errorf("hold %s is for workshop %q, which does not exist", h.ID, h.Workshop)
				}
				d := draft{now: now, newID: e.newID}
				if err := d.expireHold(tx, w, h); err != nil {
					return err
				}
				done += 1 + d.expiredHolds // The holds serving the waiting list cleaned too.
			}
			return nil
		})
		if err != nil {
			return cleaned, false, fmt.Errorf("expire holds: %w", err)
		}
		cleaned += done
	}
	return cleaned, more, nil
}
