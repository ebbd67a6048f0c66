package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

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

// placesMismatchSQL compares places_by_person with what the rows of
// reservations and wait_entries add up to (the view places_of_rows, which
// filled it), and returns each (workshop, actor) where they differ: the
// counts stored (NULL without a row) and those of the rows (NULL when the
// rows have no places there).
const placesMismatchSQL = `SELECT coalesce(p.workshop, w.workshop), coalesce(p.actor, w.actor), p.reserved, p.waiting, w.reserved, w.waiting
FROM places_by_person AS p FULL JOIN places_of_rows AS w ON w.workshop = p.workshop AND w.actor = p.actor
WHERE p.reserved IS DISTINCT FROM w.reserved OR p.waiting IS DISTINCT FROM w.waiting
ORDER BY 1, 2`

// checkPlaces reports, as engine.FindingPlaces, every difference between
// places_by_person and the rows it counts: a count that differs from
// what the rows add up to, a row of the table where the rows have no
// places, and a missing row. (engine.Check sees the first and the last
// through PlacesOf; a row of the table for someone without records it
// does not ask about.)
func (s *Store) checkPlaces(ctx context.Context) ([]engine.Finding, error) {
	var findings []engine.Finding
	err := s.View(ctx, func(etx engine.Tx) error {
		t := etx.(*tx)
		findings = findings[:0]
		if err := t.usable(); err != nil {
			return err
		}
		if err := t.direct(); err != nil {
			return err
		}
		rows, err := t.tx.Query(t.ctx, placesMismatchSQL)
		if err != nil {
			return t.fail(fmt.Errorf("compare places_by_person with the rows: %w", err))
		}
		type count struct{ reserved, waiting *int64 }
		var workshop, actor string
		var got, want count
		_, err = pgx.ForEachRow(rows, []any{&workshop, &actor, &got.reserved, &got.waiting, &want.reserved, &want.waiting}, func() error {
			var detail string
			switch {
			case got.reserved == nil:
				detail = fmt.Sprintf("places_by_person lacks (%q, %q), whose rows add up to %d reserved and %d waiting", workshop, actor, *want.reserved, *want.waiting)
			case want.reserved == nil:
				detail = fmt.Sprintf("places_by_person (%q, %q) counts %d reserved and %d waiting, but the rows have no places there", workshop, actor, *got.reserved, *got.waiting)
			default:
				detail = fmt.Sprintf("places_by_person (%q, %q) counts %d reserved and %d waiting, but the rows add up to %d and %d", workshop, actor, *got.reserved, *got.waiting, *want.reserved, *want.waiting)
			}
			findings = append(findings, engine.Finding{Kind: engine.FindingPlaces, Detail: detail})
			return nil
		})
		if err != nil {
			return t.fail(fmt.Errorf("compare places_by_person with the rows: %w", err))
		}
		return nil
	})
	return findings, err
}
