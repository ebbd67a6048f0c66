package chaos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/reserve/reserve/internal/engine"
)

// Final is what a run's checks read besides the history: the stores'
// contents after the last daemon stopped, what the outbox sink received,
// the import's outcomes and what `reserved check` said.
type Final struct {
	// Capacity is every workshop's capacity, which no run changes.
	Capacity     map[string]int
	Workshops    []engine.Workshop
	Reservations []engine.Reservation
	Holds        []engine.Hold
	// Waitlisted are the workshops with waiting lists, and Entries the
	// entries of their lists. The linearizability model has no waiting
	// lists: their workshops' histories are checked by what the store
	// holds against what the history acknowledged, and by `reserved
	// check` (each freed place offered once, to the first entries that
	// fit, every offer settled before its deadline, capacity kept).
	Waitlisted []string
	Entries    []engine.WaitEntry
	// Events are the outbox events the store committed.
	Events []engine.Event
	// Received counts, per event id, the deliveries the sink accepted,
	// and ReceivedPayloads holds the first payload of each.
	Received         map[string]int
	ReceivedPayloads map[string][]byte
	// Hooks are the campaign's webhook endpoints and what each received;
	// HookBad the deliveries that did not verify.
	Hooks   []HookEndpoint
	HookBad []string
	// StoredKeys holds actor/key of every receipt and tombstone in the
	// store.
	StoredKeys map[string]bool
	// ImportGot and ImportWant are the outcome of each import row after
	// the interrupted import and after an uninterrupted one.
	ImportGot, ImportWant []string
	// CheckOutput is the output of a `reserved check` that failed, empty
	// when it found nothing.
	CheckOutput string
	// Skipped names what a run could not check (an import that was not
	// run, say); nothing there is a violation.
	Skipped []string
}

// Violation is one broken promise.
type Violation struct {
	Check  string
	Detail string
}

func (v Violation) String() string { return v.Check + ": " + v.Detail }

// The checks, as violations name them.
const (
	CheckUnsettled     = "unsettled"
	CheckLinearizable  = "linearizable"
	CheckLostAck       = "lost_ack"
	CheckDoubleEffect  = "double_effect"
	CheckPhantomEffect = "phantom_effect"
	CheckReplay        = "replay_bytes"
	CheckConflict      = "conflict"
	CheckAtomic        = "atomic_batch"
	CheckCapacity      = "capacity"
	CheckOutbox        = "outbox_exactly_once"
	CheckWebhooks      = "webhooks_at_least_once"
	CheckImport        = "import_equal"
	CheckStore         = "reserved_check"
)

// Report is what the checks found.
type Report struct {
	Violations []Violation
	// Unknown counts the workshops whose linearizability porcupine could
	// not decide within its time limit.
	Unknown int
	Elapsed time.Duration
	// Illegal holds the operations of each workshop whose history is not
	// linearizable, for a look at them (Dump).
	Illegal map[string][]*Op
}

// Dump writes ops, ordered by their call, one a line.
func Dump(w io.Writer, ops []*Op) {
	ops = slices.Clone(ops)
	slices.SortFunc(ops, func(a, b *Op) int { return int(a.Call - b.Call) })
	for _, op := range ops {
		fmt.Fprintf(w, "%10d %10d epoch=%d %-8s %-10s %-8s %s %s q=%d target=%s unclear=%d → %d %s %s\n",
			op.Call.Microseconds(), op.Return.Microseconds(), op.Epoch, op.Via, op.Actor, op.Role, op.Kind, op.Key, op.Quantity, op.Target, op.Unclear, op.Status, op.Code, op.Body)
	}
}

// CheckTimeout bounds porcupine's search per workshop.
var CheckTimeout = 20 * time.Second

