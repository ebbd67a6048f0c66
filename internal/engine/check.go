package engine

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/reserve/reserve/internal/failpoint"
)

// Finding is one broken invariant found by Check.
type Finding struct {
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
}

func (f Finding) String() string { return f.Kind + ": " + f.Detail }

// The kinds of Finding.
const (
	FindingCounter          = "counter_mismatch"
	FindingOverCapacity     = "over_capacity"
	FindingOrphanReceipt    = "receipt_without_reservation"
	FindingOrphanReserve    = "reservation_without_receipt"
	FindingOrphanCancel     = "cancellation_without_receipt"
	FindingUnknownWorkshop  = "reservation_for_unknown_workshop"
	FindingMalformedReceipt = "malformed_receipt"
	FindingMissingEvent     = "effect_without_event"
	FindingOrphanEvent      = "event_without_effect"
	FindingHold             = "hold_mismatch"
	FindingTimeIndex        = "time_index_mismatch"
	FindingActorIndex       = "actor_index_mismatch"
	FindingBinding          = "binding_mismatch"
	FindingTokenIndex       = "token_index_mismatch"
	FindingWorkshopIndex    = "workshop_index_mismatch"
	FindingSchedule         = "schedule_invalid"
	FindingProfile          = "profile_invalid"
	FindingDelivery         = "delivery_mismatch"
	FindingPlaces           = "places_mismatch"
)

// answerRef is what Check needs of a receipt or of the tombstone that
// replaced it.
type answerRef struct {
	what   string // "receipt" or "tombstone", for messages.
	actor  string
	key    OperationKey
	kind   OperationKind
	answer Answer
}

// holdInfo is what Check keeps of a hold while it reads the rest: how many
// answers made, confirmed and released it.
type holdInfo struct {
	Hold
	made, confirmed, released int
}

// resInfo is what Check keeps of a reservation while it reads the rest.
type resInfo struct {
	Reservation
	receipts       int // Reserve answers naming it.
	cancelReceipts int // Cancel answers that cancelled it.
	reserveEvents  int
	cancelEvents   int
}

// Check reads the whole store in one consistent snapshot and reports every
// broken invariant: a workshop counter that differs from the sum of its
// active (not cancelled) reservations, reserved above capacity, a stored
// "reserved" answer without its reservation (same actor, key, workshop and quantity), a
// reservation without exactly one answer that names it, a cancelled
// reservation without exactly one cancellation answer (receipt or tombstone)
// by the actor and key that cancelled it, a cancellation answer that does not
// match its reservation, a reservation of an unknown workshop, receipts whose
// stored answer does not match their own request, and an outbox that does
// not hold exactly one confirmation event for every reservation and every
// cancellation and no other event, and time-ordered scans of receipts and
// tombstones that do not visit each record exactly once, in order. For
// holds it reports a holding counter that differs from the sum of its open
// holds, reserved and held (at the time of the check) above capacity, a
// hold not made by exactly one "held" answer of its owner and key, a
// confirmed hold without its reservation or without exactly one "reserved"
// confirmation, a released hold without exactly one "released" answer, any
// other hold that names a reservation, a hold confirmed or released at or
// after its deadline, and one cleaned up as expired before it. No findings
// means the store keeps the promise "one intent, one effect". It also
// reports bindings of subjects to actors that are not one to one: an actor
// bound to two subjects, a subject bound twice, a binding to a name that is
// not an actor name, and one that the lookup by actor does not find. It
// reports places of an actor in a workshop (Tx.PlacesOf) that differ from
// what its records add up to. The time of
// the check is the daemon's clock (the wall clock, or in a failpoint build
// the clock a reliability campaign moved).
func Check(ctx context.Context, store Store) ([]Finding, error) {
	return CheckAt(ctx, store, failpoint.Clock(time.Now)())
}

