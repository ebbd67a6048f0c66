// Package migrate copies every record of one engine.Store into another,
// empty one: workshops with their counters, reservations (cancelled ones
// too), holds, receipts, tombstones, credentials (hashes only), outbox events
// with their delivery marks and whether they were routed, the bindings of
// subjects to actors, profiles, webhook endpoints (with their signing
// secrets), deliveries in every state and the entries of waiting lists in
// every state (a workshop's count of people waiting, an offer's entry and
// the entry and position an answer names move with their records).
// Because the receipts move with the reservations, and every subject keeps
// its actor, every operation key recorded before the move replays its
// original answer after it, also for a socket peer whose user name
// changed. It works on any two stores and must not import a particular
// store or front end.
package migrate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// Counts says how many records of each kind were copied.
type Counts struct {
	Workshops    int `json:"workshops"`
	Reservations int `json:"reservations"`
	Receipts     int `json:"receipts"`
	Tombstones   int `json:"tombstones"`
	Tokens       int `json:"tokens"`
	Events       int `json:"events"`
	Holds        int `json:"holds"`
	Bindings     int `json:"bindings"`
	Profiles     int `json:"profiles"`
	Webhooks     int `json:"webhook_endpoints"`
	Deliveries   int `json:"deliveries"`
	WaitEntries  int `json:"wait_entries"`
}

func (c Counts) String() string {
	return fmt.Sprintf("%d workshops, %d reservations, %d holds, %d receipts, %d tombstones, %d credentials, %d events, %d bindings",
		c.Workshops, c.Reservations, c.Holds, c.Receipts, c.Tombstones, c.Tokens, c.Events, c.Bindings)
}

// ErrNotEmpty is returned (wrapped, naming what was found) when the target
// store already holds records; nothing is written then.
var ErrNotEmpty = errors.New("the target database is not empty")

// Copy copies everything in from into to, reading one consistent snapshot of
// from and writing in one transaction of to, so the copy is complete or
// absent. It refuses a target that holds any record.
func Copy(ctx context.Context, from, to engine.Store) (Counts, error) {
	var c Counts
	err := from.View(ctx, func(src engine.Tx) error {
		return to.Update(ctx, func(dst engine.Tx) error {
			c = Counts{} // The target may run this function more than once.
			if err := mustBeEmpty(dst); err != nil {
				return err
			}
			return copyAll(src, dst, &c)
		})
	})
	if err != nil {
		return Counts{}, fmt.Errorf("migrate: %w", err)
	}
	return c, nil
}

func copyAll(src, dst engine.Tx, c *Counts) error {
	steps := []struct {
		what string
		run  func() error
	}{
		{"workshops", func() error {
			return src.ForEachWorkshop(func(w engine.Workshop) error { c.Workshops++; return dst.PutWorkshop(w) })
		}},
		{"reservations", func() error {
			return src.ForEachReservation(func(r engine.Reservation) error { c.Reservations++; return dst.PutReservation(r) })
		}},
		{"holds", func() error {
			return src.ForEachHold(func(h engine.Hold) error { c.Holds++; return dst.PutHold(h) })
		}},
		{"waiting list entries", func() error {
			return src.ForEachWaitEntry(func(e engine.WaitEntry) error { c.WaitEntries++; return dst.PutWaitEntry(e) })
		}},
		{"receipts", func() error {
			return src.ForEachReceipt(func(r engine.Receipt) error { c.Receipts++; return dst.PutReceipt(r) })
		}},
		{"tombstones", func() error {
			return src.ForEachTombstone(func(t engine.Tombstone) error { c.Tombstones++; return dst.PutTombstone(t) })
		}},
		{"credentials", func() error {
			return src.ForEachToken(func(t engine.TokenRecord) error { c.Tokens++; return dst.PutToken(t) })
		}},
		{"events", func() error {
			unrouted, err := unroutedEvents(src)
			if err != nil {
				return err
			}
			return src.ForEachEvent(func(e engine.Event) error {
				c.Events++
				delivered := e.DeliveredAt
				e.DeliveredAt = time.Time{}
				if err := dst.AddEvent(e); err != nil {
					return err
				}
				if !unrouted[e.ID] {
					if err := dst.MarkEventRouted(e.ID); err != nil {
						return err
					}
				}
				if delivered.IsZero() {
					return nil
				}
				return dst.MarkEventDelivered(e.ID, delivered)
			})
		}},
		{"bindings", func() error {
			return src.ForEachBinding(func(b engine.Binding) error { c.Bindings++; return dst.AddBinding(b) })
		}},
		{"profiles", func() error {
			return src.ForEachProfile(func(p engine.Profile) error { c.Profiles++; return dst.PutProfile(p) })
		}},
		{"webhook endpoints", func() error {
			return src.ForEachWebhookEndpoint(func(w engine.WebhookEndpoint) error { c.Webhooks++; return dst.PutWebhookEndpoint(w) })
		}},
		{"deliveries", func() error {
			for _, state := range engine.DeliveryStates {
				err := src.ForEachDeliveryIn(state, "", func(d engine.Delivery) error { c.Deliveries++; return dst.PutDelivery(d) })
				if err != nil {
					return err
				}
			}
			return nil
		}},
	}
	for _, s := range steps {
		if err := s.run(); err != nil {
			return fmt.Errorf("copy %s: %w", s.what, err)
		}
	}
	return nil
}

