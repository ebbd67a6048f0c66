package pgstore

import (
	"fmt"
	"strings"

	"github.com/reserve/reserve/internal/engine"
)

// The entries of waiting lists (migration 0016).
//
// Every change to the entries of a workshop, and to its offers, is made
// under the lock of the workshop's row: a decision that frees places or
// joins the list has locked it (Workshop), settling an offer locks it
// before the hold (Hold), and WaitEntry locks it before the entry. So the
// decisions about one waiting list follow one another, also across
// daemons, and each sees what the one before it committed: a freed place
// is offered once. The scans of a workshop's entries read the rows as
// committed (READ COMMITTED) under that lock, and lock none.

// waitEntries keeps the entries, keyed by id, with the indexes
// wait_entries_waiting (the queue of each workshop), wait_entries_by_workshop
// and wait_entries_by_actor. An entry's position is not stored.
var waitEntries = table[engine.WaitEntry]{
	name: "wait_entries",
	columns: []string{"id", "actor", "operation_key", "workshop", "quantity", "state", "hold_id", "offer_expires_at",
		"created_at", "settled_at"},
	keys: 1,
	values: func(e engine.WaitEntry) []any {
		return []any{e.ID, e.Actor, string(e.OperationKey), e.Workshop, e.Quantity, string(e.State), nullString(e.HoldID),
			nullTime(e.OfferExpiresAt), e.CreatedAt, nullTime(e.SettledAt)}
	},
	dests: func(e *engine.WaitEntry) []any {
		return []any{&e.ID, &e.Actor, &e.OperationKey, &e.Workshop, &e.Quantity, &e.State, emptyIfNull{&e.HoldID},
			zeroIfNull{&e.OfferExpiresAt}, &e.CreatedAt, zeroIfNull{&e.SettledAt}}
	},
}

// WaitEntry reads an entry; inside Update it first locks the row of the
// entry's workshop, as Hold does for a hold's, and then the entry's: the
// entry is read as the last decision about its workshop left it, and a
// leaving, which reads its entry before the workshop, takes the locks in
// the order of every other decision about the list.
func (t *tx) WaitEntry(id string) (engine.WaitEntry, bool, error) {
	return getOfWorkshop(t, waitEntries, id)
}

// PutWaitEntry stores every field but Position, which is a view's.
func (t *tx) PutWaitEntry(e engine.WaitEntry) error { return put(t, waitEntries, e) }

// ForEachWaitingEntry pages through the partial index wait_entries_waiting.
func (t *tx) ForEachWaitingEntry(workshop string, fn func(engine.WaitEntry) error) error {
	return entriesOfWorkshop(t, "waiting", workshop, "", fn)
}

// ForEachWaitEntryIn pages through the index wait_entries_by_workshop.
func (t *tx) ForEachWaitEntryIn(workshop, after string, fn func(engine.WaitEntry) error) error {
	return entriesOfWorkshop(t, "", workshop, after, fn)
}

// entriesOfWorkshop calls fn for the entries of workshop whose id is above
// after, in state if it is not "", in id order, a page at a time (see
// paged).
func entriesOfWorkshop(t *tx, state engine.WaitState, workshop, after string, fn func(engine.WaitEntry) error) error {
	what := "in " + workshop
	if state != "" {
		what = string(state) + " " + what
	}
	return paged(t, waitEntries, what, func(e engine.WaitEntry) string { return e.ID }, func(p *string, limit int) (string, []any) {
		if p == nil {
			p = &after
		}
		return entriesInSQL(state, limit), []any{workshop, *p, aboveEveryID}
	}, fn)
}

// entriesInSQL reads the next page of the entries of workshop $1 (in
// state, when it is not "", which must be "waiting": the condition of the
// partial index wait_entries_waiting) whose id is above $2, in id order
// ($3 is aboveEveryID). The workshop's range is bounded by row
// comparisons on (workshop, id) only, for the reason newestOfSQL gives.
func entriesInSQL(state engine.WaitState, limit int) string {
	where := "(workshop, id) > ($1, $2) AND (workshop, id) < ($1, $3)"
	if state != "" {
		where = fmt.Sprintf("state = '%s' AND %s", state, where)
	}
	return fmt.Sprintf("SELECT %s FROM wait_entries WHERE %s ORDER BY workshop, id LIMIT %d",
		strings.Join(waitEntries.columns, ", "), where, limit)
}

// ForEachWaitEntryOf pages through the index wait_entries_by_actor.
func (t *tx) ForEachWaitEntryOf(actor, before string, fn func(engine.WaitEntry) error) error {
	return newestOf(t, waitEntries, actor, before, func(e engine.WaitEntry) string { return e.ID }, fn)
}

func (t *tx) ForEachWaitEntry(fn func(engine.WaitEntry) error) error {
	return forEach(t, waitEntries, fn)
}

// WaitEntry names a row to read ahead: leaving a waiting list looks up
// its entry first. A group locks the entry's workshop before it, as it
// does a hold's (see lockedWorkshops).
func (p *probeTx) WaitEntry(id string) (engine.WaitEntry, bool, error) {
	p.w.add(waitEntries.name, id)
	return engine.WaitEntry{}, false, nil
}

func (p *probeTx) PutWaitEntry(engine.WaitEntry) error { return nil }
func (p *probeTx) ForEachWaitingEntry(string, func(engine.WaitEntry) error) error {
	return errProbe
}
func (p *probeTx) ForEachWaitEntryIn(string, string, func(engine.WaitEntry) error) error {
	return errProbe
}
func (p *probeTx) ForEachWaitEntryOf(string, string, func(engine.WaitEntry) error) error {
	return errProbe
}
func (p *probeTx) ForEachWaitEntry(func(engine.WaitEntry) error) error { return errProbe }
