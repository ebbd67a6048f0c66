package pgstore

import (
	"fmt"
	"strings"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// The routing of events and the deliveries they make (migrations 0014 and
// 0015).
//
// Several daemons on one database route and send at once: inside a write
// transaction, the scans of unrouted events and of due deliveries lock the
// rows they return with FOR UPDATE SKIP LOCKED, so that a row another
// transaction is routing or claiming is skipped rather than waited for,
// and PostgreSQL checks the scan's condition again on a row that changed
// before it was locked, so that an event routed (or a delivery claimed)
// meanwhile is not returned. Each event is thus routed by one transaction,
// and each due delivery claimed by one.

// webhookEndpoints keeps the webhook endpoints, keyed by id.
var webhookEndpoints = table[engine.WebhookEndpoint]{
	name:    "webhook_endpoints",
	columns: []string{"id", "url", "event_types", "secret", "created_at", "created_by"},
	keys:    1,
	values: func(w engine.WebhookEndpoint) []any {
		types := w.EventTypes
		if types == nil {
			types = []string{} // Every type; the column is NOT NULL.
		}
		return []any{w.ID, w.URL, types, w.Secret, w.CreatedAt, w.CreatedBy}
	},
	dests: func(w *engine.WebhookEndpoint) []any {
		return []any{&w.ID, &w.URL, &w.EventTypes, &w.Secret, &w.CreatedAt, &w.CreatedBy}
	},
}

// deliveries keeps the deliveries, keyed by id, with the indexes
// deliveries_by_state and deliveries_due, which PostgreSQL keeps in step
// with every write.
var deliveries = table[engine.Delivery]{
	name: "deliveries",
	columns: []string{"id", "event_id", "event_type", "channel", "endpoint", "recipient", "state", "attempts",
		"created_at", "since", "next_attempt_at", "last_attempt_at", "last_status", "last_error", "done_at"},
	keys: 1,
	values: func(d engine.Delivery) []any {
		return []any{d.ID, d.EventID, d.EventType, d.Channel, nullString(d.Endpoint), nullString(d.Recipient), string(d.State), d.Attempts,
			d.CreatedAt, d.Since, nullTime(d.NextAttemptAt), nullTime(d.LastAttemptAt), d.LastStatus, nullString(d.LastError), nullTime(d.DoneAt)}
	},
	dests: func(d *engine.Delivery) []any {
		return []any{&d.ID, &d.EventID, &d.EventType, &d.Channel, emptyIfNull{&d.Endpoint}, emptyIfNull{&d.Recipient}, &d.State, &d.Attempts,
			&d.CreatedAt, &d.Since, zeroIfNull{&d.NextAttemptAt}, zeroIfNull{&d.LastAttemptAt}, &d.LastStatus, emptyIfNull{&d.LastError}, zeroIfNull{&d.DoneAt}}
	},
}

// claimRows is the suffix of the scans whose rows a write transaction
// takes for itself: FOR UPDATE SKIP LOCKED, so that a row that another
// transaction holds is skipped instead of waited for.
func (t *tx) claimRows() string {
	if t.write {
		return " FOR UPDATE SKIP LOCKED"
	}
	return ""
}

// ForEachUnroutedEvent pages through the partial index events_unrouted.
func (t *tx) ForEachUnroutedEvent(fn func(engine.Event) error) error {
	lock := t.claimRows()
	return paged(t, events, "unrouted", func(e engine.Event) string { return e.ID }, func(p *string, limit int) (string, []any) {
		if p == nil {
			return unroutedSQL(false, limit, lock), nil
		}
		return unroutedSQL(true, limit, lock), []any{*p}
	}, fn)
}

// unroutedSQL reads the next page of unrouted events in id order: after
// the first page, those after the id $1; lock is claimRows.
func unroutedSQL(after bool, limit int, lock string) string {
	where := "NOT routed"
	if after {
		where += " AND id > $1"
	}
	return fmt.Sprintf("SELECT %s FROM events WHERE %s ORDER BY id LIMIT %d%s", strings.Join(events.columns, ", "), where, limit, lock)
}

// markRoutedSQL marks event $1 routed and fails (with division_by_zero) if
// it does not exist.
const markRoutedSQL = "WITH marked AS (UPDATE events SET routed = true WHERE id = $1 RETURNING 1) SELECT 1 / count(*)::int FROM marked"

// MarkEventRouted fails if the event does not exist. In a group the update
// is sent with the decision's other writes: no read of the group sees the
// routed column but the scan of unrouted events, which sends every
// pending write first.
func (t *tx) MarkEventRouted(id string) error {
	what := fmt.Sprintf("mark event %q routed (it must exist)", id)
	if t.m == nil || !t.write {
		return t.exec(what, markRoutedSQL, id)
	}
	if err := t.usable(); err != nil {
		return err
	}
	t.m.writes = append(t.m.writes, stmt{sql: markRoutedSQL, args: []any{id}, what: what, owner: t.m})
	return nil
}

func (t *tx) WebhookEndpoint(id string) (engine.WebhookEndpoint, bool, error) {
	return get(t, webhookEndpoints, "", id)
}

// PutWebhookEndpoint fails with a unique violation when another endpoint
// has the URL (one that a concurrent transaction added): Update then runs
// its function again, which finds that endpoint.
func (t *tx) PutWebhookEndpoint(w engine.WebhookEndpoint) error {
	return put(t, webhookEndpoints, w)
}

func (t *tx) DeleteWebhookEndpoint(id string) error { return deleteRow(t, webhookEndpoints, id) }

func (t *tx) ForEachWebhookEndpoint(fn func(engine.WebhookEndpoint) error) error {
	return forEach(t, webhookEndpoints, fn)
}

// Delivery locks the row in a write transaction, so that two transactions
// deciding about one delivery (its sender's report and an operator's
// correction, say) cannot both see it as it was: the second waits and then
// reads what the first decided.
func (t *tx) Delivery(id string) (engine.Delivery, bool, error) {
	return get(t, deliveries, t.lockRead(), id)
}

func (t *tx) PutDelivery(d engine.Delivery) error { return put(t, deliveries, d) }

// ForEachDueDelivery pages through the partial index deliveries_due.
func (t *tx) ForEachDueDelivery(through time.Time, fn func(engine.Delivery) error) error {
	type position struct {
		at time.Time
		id string
	}
	lock := t.claimRows()
	return paged(t, deliveries, "due", func(d engine.Delivery) position { return position{d.NextAttemptAt, d.ID} },
		func(p *position, limit int) (string, []any) {
			if p == nil {
				return dueSQL(false, limit, lock), []any{through}
			}
			return dueSQL(true, limit, lock), []any{through, p.at, p.id}
		}, fn)
}

// dueSQL reads the next page of the pending deliveries due at $1, in order
// of due time and id: after the first page, those after the one at ($2,
// $3); lock is claimRows.
func dueSQL(after bool, limit int, lock string) string {
	where := "state = 'pending' AND next_attempt_at <= $1"
	if after {
		where += " AND (next_attempt_at, id) > ($2, $3)"
	}
	return fmt.Sprintf("SELECT %s FROM deliveries WHERE %s ORDER BY next_attempt_at, id LIMIT %d%s",
		strings.Join(deliveries.columns, ", "), where, limit, lock)
}

// ForEachDeliveryIn pages through the index deliveries_by_state.
func (t *tx) ForEachDeliveryIn(state engine.DeliveryState, after string, fn func(engine.Delivery) error) error {
	return paged(t, deliveries, "in "+string(state), func(d engine.Delivery) string { return d.ID }, func(p *string, limit int) (string, []any) {
		if p == nil {
			p = &after
		}
		return inStateSQL(limit), []any{string(state), *p, aboveEveryID}
	}, fn)
}

// inStateSQL reads the next page of the deliveries in state $1 whose id is
// above $2, in id order ($3 is aboveEveryID). The state's range is bounded
// by row comparisons on (state, id) only, for the reason newestOfSQL
// gives: an equality on the state could let a generic plan read the
// primary key's order of ids and filter the state's rows.
func inStateSQL(limit int) string {
	return fmt.Sprintf("SELECT %s FROM deliveries WHERE (state, id) > ($1, $2) AND (state, id) < ($1, $3) ORDER BY state, id LIMIT %d",
		strings.Join(deliveries.columns, ", "), limit)
}

// Delivery names a row to read ahead: an operator's correction and a
// sender's report look up their delivery first.
func (p *probeTx) Delivery(id string) (engine.Delivery, bool, error) {
	p.w.add(deliveries.name, id)
	return engine.Delivery{}, false, nil
}

// WebhookEndpoint names no row to read ahead: endpoints change seldom.
func (p *probeTx) WebhookEndpoint(string) (engine.WebhookEndpoint, bool, error) {
	return engine.WebhookEndpoint{}, false, nil
}

func (p *probeTx) ForEachUnroutedEvent(func(engine.Event) error) error             { return errProbe }
func (p *probeTx) MarkEventRouted(string) error                                    { return nil }
func (p *probeTx) PutWebhookEndpoint(engine.WebhookEndpoint) error                 { return nil }
func (p *probeTx) DeleteWebhookEndpoint(string) error                              { return nil }
func (p *probeTx) ForEachWebhookEndpoint(func(engine.WebhookEndpoint) error) error { return errProbe }
func (p *probeTx) PutDelivery(engine.Delivery) error                               { return nil }
func (p *probeTx) ForEachDueDelivery(time.Time, func(engine.Delivery) error) error {
	return errProbe
}
func (p *probeTx) ForEachDeliveryIn(engine.DeliveryState, string, func(engine.Delivery) error) error {
	return errProbe
}