// CheckAt is Check with the clock at now, which decides which open holds
// are past their deadline.
func CheckAt(ctx context.Context, store Store, now time.Time) ([]Finding, error) {
	var findings []Finding
	add := func(kind, format string, args ...any) {
		findings = append(findings, Finding{Kind: kind, Detail: fmt.Sprintf(format, args...)})
	}
	err := store.View(ctx, func(tx Tx) error {
		findings = findings[:0]
		workshops := map[string]Workshop{}
		sums := map[string]int{}
		if err := tx.ForEachWorkshop(func(w Workshop) error {
			workshops[w.ID] = w
			if err := w.Schedule.Validate(); err != nil {
				add(FindingSchedule, "workshop %s has a schedule that is refused: %v", w.ID, err)
			}
			return nil
		}); err != nil {
			return err
		}
		reservations := map[string]*resInfo{}
		var order []string
		if err := tx.ForEachReservation(func(r Reservation) error {
			// A deleted workshop leaves its cancelled reservations and
			// settled holds behind; only an active one needs it.
			if _, ok := workshops[r.Workshop]; !ok && !r.Cancelled() {
				add(FindingUnknownWorkshop, "active reservation %s is for workshop %q, which does not exist", r.ID, r.Workshop)
			}
			if !r.Cancelled() {
				sums[r.Workshop] += r.Quantity
			}
			reservations[r.ID] = &resInfo{Reservation: r}
			order = append(order, r.ID)
			return nil
		}); err != nil {
			return err
		}
		holds := map[string]*holdInfo{}
		var holdOrder []string
		holding := map[string]int{}
		if err := tx.ForEachHold(func(h Hold) error {
			if _, ok := workshops[h.Workshop]; !ok && h.Open() {
				add(FindingUnknownWorkshop, "open hold %s is for workshop %q, which does not exist", h.ID, h.Workshop)
			}
			if h.Open() {
				holding[h.Workshop] += h.Quantity
			}
			holds[h.ID] = &holdInfo{Hold: h}
			holdOrder = append(holdOrder, h.ID)
			return nil
		}); err != nil {
			return err
		}
		entries, waiting, err := readEntries(tx, workshops, holds, add)
		if err != nil {
			return err
		}
		checkRef := func(a answerRef) {
			checkAnswerRef(a, reservations, holds, add)
			checkEntryRef(a, entries, add)
		}
		if err := tx.ForEachReceipt(func(rec Receipt) error {
			checkReceiptAnswer(rec, add)
			checkRef(answerRef{what: "receipt", actor: rec.Actor, key: rec.OperationKey, kind: rec.Kind(), answer: rec.AnswerOf(rec.Answer.Status)})
			return nil
		}); err != nil {
			return err
		}
		if err := tx.ForEachTombstone(func(t Tombstone) error {
			checkRef(answerRef{what: "tombstone", actor: t.Actor, key: t.OperationKey, kind: t.Kind(), answer: t.Answer})
			return nil
		}); err != nil {
			return err
		}
		if err := checkTimeOrder(tx, add); err != nil {
			return err
		}
		if err := checkActorIndexes(tx, reservations, holds, add); err != nil {
			return err
		}
		if err := checkBindings(tx, add); err != nil {
			return err
		}
		if err := tx.ForEachProfile(func(p Profile) error {
			if err := p.Validate(); err != nil {
				add(FindingProfile, "the profile of %s is refused: %v", p.Actor, err)
			}
			return nil
		}); err != nil {
			return err
		}
		events := map[string]string{} // The type of each event, by id.
		if err := tx.ForEachEvent(func(ev Event) error {
			events[ev.ID] = ev.Type
			checkEvent(ev, reservations, holds, add)
			return nil
		}); err != nil {
			return err
		}
		if err := checkDeliveries(tx, events, add); err != nil {
			return err
		}
		for _, id := range order {
			r := reservations[id]
			if r.receipts != 1 {
				add(FindingOrphanReserve, "reservation %s (%s, key %s) is named by %d receipts, not exactly one", id, r.Actor, r.OperationKey, r.receipts)
			}
			if r.reserveEvents != 1 {
				add(FindingMissingEvent, "reservation %s has %d %s events, not exactly one", id, r.reserveEvents, EventReserved)
			}
			wantCancel := 0
			if r.Cancelled() {
				wantCancel = 1
				if r.cancelReceipts != 1 {
					add(FindingOrphanCancel, "reservation %s was cancelled by %s with key %s, which has %d cancellation receipts, not exactly one", id, r.CancelledBy, r.CancelOperation, r.cancelReceipts)
				}
			}
			if r.cancelEvents != wantCancel {
				add(FindingMissingEvent, "reservation %s (cancelled: %v) has %d %s events, want %d", id, r.Cancelled(), r.cancelEvents, EventCancelled, wantCancel)
			}
		}
		for _, id := range holdOrder {
			checkHold(holds[id], reservations, add)
		}
		if err := checkWaitlists(tx, workshops, entries, waiting, add); err != nil {
			return err
		}
		if err := checkPlaces(tx, now, reservations, holds, entries, add); err != nil {
			return err
		}
		for id, w := range workshops {
			if w.Reserved != sums[id] {
				add(FindingCounter, "workshop %q counts %d reserved, but its active reservations sum to %d", id, w.Reserved, sums[id])
			}
			if err := checkOpenHoldIndex(tx, w, holds, add); err != nil {
				return err
			}
			if w.Holding != holding[id] {
				add(FindingCounter, "workshop %q counts %d places in open holds, but its open holds sum to %d", id, w.Holding, holding[id])
				continue
			}
			held, err := heldAt(tx, w, now)
			if err != nil {
				return err
			}
			if w.Reserved+held > w.Capacity {
				add(FindingOverCapacity, "workshop %q has %d reserved and %d held, above its capacity %d", id, w.Reserved, held, w.Capacity)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	return findings, nil
}

// checkAnswerRef matches a receipt or tombstone with the reservation it
// names and counts it there.
func checkAnswerRef(a answerRef, reservations map[string]*resInfo, holds map[string]*holdInfo, add func(kind, format string, args ...any)) {
	id := a.answer.ReservationID
	if a.answer.HoldID != "" {
		checkHoldRef(a, holds, add)
	}
	switch {
	case (a.kind == OperationReserve || a.kind == OperationConfirm) && a.answer.Status == StatusReserved:
		r, ok := reservations[id]
		if !ok {
			add(FindingOrphanReceipt, "%s %s of %s answers %s with reservation %s, which does not exist", a.what, a.key, a.actor, StatusReserved, id)
			return
		}
		if r.Actor != a.actor || r.OperationKey != a.key || r.Workshop != a.answer.Workshop || r.Quantity != a.answer.Quantity {
			add(FindingOrphanReceipt, "%s %s of %s names reservation %s, which belongs to %s/%s (%s × %d), not to this %s (%s × %d)",
				a.what, a.key, a.actor, id, r.Actor, r.OperationKey, r.Workshop, r.Quantity, a.what, a.answer.Workshop, a.answer.Quantity)
			return
		}
		r.receipts++
	case a.kind == OperationCancel:
		r, ok := reservations[id]
		cancelled := a.answer.Status == StatusCancelled
		switch {
		case !ok:
			add(FindingOrphanReceipt, "%s %s of %s answers a cancellation of reservation %s, which does not exist", a.what, a.key, a.actor, id)
		case !r.Cancelled():
			add(FindingOrphanReceipt, "%s %s of %s answers %q to a cancellation of reservation %s, which is not cancelled", a.what, a.key, a.actor, a.answer.Status, id)
		case cancelled && (r.CancelledBy != a.actor || r.CancelOperation != a.key):
			add(FindingOrphanReceipt, "%s %s of %s says it cancelled reservation %s, which %s cancelled with key %s", a.what, a.key, a.actor, id, r.CancelledBy, r.CancelOperation)
		case cancelled:
			r.cancelReceipts++
		}
	}
}

// checkEvent matches an outbox event with the effect it confirms.
func checkEvent(ev Event, reservations map[string]*resInfo, holds map[string]*holdInfo, add func(kind, format string, args ...any)) {
	if ev.HoldID != "" || holdEventStates[ev.Type] != "" {
		checkHoldEvent(ev, holds, add)
		return
	}
	r, ok := reservations[ev.ReservationID]
	switch {
	case !ok:
		add(FindingOrphanEvent, "event %s (%s) names reservation %s, which does not exist", ev.ID, ev.Type, ev.ReservationID)
	case ev.Type == EventReserved && (ev.Actor != r.Actor || ev.OperationKey != r.OperationKey):
		add(FindingOrphanEvent, "event %s confirms reservation %s for %s/%s, but it was made by %s/%s", ev.ID, r.ID, ev.Actor, ev.OperationKey, r.Actor, r.OperationKey)
	case ev.Type == EventReserved:
		r.reserveEvents++
	case ev.Type == EventCancelled && (!r.Cancelled() || ev.Actor != r.CancelledBy || ev.OperationKey != r.CancelOperation):
		add(FindingOrphanEvent, "event %s confirms a cancellation of reservation %s by %s/%s, which it does not have", ev.ID, r.ID, ev.Actor, ev.OperationKey)
	case ev.Type == EventCancelled:
		r.cancelEvents++
	default:
		add(FindingOrphanEvent, "event %s has unknown type %q", ev.ID, ev.Type)
	}
}

// holdEventStates is the state a hold is in once each type of hold event
// was written for it; hold.created is written while it is held, so any
// state goes.
var holdEventStates = map[string]HoldState{
	EventHoldCreated:   "any",
	EventHoldConfirmed: HoldConfirmed,
	EventHoldReleased:  HoldReleased,
	EventHoldExpired:   HoldExpired,
	// An offer is made held, and may be settled since.
	EventWaitlistOffered: "any",
}

// checkHoldEvent matches a hold event with the hold it tells of.
func checkHoldEvent(ev Event, holds map[string]*holdInfo, add func(kind, format string, args ...any)) {
	h, ok := holds[ev.HoldID]
	state := holdEventStates[ev.Type]
	switch {
	case state == "":
		add(FindingOrphanEvent, "event %s has unknown type %q", ev.ID, ev.Type)
	case !ok:
		add(FindingOrphanEvent, "event %s (%s) names hold %s, which does not exist", ev.ID, ev.Type, ev.HoldID)
	case ev.Owner != "" && ev.Owner != h.Actor:
		add(FindingOrphanEvent, "event %s (%s) names hold %s of %s, but the hold is %s's", ev.ID, ev.Type, h.ID, ev.Owner, h.Actor)
	case state != "any" && h.State != state:
		add(FindingOrphanEvent, "event %s says hold %s was %s, but it is stored as %s", ev.ID, h.ID, state, h.State)
	case !ev.HoldExpiresAt.IsZero() && !ev.HoldExpiresAt.Equal(h.ExpiresAt):
		add(FindingOrphanEvent, "event %s (%s) says hold %s lasts until %s, but it lasts until %s", ev.ID, ev.Type, h.ID,
			ev.HoldExpiresAt.UTC().Format(time.RFC3339), h.ExpiresAt.UTC().Format(time.RFC3339))
	}
}

// checkDeliveries reports a delivery of an event that does not exist, one
// whose id is not its event's and destination's, a reminder of an event
// whose hold gets none, one listed under a state it is not in (or
// twice), and a pending one without a due time or a settled one without
// the time it was settled. (The stores check their own indexes of due
// deliveries.)
func checkDeliveries(tx Tx, events map[string]string, add func(kind, format string, args ...any)) error {
	seen := map[string]DeliveryState{}
	for _, state := range DeliveryStates {
		err := tx.ForEachDeliveryIn(state, "", func(d Delivery) error {
			dest := DestinationOf(d)
			typ, known := events[d.EventID]
			switch prev, twice := seen[d.ID]; {
			case twice:
				add(FindingDelivery, "delivery %s is listed as %s and as %s", d.ID, prev, state)
			case d.State != state:
				add(FindingDelivery, "delivery %s is %s but listed as %s", d.ID, d.State, state)
			case !known:
				add(FindingDelivery, "delivery %s is of event %s, which does not exist", d.ID, d.EventID)
			case d.ID != DeliveryIDOf(d.EventID, dest) || !slices.Contains(DeliveryChannels, d.Channel):
				add(FindingDelivery, "delivery %s is not the delivery of event %s through %s to %q", d.ID, d.EventID, d.Channel, dest)
			case d.Channel == ChannelReminder && !reminderEventTypes[typ]:
				add(FindingDelivery, "delivery %s reminds of event %s (%s), which has no hold to remind of", d.ID, d.EventID, typ)
			case state == DeliveryPending && d.NextAttemptAt.IsZero():
				add(FindingDelivery, "pending delivery %s has no time for its next attempt", d.ID)
			case state != DeliveryPending && d.DoneAt.IsZero():
				add(FindingDelivery, "%s delivery %s has no time it became so", state, d.ID)
			}
			seen[d.ID] = state
			return nil
		})
		if err != nil {
			return fmt.Errorf("read %s deliveries: %w", state, err)
		}
	}
	return nil
}

// checkReceiptAnswer reports a receipt whose stored answer is not the
// answer the engine gives for its own request and status.
func checkReceiptAnswer(rec Receipt, add func(kind, format string, args ...any)) {
	kind, status := rec.Kind(), rec.Answer.Status
	want := rec.AnswerOf(status)
	stored, err := rec.Answer, error(nil)
	if stored.Verbatim() {
		stored, err = DecodeAnswer(kind, []byte(stored.verbatim))
	}
	same, fpErr := rec.payload().matches(rec.FingerprintVersion, rec.Fingerprint)
	switch {
	case checkStatus(kind, status) != nil || (status == StatusUnavailable && rec.ReservationID != ""):
		add(FindingMalformedReceipt, "receipt %s of %s (%s) has status %q", rec.OperationKey, rec.Actor, kind, status)
	case (status == StatusLimitReached) != (rec.Limit != Limit{}) || rec.Limit.MaxPerPerson < 0 || rec.Limit.Already < 0 ||
		(status == StatusLimitReached && (rec.Limit.MaxPerPerson < 1 || rec.Limit.Already+rec.Request.Quantity <= rec.Limit.MaxPerPerson)):
		add(FindingMalformedReceipt, "receipt %s of %s (%s, %s) reports the limit per person %d with %d places already, which does not refuse %d more",
			rec.OperationKey, rec.Actor, kind, status, rec.Limit.MaxPerPerson, rec.Limit.Already, rec.Request.Quantity)
	case err != nil || stored != want:
		add(FindingMalformedReceipt, "receipt %s of %s stores an answer that does not match its request: %q", rec.OperationKey, rec.Actor, truncate(string(rec.Answer.JSON()), 200))
	case fpErr != nil || !same:
		add(FindingMalformedReceipt, "receipt %s of %s has a fingerprint that does not match its request", rec.OperationKey, rec.Actor)
	}
}

// checkHoldRef matches an answer that names a hold with the hold and
// counts it there.
func checkHoldRef(a answerRef, holds map[string]*holdInfo, add func(kind, format string, args ...any)) {
	h, ok := holds[a.answer.HoldID]
	switch {
	case !ok:
		add(FindingHold, "%s %s of %s answers %q naming hold %s, which does not exist", a.what, a.key, a.actor, a.answer.Status, a.answer.HoldID)
	case h.Actor != a.actor || h.Workshop != a.answer.Workshop || h.Quantity != a.answer.Quantity:
		add(FindingHold, "%s %s of %s names hold %s of %s (%s × %d), not one of its own for %s × %d",
			a.what, a.key, a.actor, h.ID, h.Actor, h.Workshop, h.Quantity, a.answer.Workshop, a.answer.Quantity)
	case a.kind == OperationHold && a.answer.Status == StatusHeld:
		if h.OperationKey != a.key || !h.ExpiresAt.Equal(a.answer.ExpiresAt) {
			add(FindingHold, "%s %s of %s says it made hold %s, which key %s made with deadline %s", a.what, a.key, a.actor, h.ID, h.OperationKey, h.ExpiresAt.Format(time.RFC3339))
			return
		}
		h.made++
	case a.kind == OperationConfirm && a.answer.Status == StatusReserved:
		if h.State != HoldConfirmed || h.SettleOperation != a.key || h.ReservationID != a.answer.ReservationID {
			add(FindingHold, "%s %s of %s says it confirmed hold %s into reservation %s, but the hold is %s by key %s with reservation %q",
				a.what, a.key, a.actor, h.ID, a.answer.ReservationID, h.State, h.SettleOperation, h.ReservationID)
			return
		}
		h.confirmed++
	case a.kind == OperationRelease && a.answer.Status == StatusReleased:
		if h.State != HoldReleased || h.SettleOperation != a.key {
			add(FindingHold, "%s %s of %s says it released hold %s, but the hold is %s by key %s", a.what, a.key, a.actor, h.ID, h.State, h.SettleOperation)
			return
		}
		h.released++
	}
}

// checkHold reports a hold whose answers or reservation do not match its
// state.
func checkHold(h *holdInfo, reservations map[string]*resInfo, add func(kind, format string, args ...any)) {
	// An offer from a waiting list is made by the decision that served
	// its entry, which answers nobody "held"; it may be released by its
	// owner leaving the list, which answers "left".
	offer := h.WaitEntry != ""
	wantMade := 1
	if offer {
		wantMade = 0
	}
	if h.made != wantMade {
		add(FindingHold, "hold %s (%s, key %s) is named by %d held answers, not %d", h.ID, h.Actor, h.OperationKey, h.made, wantMade)
	}
	wantConfirmed, wantReleased := 0, 0
	switch h.State {
	case HoldConfirmed:
		wantConfirmed = 1
		r, ok := reservations[h.ReservationID]
		if !ok || r.Actor != h.Actor || r.OperationKey != h.SettleOperation || r.Workshop != h.Workshop || r.Quantity != h.Quantity {
			add(FindingHold, "hold %s was confirmed by key %s into reservation %s, which does not exist or is not that confirmation's", h.ID, h.SettleOperation, h.ReservationID)
		}
	case HoldReleased:
		// An offer released by its owner leaving the list has no
		// released answer; one released by a release has one.
		if !offer || h.released != 0 {
			wantReleased = 1
		}
	case HoldHeld, HoldExpired:
	default:
		add(FindingHold, "hold %s has unknown state %q", h.ID, h.State)
	}
	// A hold is settled by a confirmation or release before its deadline,
	// and cleaned up as expired at or after it.
	switch {
	case (h.State == HoldConfirmed || h.State == HoldReleased) && !h.SettledAt.Before(h.ExpiresAt):
		add(FindingHold, "hold %s was %s at %s, not before its deadline %s", h.ID, h.State, h.SettledAt.Format(time.RFC3339Nano), h.ExpiresAt.Format(time.RFC3339))
	case h.State == HoldExpired && h.SettledAt.Before(h.ExpiresAt):
		add(FindingHold, "hold %s was cleaned up as expired at %s, before its deadline %s", h.ID, h.SettledAt.Format(time.RFC3339Nano), h.ExpiresAt.Format(time.RFC3339))
	}
	if h.State != HoldConfirmed && h.ReservationID != "" {
		add(FindingHold, "hold %s is %s but names reservation %s", h.ID, h.State, h.ReservationID)
	}
	if h.confirmed != wantConfirmed || h.released != wantReleased {
		add(FindingHold, "hold %s is %s, with %d reserved confirmations and %d released answers", h.ID, h.State, h.confirmed, h.released)
	}
}

// endOfTime is a deadline after every hold's.
var endOfTime = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)

// checkOpenHoldIndex reports a store whose index of the open holds of w
// (ForEachOpenHold) does not list exactly the open holds of w.
func checkOpenHoldIndex(tx Tx, w Workshop, holds map[string]*holdInfo, add func(kind, format string, args ...any)) error {
	listed := map[string]bool{}
	err := tx.ForEachOpenHold(w.ID, endOfTime, func(h Hold) error {
		listed[h.ID] = true
		if !h.Open() || h.Workshop != w.ID {
			add(FindingHold, "the index of open holds of workshop %q lists hold %s, which is %s for workshop %q", w.ID, h.ID, h.State, h.Workshop)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read the open holds of workshop %s: %w", w.ID, err)
	}
	for id, h := range holds {
		if h.Open() && h.Workshop == w.ID && !listed[id] {
			add(FindingHold, "open hold %s of workshop %q is missing from the index of open holds", id, w.ID)
		}
	}
	return nil
}

// checkTimeOrder reports time-ordered scans that do not visit every receipt
// and every tombstone once, strictly newest first. A scan in strict order
// visits no record twice, so it visits them all when it visits as many as
// the store holds.
func checkTimeOrder(tx Tx, add func(kind, format string, args ...any)) error {
	type scans struct {
		what       string
		all        func(fn func() error) error
		newestLast func(fn func(TimePosition) error) error
	}
	for _, c := range []scans{
		{"receipts",
			func(fn func() error) error { return tx.ForEachReceipt(func(Receipt) error { return fn() }) },
			func(fn func(TimePosition) error) error {
				return tx.ForEachReceiptNewestFirst(TimePosition{}, func(r Receipt) error { return fn(ReceiptPosition(r)) })
			}},
		{"tombstones",
			func(fn func() error) error { return tx.ForEachTombstone(func(Tombstone) error { return fn() }) },
			func(fn func(TimePosition) error) error {
				return tx.ForEachTombstoneNewestFirst(TimePosition{}, func(t Tombstone) error { return fn(TombstonePosition(t)) })
			}},
	} {
		stored, visited := 0, 0
		if err := c.all(func() error { stored++; return nil }); err != nil {
			return err
		}
		var prev TimePosition
		if err := c.newestLast(func(at TimePosition) error {
			if !prev.Before(at) {
				add(FindingTimeIndex, "the time-ordered scan of %s visits %s/%s (%s) after %s/%s (%s)", c.what,
					at.Actor, at.Key, at.At.Format(time.RFC3339Nano), prev.Actor, prev.Key, prev.At.Format(time.RFC3339Nano))
			}
			prev = at
			visited++
			return nil
		}); err != nil {
			return err
		}
		if visited != stored {
			add(FindingTimeIndex, "the time-ordered scan of %s visits %d of them, the store holds %d", c.what, visited, stored)
		}
	}
	return nil
}

// checkActorIndexes reports scans of an actor's reservations or holds
// (ForEachReservationOf, ForEachHoldOf) that do not visit exactly the
// actor's records, once each, in descending order of id.
func checkActorIndexes(tx Tx, reservations map[string]*resInfo, holds map[string]*holdInfo, add func(kind, format string, args ...any)) error {
	owners := func(ids map[string]string) map[string][]string {
		of := map[string][]string{}
		for id, actor := range ids {
			of[actor] = append(of[actor], id)
		}
		return of
	}
	resOwners, holdOwners := map[string]string{}, map[string]string{}
	for id, r := range reservations {
		resOwners[id] = r.Actor
	}
	for id, h := range holds {
		holdOwners[id] = h.Actor
	}
	kinds := []struct {
		what string
		of   map[string][]string
		scan func(actor string, fn func(id, owner string) error) error
	}{
		{"reservations", owners(resOwners), func(actor string, fn func(id, owner string) error) error {
			return tx.ForEachReservationOf(actor, "", func(r Reservation) error { return fn(r.ID, r.Actor) })
		}},
		{"holds", owners(holdOwners), func(actor string, fn func(id, owner string) error) error {
			return tx.ForEachHoldOf(actor, "", func(h Hold) error { return fn(h.ID, h.Actor) })
		}},
	}
	for _, k := range kinds {
		for actor, ids := range k.of {
			prev, visited := "", 0
			err := k.scan(actor, func(id, owner string) error {
				if owner != actor || (prev != "" && id >= prev) {
					add(FindingActorIndex, "the scan of the %s of %s visits %s (of %s) after %q", k.what, actor, id, owner, prev)
				}
				prev = id
				visited++
				return nil
			})
			if err != nil {
				return fmt.Errorf("scan the %s of %s: %w", k.what, actor, err)
			}
			if visited != len(ids) {
				add(FindingActorIndex, "the scan of the %s of %s visits %d of them, the store holds %d", k.what, actor, visited, len(ids))
			}
		}
	}
	return nil
}

// checkBindings reports bindings that are not one to one: every binding
// names a valid actor that no other binding names, no subject is visited
// twice, and the lookup by actor finds each binding.
func checkBindings(tx Tx, add func(kind, format string, args ...any)) error {
	bySubject, byActor := map[Subject]string{}, map[string]Subject{}
	var all []Binding
	if err := tx.ForEachBinding(func(b Binding) error {
		if err := ValidateActor(b.Actor); err != nil {
			add(FindingBinding, "%s is bound to %q, which is not an actor name", b.Of(), b.Actor)
		}
		if actor, dup := bySubject[b.Of()]; dup {
			add(FindingBinding, "%s is bound twice: to %s and to %s", b.Of(), actor, b.Actor)
		}
		if other, dup := byActor[b.Actor]; dup {
			add(FindingBinding, "actor %s is bound to two subjects: %s and %s", b.Actor, other, b.Of())
		}
		bySubject[b.Of()], byActor[b.Actor] = b.Actor, b.Of()
		all = append(all, b)
		return nil
	}); err != nil {
		return fmt.Errorf("scan bindings: %w", err)
	}
	for _, b := range all {
		got, ok, err := tx.BindingOfActor(b.Actor)
		if err != nil {
			return fmt.Errorf("look up the binding of actor %s: %w", b.Actor, err)
		}
		if !ok || got.Of() != b.Of() {
			add(FindingBinding, "%s is bound to %s, but the lookup of actor %s finds %s (found: %t)", b.Of(), b.Actor, b.Actor, got.Of(), ok)
		}
	}
	return nil
}

// checkPlaces compares what the store answers for the places of each
// actor in each workshop they have records of (Tx.PlacesOf) with what the
// records read add up to at now.
func checkPlaces(tx Tx, now time.Time, reservations map[string]*resInfo, holds map[string]*holdInfo, entries map[string]*entryInfo, add func(kind, format string, args ...any)) error {
	type person struct{ workshop, actor string }
	want := map[person]Places{}
	for _, r := range reservations {
		p := want[person{r.Workshop, r.Actor}]
		if !r.Cancelled() {
			p.Reserved += r.Quantity
		}
		want[person{r.Workshop, r.Actor}] = p
	}
	for _, h := range holds {
		p := want[person{h.Workshop, h.Actor}]
		if h.Open() && h.ExpiresAt.After(now) {
			p.Held += h.Quantity
		}
		want[person{h.Workshop, h.Actor}] = p
	}
	for _, e := range entries {
		p := want[person{e.Workshop, e.Actor}]
		if e.State == WaitWaiting {
			p.Waiting += e.Quantity
		}
		want[person{e.Workshop, e.Actor}] = p
	}
	people := slices.SortedFunc(maps.Keys(want), func(a, b person) int {
		return cmp.Or(cmp.Compare(a.workshop, b.workshop), cmp.Compare(a.actor, b.actor))
	})
	for _, who := range people {
		got, err := tx.PlacesOf(who.workshop, who.actor, now)
		if err != nil {
			return fmt.Errorf("read the places of %s in workshop %s: %w", who.actor, who.workshop, err)
		}
		if w := want[who]; got != w {
			add(FindingPlaces, "%s has %+v in workshop %q by the store's count, but %+v by the records", who.actor, got, who.workshop, w)
		}
	}
	return nil
}
