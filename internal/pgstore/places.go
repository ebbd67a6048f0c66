package pgstore

import (
	"fmt"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// The places of each actor in each workshop, for its limit per person
// (migrations 0017 and 0018): the table places_by_person counts the
// places of the actor's active reservations and waiting entries, kept by
// triggers in the transaction of every write of either table, and the
// partial index holds_open_by_person makes the actor's open holds of the
// workshop one short range, read at the time of the decision because a
// hold's deadline passes without a write. So a decision reads one row and
// a few index entries, however long the actor's history is.

// placesSQL reads the places of actor $2 in workshop $1 at $3: the
// counts (0 without a row) and the places of the open holds whose
// deadline is after $3.
const placesSQL = `SELECT coalesce(p.reserved, 0), coalesce(p.waiting, 0),
	(SELECT coalesce(sum(h.quantity), 0)::bigint FROM holds AS h
		WHERE h.state = 'held' AND h.workshop = $1 AND h.actor = $2 AND h.expires_at > $3)
FROM (VALUES (1)) AS one LEFT JOIN places_by_person AS p ON p.workshop = $1 AND p.actor = $2`

// PlacesOf reads the places of actor in workshop in one statement. In a
// group, the writes the decision has seen are sent first, so that the
// triggers have counted them.
func (t *tx) PlacesOf(workshop, actor string, now time.Time) (engine.Places, error) {
	if err := t.usable(); err != nil {
		return engine.Places{}, err
	}
	if err := t.direct(); err != nil {
		return engine.Places{}, err
	}
	var p engine.Places
	if err := t.tx.QueryRow(t.ctx, placesSQL, workshop, actor, now).Scan(&p.Reserved, &p.Waiting, &p.Held); err != nil {
		return engine.Places{}, t.fail(fmt.Errorf("read the places of %s in workshop %s: %w", actor, workshop, err))
	}
	return p, nil
}

// PlacesOf is a read the group cannot fetch ahead.
func (p *probeTx) PlacesOf(string, string, time.Time) (engine.Places, error) {
	return engine.Places{}, errProbe
}