// Check checks the history ops against final and returns what it found.
func Check(ops []*Op, final Final) Report {
	start := time.Now()
	var r Report
	add := func(check, format string, args ...any) {
		r.Violations = append(r.Violations, Violation{check, fmt.Sprintf(format, args...)})
	}
	intents := map[string]*Op{} // actor/key → its intent.
	for _, op := range ops {
		if op.Role == Intent {
			intents[op.Actor+"/"+string(op.Key)] = op
		}
		if !op.Answered() && op.Role != Refused {
			add(CheckUnsettled, "%s %s %s via %s got no authoritative answer", op.Actor, op.Kind, op.Key, op.Via)
			continue
		}
		for _, other := range op.Others {
			if !bytes.Equal(other, op.Body) {
				add(CheckReplay, "%s %s %s: answers of one intent differ: %s and %s", op.Actor, op.Kind, op.Key, op.Body, other)
			}
		}
	}

	// Linearizability, one workshop at a time.
	byWorkshop := map[string][]*Op{}
	for _, op := range ops {
		if op.Role == Refused && op.Code == engine.CodeUnknownWorkshop {
			continue // Of no workshop: the atomic batch check judges it.
		}
		byWorkshop[op.Workshop] = append(byWorkshop[op.Workshop], op)
	}
	for _, w := range slices.Sorted(maps.Keys(byWorkshop)) {
		if slices.Contains(final.Waitlisted, w) {
			continue
		}
		capacity, ok := final.Capacity[w]
		if !ok {
			add(CheckLinearizable, "workshop %s of %d operations has no capacity", w, len(byWorkshop[w]))
			continue
		}
		switch linearizable(capacity, byWorkshop[w], CheckTimeout) {
		case porcupine.Illegal:
			if r.Illegal == nil {
				r.Illegal = map[string][]*Op{}
			}
			r.Illegal[w] = byWorkshop[w]
			add(CheckLinearizable, "the history of workshop %s (%d operations) is not linearizable", w, len(byWorkshop[w]))
		case porcupine.Unknown:
			r.Unknown++
		}
	}

	// Replays and conflicts.
	for _, op := range ops {
		if !op.Answered() || (op.Role != Replay && op.Role != Conflict) {
			continue
		}
		first := intents[op.Actor+"/"+string(op.Key)]
		switch {
		case first == nil:
			add(CheckReplay, "%s %s %s repeats no intent of the history", op.Actor, op.Role, op.Key)
		case op.Code == engine.CodeOperationExpired && op.Epoch > first.Epoch:
			// A receipt the clock carried past retention may be gone: a
			// late repeat is refused as expired.
		case op.Role == Conflict && (op.Status != 409 || op.Code != engine.CodeOperationConflict):
			add(CheckConflict, "%s %s with another payload: %d %s, not 409 %s", op.Actor, op.Key, op.Status, op.Body, engine.CodeOperationConflict)
		case op.Role == Replay && (op.Status != first.Status || !bytes.Equal(op.Body, first.Body)):
			add(CheckReplay, "%s %s %s: replay %d %s, first answer %d %s", op.Actor, op.Kind, op.Key, op.Status, op.Body, first.Status, first.Body)
		}
	}

	r.Violations = append(r.Violations, checkAtomic(ops, final, intents)...)

	// Every acknowledged effect is in the store, with its id, and the
	// store has no effect the history did not acknowledge.
	acked := map[string]*Op{} // Reservation id → the op that made it.
	cancelled := map[string]bool{}
	ackedHolds := map[string]*Op{}
	ackedEntries := map[string]*Op{} // Waiting list entry id → the op that joined.
	for _, op := range ops {
		a, ok := op.Answer()
		if !ok || op.Role != Intent {
			continue
		}
		switch {
		case a.Status == engine.StatusReserved:
			acked[a.ReservationID] = op
		case a.Status == engine.StatusCancelled:
			cancelled[a.ReservationID] = true
		case a.Status == engine.StatusHeld:
			ackedHolds[a.HoldID] = op
		case a.Status == engine.StatusWaiting:
			ackedEntries[a.EntryID] = op
		}
	}
	r.Violations = append(r.Violations, checkEntries(ops, final, ackedEntries)...)
	stored := map[string]engine.Reservation{}
	perKey := map[string]int{}
	for _, res := range final.Reservations {
		stored[res.ID] = res
		perKey[res.Actor+"/"+string(res.OperationKey)]++
		op := acked[res.ID]
		switch {
		case op == nil:
			add(CheckPhantomEffect, "reservation %s of %s/%s was never acknowledged", res.ID, res.Actor, res.OperationKey)
		case res.Actor != op.Actor || res.Workshop != op.Workshop || res.Quantity != acked[res.ID].effectQuantity():
			add(CheckLostAck, "reservation %s is %s/%s %s×%d, acknowledged to %s for %s×%d", res.ID, res.Actor, res.OperationKey, res.Workshop, res.Quantity, op.Actor, op.Workshop, op.effectQuantity())
		case res.Cancelled() != cancelled[res.ID]:
			add(CheckLostAck, "reservation %s is cancelled=%v, the history says %v", res.ID, res.Cancelled(), cancelled[res.ID])
		}
	}
	for _, id := range slices.Sorted(maps.Keys(acked)) {
		if _, ok := stored[id]; !ok {
			op := acked[id]
			add(CheckLostAck, "reservation %s acknowledged to %s (%s %s via %s) is not in the store", id, op.Actor, op.Kind, op.Key, op.Via)
		}
	}
	holdsPerKey := map[string]int{}
	storedHolds := map[string]bool{}
	for _, h := range final.Holds {
		holdsPerKey[h.Actor+"/"+string(h.OperationKey)]++
		storedHolds[h.ID] = true
		if h.WaitEntry != "" {
			continue // An offer: checkEntries judges it.
		}
		if ackedHolds[h.ID] == nil {
			add(CheckPhantomEffect, "hold %s of %s/%s was never acknowledged", h.ID, h.Actor, h.OperationKey)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(ackedHolds)) {
		if !storedHolds[id] {
			add(CheckLostAck, "hold %s acknowledged to %s is not in the store", id, ackedHolds[id].Actor)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(perKey)) {
		if perKey[k] > 1 {
			add(CheckDoubleEffect, "key %s has %d reservations", k, perKey[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(holdsPerKey)) {
		if holdsPerKey[k] > 1 {
			add(CheckDoubleEffect, "key %s has %d holds", k, holdsPerKey[k])
		}
	}

	// Capacity: the store's counters and its reservations.
	active := map[string]int{}
	for _, res := range final.Reservations {
		if !res.Cancelled() {
			active[res.Workshop] += res.Quantity
		}
	}
	for _, w := range final.Workshops {
		if w.Reserved+w.Held > w.Capacity {
			add(CheckCapacity, "workshop %s: %d reserved + %d held > capacity %d", w.ID, w.Reserved, w.Held, w.Capacity)
		}
		if w.Reserved != active[w.ID] {
			add(CheckCapacity, "workshop %s counts %d reserved, its active reservations hold %d", w.ID, w.Reserved, active[w.ID])
		}
	}

	r.Violations = append(r.Violations, checkOutbox(final)...)
	r.Violations = append(r.Violations, checkWebhooks(final)...)

	if final.ImportWant != nil && !slices.Equal(final.ImportGot, final.ImportWant) {
		add(CheckImport, "the interrupted import's outcomes differ from the uninterrupted one's: %s", firstDifference(final.ImportGot, final.ImportWant))
	}
	if final.CheckOutput != "" {
		add(CheckStore, "%s", final.CheckOutput)
	}
	r.Elapsed = time.Since(start)
	return r
}

// effectQuantity is the quantity of the reservation op made.
func (op *Op) effectQuantity() int {
	if a, ok := op.Answer(); ok {
		return a.Quantity
	}
	return op.Quantity
}

// checkOutbox checks that every committed event reached the sink, that the
// sink got no event the store does not have, and that every effect has
// exactly one event of its type: delivered at least once under one id,
// which a receiver that deduplicates by id sees exactly once.
func checkOutbox(final Final) []Violation {
	var vs []Violation
	add := func(format string, args ...any) {
		vs = append(vs, Violation{CheckOutbox, fmt.Sprintf(format, args...)})
	}
	committed := map[string]bool{}
	perEffect := map[string][]string{}
	for _, ev := range final.Events {
		if !ev.ForSimpleChannels() {
			continue // The webhooks' and mail's, not the outbox sink's.
		}
		committed[ev.ID] = true
		perEffect[ev.Type+" "+ev.ReservationID] = append(perEffect[ev.Type+" "+ev.ReservationID], ev.ID)
		if final.Received[ev.ID] == 0 {
			add("event %s (%s %s) was committed and never delivered", ev.ID, ev.Type, ev.ReservationID)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(final.Received)) {
		if !committed[id] {
			add("the sink received event %s, which the store does not have: %s", id, final.ReceivedPayloads[id])
			continue
		}
		var p engine.EventPayload
		if err := json.Unmarshal(final.ReceivedPayloads[id], &p); err != nil || p.ID != id {
			add("event %s was delivered as %s", id, final.ReceivedPayloads[id])
		}
	}
	for _, res := range final.Reservations {
		want := map[string]bool{engine.EventReserved: true, engine.EventCancelled: res.Cancelled()}
		for typ, w := range want {
			n := len(perEffect[typ+" "+res.ID])
			if w && n != 1 || !w && n != 0 {
				add("reservation %s (cancelled=%v) has %d %s events", res.ID, res.Cancelled(), n, typ)
			}
		}
	}
	return vs
}

// firstDifference describes where two outcome lists first differ.
func firstDifference(got, want []string) string {
	for i := range max(len(got), len(want)) {
		g, w := "(none)", "(none)"
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return fmt.Sprintf("row %d is %s, uninterrupted %s", i+1, g, w)
		}
	}
	return "equal"
}

// checkEntries checks the waiting lists against the history: every entry
// in the store was acknowledged by a "waiting" answer to its owner's key,
// every entry acknowledged is stored, one entry per key, an entry
// answered "left" is stored as left, and every offer
// (a hold the store made for an entry) is for an acknowledged entry, its
// owner and its quantity, and is the only offer of that entry.
func checkEntries(ops []*Op, final Final, acked map[string]*Op) []Violation {
	var vs []Violation
	add := func(check, format string, args ...any) {
		vs = append(vs, Violation{check, fmt.Sprintf(format, args...)})
	}
	stored := map[string]engine.WaitEntry{}
	perKey := map[string]int{}
	for _, e := range final.Entries {
		stored[e.ID] = e
		perKey[e.Actor+"/"+string(e.OperationKey)]++
		op := acked[e.ID]
		switch {
		case op == nil:
			add(CheckPhantomEffect, "waiting list entry %s of %s/%s was never acknowledged", e.ID, e.Actor, e.OperationKey)
		case op.Actor != e.Actor || op.Key != e.OperationKey || op.Workshop != e.Workshop || op.Quantity != e.Quantity:
			add(CheckLostAck, "entry %s is %s/%s %s×%d, acknowledged to %s/%s for %s×%d", e.ID, e.Actor, e.OperationKey, e.Workshop, e.Quantity, op.Actor, op.Key, op.Workshop, op.Quantity)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(acked)) {
		if _, ok := stored[id]; !ok {
			add(CheckLostAck, "waiting list entry %s acknowledged to %s is not in the store", id, acked[id].Actor)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(perKey)) {
		if perKey[k] > 1 {
			add(CheckDoubleEffect, "key %s has %d waiting list entries", k, perKey[k])
		}
	}
	for _, op := range ops {
		a, ok := op.Answer()
		if !ok || op.Role != Intent || op.Kind != engine.OperationLeaveWaitlist || a.Status != engine.StatusLeft {
			continue
		}
		if e, ok := stored[op.Target]; ok && e.State != engine.WaitLeft {
			add(CheckLostAck, "entry %s was answered left to %s/%s, but it is %s", e.ID, op.Actor, op.Key, e.State)
		}
	}
	offers := map[string]int{}
	for _, h := range final.Holds {
		if h.WaitEntry == "" {
			continue
		}
		offers[h.WaitEntry]++
		e, ok := stored[h.WaitEntry]
		switch {
		case !ok:
			add(CheckPhantomEffect, "offer %s is for entry %s, which is not in the store", h.ID, h.WaitEntry)
		case e.Actor != h.Actor || e.Quantity != h.Quantity || e.Workshop != h.Workshop || e.HoldID != h.ID:
			add(CheckDoubleEffect, "offer %s (%s, %s×%d) is not the offer of entry %s (%s, %s×%d, offer %s)", h.ID, h.Actor, h.Workshop, h.Quantity, e.ID, e.Actor, e.Workshop, e.Quantity, e.HoldID)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(offers)) {
		if offers[id] > 1 {
			add(CheckDoubleEffect, "entry %s was offered places %d times", id, offers[id])
		}
	}
	return vs
}

// WaitlistCounts counts what the waiting lists of a run saw: the intents
// answered "waiting" (joined), the offers the store made, and how the
// entries ended (an entry's state in the store: reserved, left, expired,
// or still offered or waiting).
func WaitlistCounts(ops []*Op, final Final) map[string]int {
	n := map[string]int{}
	for _, op := range ops {
		if a, ok := op.Answer(); ok && op.Role == Intent && a.Status == engine.StatusWaiting {
			n["joined"]++
		}
	}
	for _, h := range final.Holds {
		if h.WaitEntry != "" {
			n["offers"]++
		}
	}
	for _, e := range final.Entries {
		n["entries_"+string(e.State)]++
	}
	return n
}
