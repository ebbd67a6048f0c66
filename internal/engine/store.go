package engine

import (
	"context"
	"time"
)

// Store is a transactional home for workshops, reservations and receipts.
// Adapters (boltstore, and any later one) implement it with primitive reads
// and writes only; every decision is the Engine's.
type Store interface {
	// Update runs fn in one serializable read-write transaction and commits
	// durably if fn returns nil, or rolls back everything fn wrote if it
	// returns an error, which Update then returns. A store may run fn more
	// than once (to batch commits or to retry a serialization failure), so fn
	// must have no effects outside tx. Once fn has been handed to the store,
	// Update waits for the commit even if ctx is cancelled, so a caller never
	// mistakes a committed write for a failed one.
	Update(ctx context.Context, fn func(tx Tx) error) error
	// View runs fn in a read-only transaction that sees one consistent
	// snapshot. Writes inside fn fail.
	View(ctx context.Context, fn func(tx Tx) error) error
	// Close releases the store.
	Close() error
}

// Tx is the narrow set of primitives a store provides inside a transaction.
// Lookups report absence with ok == false and a nil error.
type Tx interface {
	Workshop(id string) (w Workshop, ok bool, err error)
	PutWorkshop(w Workshop) error
	Reservation(id string) (r Reservation, ok bool, err error)
	PutReservation(r Reservation) error
	Receipt(actor string, key OperationKey) (r Receipt, ok bool, err error)
	PutReceipt(r Receipt) error
	Token(hash string) (t TokenRecord, ok bool, err error)
	PutToken(t TokenRecord) error
	DeleteToken(hash string) error
	// ForEachToken visits every credential record (hashes only) in key
	// order, for tools that copy a whole store.
	ForEachToken(fn func(TokenRecord) error) error
	// APIToken reads the API token whose TokenID is id, and
	// ForEachAPIToken visits every API token (no login code or session)
	// in order of TokenID. Stores keep an index of API tokens by id, in
	// step with PutToken and DeleteToken, so that both cost what they
	// read, however many sessions are stored beside the tokens.
	APIToken(id string) (t TokenRecord, ok bool, err error)
	ForEachAPIToken(fn func(TokenRecord) error) error

	// ForEachWorkshop, ForEachReservation and ForEachReceipt visit every
	// record until fn returns an error, which they return: in the order
	// the store keeps them, which no caller may rely on.
	ForEachWorkshop(fn func(Workshop) error) error
	ForEachReservation(fn func(Reservation) error) error
	ForEachReceipt(fn func(Receipt) error) error

	// DeleteReceipt removes the receipt of (actor, key), if any; the
	// retention janitor calls it after writing the receipt's tombstone.
	DeleteReceipt(actor string, key OperationKey) error
	// Tombstone and PutTombstone read and write the compact record that
	// replaces an expired receipt; ForEachTombstone visits them in key
	// order.
	Tombstone(actor string, key OperationKey) (t Tombstone, ok bool, err error)
	PutTombstone(t Tombstone) error
	ForEachTombstone(fn func(Tombstone) error) error

	// The time-ordered scans visit receipts and tombstones by CreatedAt,
	// through an index the store keeps up to date in PutReceipt,
	// DeleteReceipt and PutTombstone, so that a scan costs what it visits,
	// not what the store holds. Each stops at the first error fn returns,
	// and returns it; fn must not write to the transaction.
	//
	// ForEachReceiptCreatedBefore visits the receipts created before t,
	// oldest first (ties in any order).
	ForEachReceiptCreatedBefore(t time.Time, fn func(Receipt) error) error
	// ForEachReceiptNewestFirst and ForEachTombstoneNewestFirst visit the
	// records in the order of TimePosition.Before, newest first, from the
	// one at from on (every record when from is the zero position).
	ForEachReceiptNewestFirst(from TimePosition, fn func(Receipt) error) error
	ForEachTombstoneNewestFirst(from TimePosition, fn func(Tombstone) error) error

	// AddEvent inserts a new outbox event and fails if its id exists.
	// MarkEventDelivered records when an existing event was delivered,
	// which takes it out of ForEachPendingEvent. Event reads one event;
	// ForEachEvent visits every event and ForEachPendingEvent every
	// undelivered one for the simple channels (Event.ForSimpleChannels),
	// both in id order.
	AddEvent(e Event) error
	MarkEventDelivered(id string, at time.Time) error
	Event(id string) (e Event, ok bool, err error)
	ForEachEvent(fn func(Event) error) error
	ForEachPendingEvent(fn func(Event) error) error

	// Hold reads one hold and PutHold writes one (inserting or replacing
	// it); ForEachHold visits every hold in id order. ForEachOpenHold
	// visits the open holds (stored as held) of workshop whose deadline is
	// at or before through, in order of deadline then id, through an index
	// the store keeps of open holds, so its cost is the number of holds it
	// visits; PutHold keeps that index in step with the hold's state.
	Hold(id string) (h Hold, ok bool, err error)
	PutHold(h Hold) error
	ForEachHold(fn func(Hold) error) error
	ForEachOpenHold(workshop string, through time.Time, fn func(Hold) error) error

	// ForEachReservationOf and ForEachHoldOf visit the reservations and
	// holds of actor newest first (in descending order of id, which
	// starts with the creation time), those whose id is below before
	// when before is not "", until fn returns an error, which they
	// return. Stores keep an index by actor for them, so their cost is the
	// records they visit.
	ForEachReservationOf(actor, before string, fn func(Reservation) error) error
	ForEachHoldOf(actor, before string, fn func(Hold) error) error

	// ForEachReservationIn and ForEachHoldIn visit the reservations and
	// holds of workshop (in every state) in order of actor, then id, from
	// the first one after position after on (every one when after is the
	// zero position), until fn returns an error, which they return.
	// Stores keep an index by workshop and actor for them, so their cost
	// is the records they visit: one actor's records in a workshop start
	// right after the position {Actor: actor}.
	ForEachReservationIn(workshop string, after PersonPosition, fn func(Reservation) error) error
	ForEachHoldIn(workshop string, after PersonPosition, fn func(Hold) error) error
	// PlacesOf returns the places actor has in workshop at now, as a limit
	// per person counts them (Places). Stores keep what it needs in step
	// with PutReservation, PutHold and PutWaitEntry, so its cost does not
	// grow with actor's history: cancelled reservations, settled holds and
	// entries no longer waiting are not visited. CountPlaces is the same
	// answer found by scanning, for stores without such an index and for
	// checks.
	PlacesOf(workshop, actor string, now time.Time) (Places, error)
	// DeleteWorkshop removes workshop id, if it exists; its reservations,
	// holds and receipts stay.
	DeleteWorkshop(id string) error

	// HasReceiptsOf reports whether any receipt or tombstone is stored
	// under actor, reading at most one of each: whether the actor name has
	// a decided operation, so that binding it anew could answer another
	// subject's retry.
	HasReceiptsOf(actor string) (bool, error)

	// Binding reads the binding of the subject (kind, subject), and
	// BindingOfActor the binding that holds actor; a store keeps both
	// lookups cheap. AddBinding adds a new binding and fails if its
	// subject or its actor is bound already (a store may report that only
	// when the transaction commits): a binding is never changed or
	// removed. ForEachBinding visits every binding in order of kind, then
	// subject.
	Binding(kind, subject string) (b Binding, ok bool, err error)
	BindingOfActor(actor string) (b Binding, ok bool, err error)
	AddBinding(b Binding) error
	ForEachBinding(fn func(Binding) error) error

	// Profile reads the profile of actor, and PutProfile writes one
	// (inserting or replacing it, by its actor).
	Profile(actor string) (p Profile, ok bool, err error)
	PutProfile(p Profile) error
	// ForEachProfile visits every profile in order of actor, for tools
	// that copy a whole store.
	ForEachProfile(fn func(Profile) error) error

	// ForEachUnroutedEvent visits, in id order, the events whose
	// deliveries (webhooks, mail) are not made yet: AddEvent adds every
	// new event to them, and MarkEventRouted takes one out. Events stored
	// before a store kept this are routed. Stores keep an index of them,
	// so a scan costs what it visits. Inside a write transaction of a
	// store with row locks (PostgreSQL), it visits only the events it
	// could lock, skipping those another transaction is routing.
	ForEachUnroutedEvent(fn func(Event) error) error
	MarkEventRouted(id string) error

	// WebhookEndpoint reads one endpoint, PutWebhookEndpoint writes one
	// (inserting or replacing it, by its id), DeleteWebhookEndpoint
	// removes one if it exists, and ForEachWebhookEndpoint visits every
	// endpoint in id order.
	WebhookEndpoint(id string) (w WebhookEndpoint, ok bool, err error)
	PutWebhookEndpoint(w WebhookEndpoint) error
	DeleteWebhookEndpoint(id string) error
	ForEachWebhookEndpoint(fn func(WebhookEndpoint) error) error

	// Delivery reads one delivery and PutDelivery writes one (inserting
	// or replacing it, by its id), keeping two indexes in step with it:
	// by state then id, and of pending deliveries by NextAttemptAt then
	// id. Times are kept to the microsecond at least.
	// ForEachDueDelivery visits the pending deliveries whose
	// NextAttemptAt is at or before through, in order of NextAttemptAt
	// then id (inside a write transaction of a store with row locks,
	// only those it could lock). ForEachDeliveryIn visits the deliveries
	// in state with an id above after (every one when after is ""), in id
	// order. Both cost what they visit.
	Delivery(id string) (d Delivery, ok bool, err error)
	PutDelivery(d Delivery) error
	ForEachDueDelivery(through time.Time, fn func(Delivery) error) error
	ForEachDeliveryIn(state DeliveryState, after string, fn func(Delivery) error) error

	// WaitEntry reads one waiting list entry and PutWaitEntry writes one
	// (inserting or replacing it, by its id), keeping three indexes in
	// step with it: of the waiting entries (State WaitWaiting) by
	// workshop then id, of every entry by workshop then id, and by actor
	// then id. Each scan below costs what it visits, and each stops at
	// the first error fn returns, and returns it.
	// ForEachWaitingEntry visits the waiting entries of workshop in
	// order of id (the order they joined). ForEachWaitEntryIn visits
	// every entry of workshop with an id above after (every one when
	// after is ""), in order of id. ForEachWaitEntryOf visits the entries
	// of actor newest first (descending id), those below before when
	// before is not "". ForEachWaitEntry visits every entry in id order,
	// for tools that check or copy a whole store.
	WaitEntry(id string) (e WaitEntry, ok bool, err error)
	PutWaitEntry(e WaitEntry) error
	ForEachWaitingEntry(workshop string, fn func(WaitEntry) error) error
	ForEachWaitEntryIn(workshop, after string, fn func(WaitEntry) error) error
	ForEachWaitEntryOf(actor, before string, fn func(WaitEntry) error) error
	ForEachWaitEntry(fn func(WaitEntry) error) error
}