// unroutedEvents returns the ids of the events of src that are not routed
// yet: every other event is marked routed in the target, so that it is
// not sent to webhook endpoints or by mail a second time.
func unroutedEvents(src engine.Tx) (map[string]bool, error) {
	ids := map[string]bool{}
	err := src.ForEachUnroutedEvent(func(e engine.Event) error { ids[e.ID] = true; return nil })
	if err != nil {
		return nil, fmt.Errorf("read unrouted events: %w", err)
	}
	return ids, nil
}

// errFound stops a scan at the first record.
var errFound = errors.New("found a record")

// mustBeEmpty returns ErrNotEmpty, naming the first kind of record found, if
// tx holds any record.
func mustBeEmpty(tx engine.Tx) error {
	scans := []struct {
		what string
		scan func() error
	}{
		{"workshops", func() error { return tx.ForEachWorkshop(func(engine.Workshop) error { return errFound }) }},
		{"reservations", func() error { return tx.ForEachReservation(func(engine.Reservation) error { return errFound }) }},
		{"holds", func() error { return tx.ForEachHold(func(engine.Hold) error { return errFound }) }},
		{"waiting list entries", func() error { return tx.ForEachWaitEntry(func(engine.WaitEntry) error { return errFound }) }},
		{"receipts", func() error { return tx.ForEachReceipt(func(engine.Receipt) error { return errFound }) }},
		{"tombstones", func() error { return tx.ForEachTombstone(func(engine.Tombstone) error { return errFound }) }},
		{"credentials", func() error { return tx.ForEachToken(func(engine.TokenRecord) error { return errFound }) }},
		{"events", func() error { return tx.ForEachEvent(func(engine.Event) error { return errFound }) }},
		{"bindings", func() error { return tx.ForEachBinding(func(engine.Binding) error { return errFound }) }},
		{"profiles", func() error { return tx.ForEachProfile(func(engine.Profile) error { return errFound }) }},
		{"webhook endpoints", func() error {
			return tx.ForEachWebhookEndpoint(func(engine.WebhookEndpoint) error { return errFound })
		}},
		{"deliveries", func() error {
			for _, state := range engine.DeliveryStates {
				if err := tx.ForEachDeliveryIn(state, "", func(engine.Delivery) error { return errFound }); err != nil {
					return err
				}
			}
			return nil
		}},
	}
	for _, s := range scans {
		switch err := s.scan(); {
		case errors.Is(err, errFound):
			return fmt.Errorf("%w: it holds %s; migrate only into a new, empty database", ErrNotEmpty, s.what)
		case err != nil:
			return fmt.Errorf("look for %s in the target: %w", s.what, err)
		}
	}
	return nil
}
