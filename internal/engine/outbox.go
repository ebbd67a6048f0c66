package engine

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The types of outbox events.
const (
	// EventReserved confirms a reservation.
	EventReserved = "reservation.confirmed"
	// EventCancelled confirms a cancellation.
	EventCancelled = "reservation.cancelled"
	// The events of a hold's life: made, turned into a reservation (which
	// has its own EventReserved too), given back by its owner, and stored
	// as expired once its deadline passed.
	EventHoldCreated   = "hold.created"
	EventHoldConfirmed = "hold.confirmed"
	EventHoldReleased  = "hold.released"
	EventHoldExpired   = "hold.expired"
	// EventWaitlistOffered tells a person on a waiting list that places
	// are held for them: a hold event whose hold is the offer.
	EventWaitlistOffered = "waitlist.offered"
)

// ForSimpleChannels reports whether the simple channels (a directory of
// event files, one URL) deliver e: the reservation events, which are all
// those channels ever delivered, so that a receiver written for them
// never meets a type it does not know. Webhook endpoints and mail get
// every type. Stores keep only these events in the index that
// ForEachPendingEvent walks.
func (e Event) ForSimpleChannels() bool { return e.Type == EventReserved || e.Type == EventCancelled }

// Event is one confirmation in the outbox: written in the same transaction
// as the reservation or cancellation it confirms, delivered by the daemon's
// dispatcher afterwards (at least once, always under the same ID, so that a
// receiver that deduplicates by ID sees it exactly once), and marked
// delivered in a later transaction. What is delivered is its Payload, built
// from its members. Owner, Workshop and Quantity are there for that; they
// are empty in an event a store read with its payload as bytes (see
// WithStoredPayload).
type Event struct {
	ID            string
	Type          string
	ReservationID string
	// HoldID names the hold of a hold event (a hold.confirmed event names
	// the reservation made too); it is "" in a reservation event.
	HoldID       string
	Actor        string
	OperationKey OperationKey
	CreatedAt    time.Time
	DeliveredAt  time.Time
	Owner        string
	Workshop     string
	Quantity     int
	// HoldExpiresAt is the deadline of the hold of a hold event, which
	// never changes once the hold is made: routing schedules the
	// reminder of a new hold or an offer by it (RouteOptions.HoldReminder)
	// without reading the hold. It is not part of the payload, and it is
	// the zero time in an event that an earlier version wrote.
	HoldExpiresAt time.Time
	// stored, if not nil, is the payload as a store kept it.
	stored []byte
}

// Delivered reports whether the event was marked delivered.
func (e Event) Delivered() bool { return !e.DeliveredAt.IsZero() }

// EventPayload is the JSON body of a delivered event.
type EventPayload struct {
	ID            string       `json:"id"`
	Type          string       `json:"type"`
	ReservationID string       `json:"reservation_id,omitempty"`
	HoldID        string       `json:"hold_id,omitempty"`
	Owner         string       `json:"owner"`
	Actor         string       `json:"actor"`
	Operation     OperationKey `json:"operation"`
	Workshop      string       `json:"workshop"`
	Quantity      int          `json:"quantity"`
	At            time.Time    `json:"at"`
}

// Payload returns the JSON body delivered for e: the payload a store kept
// as bytes, or else the one built from e's members.
func (e Event) Payload() ([]byte, error) {
	if e.stored != nil {
		return e.stored, nil
	}
	return EventPayload{
		ID: e.ID, Type: e.Type, ReservationID: e.ReservationID, HoldID: e.HoldID, Owner: e.Owner, Actor: e.Actor,
		Operation: e.OperationKey, Workshop: e.Workshop, Quantity: e.Quantity, At: e.CreatedAt,
	}.appendJSON(make([]byte, 0, 320))
}

// WithStoredPayload returns e delivering payload, the bytes a store kept
// for it, as they are.
func (e Event) WithStoredPayload(payload []byte) Event {
	if payload == nil {
		payload = []byte{}
	}
	e.stored = payload
	return e
}

// StoredPayload reports whether e delivers bytes a store kept rather than
// the payload built from its members.
func (e Event) StoredPayload() bool { return e.stored != nil }

// addEvent writes the confirmation event id of type typ for res, caused by
// actor's operation key, into the outbox of tx. Its payload must be
// encodable, so that every store can deliver it.
func addEvent(tx Tx, id, typ string, res Reservation, actor string, key OperationKey, now time.Time) error {
	return putEvent(tx, Event{ID: id, Type: typ, ReservationID: res.ID, Actor: actor, OperationKey: key, CreatedAt: now,
		Owner: res.Actor, Workshop: res.Workshop, Quantity: res.Quantity})
}

// addHoldEvent writes the event id of type typ for hold h, caused by
// actor's operation key (none for an expiry, which nobody asked for).
func addHoldEvent(tx Tx, id, typ string, h Hold, actor string, key OperationKey, now time.Time) error {
	return putEvent(tx, Event{ID: id, Type: typ, HoldID: h.ID, ReservationID: h.ReservationID, Actor: actor, OperationKey: key,
		CreatedAt: now, Owner: h.Actor, Workshop: h.Workshop, Quantity: h.Quantity, HoldExpiresAt: h.ExpiresAt})
}

// putEvent inserts ev into the outbox of tx.
func putEvent(tx Tx, ev Event) error {
	id, typ, now := ev.ID, ev.Type, ev.CreatedAt
	if !plainTime(now) {
		if _, err := ev.Payload(); err != nil {
			return fmt.Errorf("encode event %s: %w", id, err)
		}
	}
	if err := tx.AddEvent(ev); err != nil {
		return fmt.Errorf("add %s event %s: %w", typ, id, err)
	}
	return nil
}

var errEnough = errors.New("enough")

// PendingEvents returns up to limit undelivered events in id order.
func (e *Engine) PendingEvents(ctx context.Context, limit int) ([]Event, error) {
	var evs []Event
	err := e.store.View(ctx, func(tx Tx) error {
		evs = evs[:0]
		err := tx.ForEachPendingEvent(func(ev Event) error {
			if len(evs) >= limit {
				return errEnough
			}
			evs = append(evs, ev)
			return nil
		})
		if errors.Is(err, errEnough) {
			return nil
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pending events: %w", err)
	}
	return evs, nil
}

// CountPendingEvents returns the outbox backlog: how many events are not
// delivered yet.
func (e *Engine) CountPendingEvents(ctx context.Context) (int, error) {
	n := 0
	err := e.store.View(ctx, func(tx Tx) error {
		n = 0
		return tx.ForEachPendingEvent(func(Event) error { n++; return nil })
	})
	if err != nil {
		return 0, fmt.Errorf("count pending events: %w", err)
	}
	return n, nil
}

// MarkDelivered records that event id was delivered. Marking an event
// delivered twice keeps the first time.
func (e *Engine) MarkDelivered(ctx context.Context, id string) error {
	now := e.now().UTC()
	err := e.store.Update(ctx, func(tx Tx) error {
		ev, ok, err := tx.Event(id)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("no event %s", id)
		}
		if ev.Delivered() {
			return nil
		}
		return tx.MarkEventDelivered(id, now)
	})
	if err != nil {
		return fmt.Errorf("mark event %s delivered: %w", id, err)
	}
	return nil
}
