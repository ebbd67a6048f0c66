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
)

// Event is one confirmation in the outbox: written in the same transaction
// as the reservation or cancellation it confirms, delivered by the daemon's
// dispatcher afterwards (at least once, always under the same ID, so that a
// receiver that deduplicates by ID sees it exactly once), and marked
// delivered in a later transaction. Payload is the JSON body that is
// delivered; the engine builds it from the event's members with
// BuildPayload, so a store may keep the members and build it again
// (Owner, Workshop and Quantity are there for that and are empty in events
// read from stores that keep the payload).
type Event struct {
	ID            string       `json:"id"`
	Type          string       `json:"type"`
	ReservationID string       `json:"reservation_id"`
	Actor         string       `json:"actor"`
	OperationKey  OperationKey `json:"operation"`
	Payload       []byte       `json:"payload"`
	CreatedAt     time.Time    `json:"created_at"`
	DeliveredAt   time.Time    `json:"delivered_at,omitzero"`
	Owner         string       `json:"owner,omitempty"`
	Workshop      string       `json:"workshop,omitempty"`
	Quantity      int          `json:"quantity,omitempty"`
}

// Delivered reports whether the event was marked delivered.
func (e Event) Delivered() bool { return !e.DeliveredAt.IsZero() }

// EventPayload is the JSON body of a delivered event.
type EventPayload struct {
	ID            string       `json:"id"`
	Type          string       `json:"type"`
	ReservationID string       `json:"reservation_id"`
	Owner         string       `json:"owner"`
	Actor         string       `json:"actor"`
	Operation     OperationKey `json:"operation"`
	Workshop      string       `json:"workshop"`
	Quantity      int          `json:"quantity"`
	At            time.Time    `json:"at"`
}

// BuildPayload returns the JSON body delivered for e, built from its
// members: the bytes the engine stores as Payload when it adds an event.
func (e Event) BuildPayload() ([]byte, error) {
	return EventPayload{
		ID: e.ID, Type: e.Type, ReservationID: e.ReservationID, Owner: e.Owner, Actor: e.Actor,
		Operation: e.OperationKey, Workshop: e.Workshop, Quantity: e.Quantity, At: e.CreatedAt,
	}.appendJSON(make([]byte, 0, 320))
}

// addEvent writes the confirmation event id of type typ for res, caused by
// actor's operation key, into the outbox of tx.
func addEvent(tx Tx, id, typ string, res Reservation, actor string, key OperationKey, now time.Time) error {
	ev := Event{ID: id, Type: typ, ReservationID: res.ID, Actor: actor, OperationKey: key, CreatedAt: now,
		Owner: res.Actor, Workshop: res.Workshop, Quantity: res.Quantity}
	var err error
	if ev.Payload, err = ev.BuildPayload(); err != nil {
		return fmt.Errorf("encode event %s: %w", id, err)
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
