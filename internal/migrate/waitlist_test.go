package migrate_test

import (
	"bytes"
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/engine/memstore"
	"github.com/reserve/reserve/internal/migrate"
)

// waitOp is one operation of a waiting list's source with its first
// answer: a request that joins (or reserves), a cancellation, a
// confirmation of an offer or a leaving.
type waitOp struct {
	kind  engine.OperationKind
	actor string
	key   engine.OperationKey
	req   engine.Request // A reservation request's.
	id    string         // The reservation, hold or entry the others act on.
	out   engine.Answer
}

func (o waitOp) run(ctx context.Context, eng *engine.Engine) (engine.Outcome, error) {
	who := engine.Principal{Actor: o.actor}
	switch o.kind {
	case engine.OperationReserve:
		return eng.Reserve(ctx, o.actor, o.key, o.req)
	case engine.OperationCancel:
		return eng.Cancel(ctx, who, o.key, o.id)
	case engine.OperationConfirm:
		return eng.Confirm(ctx, who, o.key, o.id)
	default:
		return eng.LeaveWaitlist(ctx, who, o.key, o.id)
	}
}

// waitSource builds a store with waiting list entries in every state, on
// a clock with nanoseconds: on loom, henry's join, whose receipt then
// became a tombstone (he still waits); on kiln (2 places, offers of ten
// minutes), bob, carol, dave, frank and gina joined behind two
// reservations, dave left, a cancellation offered bob a place, which he
// confirmed, another offered carol one, which expired and passed to
// frank (offered now), and gina waits. It returns the operations whose
// receipts are kept, henry's join, and the clock.
func waitSource(t *testing.T, s engine.Store) (ops []waitOp, expired waitOp, now *time.Time) {
	t.Helper()
	ctx := context.Background()
	at := time.Date(2026, 12, 2, 12, 0, 0, 123456789, time.UTC)
	now = &at
	eng := engine.New(s, engine.WithClock(func() time.Time { return *now }))
	for id, capacity := range map[string]int{"kiln": 2, "loom": 1} {
		if _, _, err := eng.PutWorkshop(ctx, id, engine.WorkshopSpec{Capacity: capacity, MaxQuantity: 1, OfferTTLSeconds: 600}, nil); err != nil {
			t.Fatal(err)
		}
	}
	do := func(o waitOp) waitOp {
		t.Helper()
		o.key = engine.OperationKey(uuid.NewString())
		out, err := o.run(ctx, eng)
		if err != nil {
			t.Fatalf("%s of %s: %v", o.kind, o.actor, err)
		}
		o.out = out.Answer
		ops = append(ops, o)
		return o
	}
	reserve := func(actor, workshop string) string {
		return do(waitOp{kind: engine.OperationReserve, actor: actor, req: engine.Request{Workshop: workshop, Quantity: 1}}).out.ReservationID
	}
	join := func(actor, workshop string) string {
		o := do(waitOp{kind: engine.OperationReserve, actor: actor, req: engine.Request{Workshop: workshop, Quantity: 1, Waitlist: true}})
		if o.out.Status != engine.StatusWaiting {
			t.Fatalf("%s joins %s: %s", actor, workshop, o.out.JSON())
		}
		return o.out.EntryID
	}
	offerOf := func(actor string) string {
		t.Helper()
		es, _, err := eng.Waitlist(ctx, engine.Principal{Actor: actor}, engine.ListFilter{})
		if err != nil || len(es) != 1 || es[0].State != engine.WaitOffered {
			t.Fatalf("the entries of %s = %+v, %v; want one offered", actor, es, err)
		}
		return es[0].HoldID
	}
	reserve("ivy", "loom")
	join("henry", "loom")
	expired = ops[len(ops)-1]
	*now = now.Add(48 * time.Hour)
	if n, err := eng.ExpireReceipts(ctx, 24*time.Hour, 100); err != nil || n != 2 {
		t.Fatalf("ExpireReceipts = %d, %v; want ivy's and henry's receipts", n, err)
	}
	ops = ops[:0]
	alice, erin := reserve("alice", "kiln"), reserve("erin", "kiln")
	join("bob", "kiln")
	join("carol", "kiln")
	dave := join("dave", "kiln")
	join("frank", "kiln")
	join("gina", "kiln")
	do(waitOp{kind: engine.OperationLeaveWaitlist, actor: "dave", id: dave})
	do(waitOp{kind: engine.OperationCancel, actor: "alice", id: alice})
	do(waitOp{kind: engine.OperationConfirm, actor: "bob", id: offerOf("bob")})
	do(waitOp{kind: engine.OperationCancel, actor: "erin", id: erin})
	offerOf("carol")
	*now = now.Add(10*time.Minute + time.Nanosecond)
	if n, _, err := eng.ExpireHolds(ctx, 100); err != nil || n != 1 {
		t.Fatalf("ExpireHolds = %d, %v; want carol's offer", n, err)
	}
	offerOf("frank")
	return ops, expired, now
}

// waitRecords is what a store keeps of waiting lists: the entries, the
// workshops (with their counts of people waiting and offer times to
// live) and the holds (offers naming their entries), times cut to the
// microsecond, which is what PostgreSQL keeps of a timestamp.
type waitRecords struct {
	entries   []engine.WaitEntry
	workshops []engine.Workshop
	holds     []engine.Hold
}

func waitRecordsOf(t *testing.T, s engine.Store) waitRecords {
	t.Helper()
	var r waitRecords
	err := s.View(context.Background(), func(tx engine.Tx) error {
		r = waitRecords{}
		if err := tx.ForEachWaitEntry(func(e engine.WaitEntry) error {
			for _, at := range []*time.Time{&e.CreatedAt, &e.OfferExpiresAt, &e.SettledAt} {
				*at = at.Truncate(time.Microsecond)
			}
			r.entries = append(r.entries, e)
			return nil
		}); err != nil {
			return err
		}
		if err := tx.ForEachWorkshop(func(w engine.Workshop) error { r.workshops = append(r.workshops, w); return nil }); err != nil {
			return err
		}
		return tx.ForEachHold(func(h engine.Hold) error { r.holds = append(r.holds, h); return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	r.holds = toMicroseconds(r.holds)
	return r
}

// testCopyWaitlists copies a store of waiting lists into to (through the
// stores of via first) and proves the copy keeps them: the same entries,
// workshops and offers, a clean Check, byte-identical replays of every
// join (with its entry and position), cancellation, confirmation and
// leaving, the expired join refused as expired with its tombstone's
// entry and position, and the queue still served in order.
func testCopyWaitlists(t *testing.T, to engine.Store, via ...engine.Store) {
	ctx := context.Background()
	var from engine.Store = memstore.New(memstore.Options{})
	ops, expired, now := waitSource(t, from)
	for _, hop := range via {
		if _, err := migrate.Copy(ctx, from, hop); err != nil {
			t.Fatal(err)
		}
		from = hop
	}
	want := waitRecordsOf(t, from)
	c, err := migrate.Copy(ctx, from, to)
	if err != nil {
		t.Fatal(err)
	}
	if c.WaitEntries != 6 || len(want.entries) != 6 {
		t.Errorf("copied %d entries of the source's %d, want 6", c.WaitEntries, len(want.entries))
	}
	got := waitRecordsOf(t, to)
	for _, diff := range []struct {
		what      string
		got, want any
	}{{"entries", got.entries, want.entries}, {"workshops", got.workshops, want.workshops}, {"holds", got.holds, want.holds}} {
		if !reflect.DeepEqual(diff.got, diff.want) {
			t.Errorf("%s after the copy:\n got %+v\nwant %+v", diff.what, diff.got, diff.want)
		}
	}
	if findings, err := engine.CheckAt(ctx, to, *now); err != nil || len(findings) != 0 {
		t.Errorf("Check of the target = %v, %v", findings, err)
	}
	eng := engine.New(to, engine.WithClock(func() time.Time { return *now }))
	for _, o := range ops {
		out, err := o.run(ctx, eng)
		if err != nil || !out.Replayed || !bytes.Equal(out.Answer.JSON(), o.out.JSON()) {
			t.Errorf("%s %s of %s after the copy = %s replayed=%v, %v; want %s", o.kind, o.key, o.actor, out.Answer.JSON(), out.Replayed, err, o.out.JSON())
		}
	}
	if _, err := expired.run(ctx, eng); engine.ErrorCode(err) != engine.CodeOperationExpired {
		t.Errorf("henry's expired join after the copy: %v, want %s", err, engine.CodeOperationExpired)
	}
	err = to.View(ctx, func(tx engine.Tx) error {
		ts, ok, err := tx.Tombstone(expired.actor, expired.key)
		if err != nil || !ok || ts.Answer.EntryID != expired.out.EntryID || ts.Answer.Position != expired.out.Position {
			t.Errorf("tombstone of henry's join after the copy = %+v, %t, %v; want entry %s at %d", ts, ok, err, expired.out.EntryID, expired.out.Position)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Frank declines his offer, which passes to gina.
	var frank string
	for _, e := range got.entries {
		if e.Actor == "frank" {
			frank = e.ID
		}
	}
	if out, err := eng.LeaveWaitlist(ctx, engine.Principal{Actor: "frank"}, engine.OperationKey(uuid.NewString()), frank); err != nil || out.Answer.Status != engine.StatusLeft {
		t.Errorf("frank leaves after the copy = %s, %v", out.Answer.JSON(), err)
	}
	es, _, err := eng.WorkshopWaitlist(ctx, engine.Principal{Actor: "root", Admin: true}, "kiln", engine.ListFilter{})
	var states []string
	for _, e := range es {
		states = append(states, e.Actor+":"+string(e.State))
	}
	if wantStates := []string{"bob:reserved", "carol:expired", "dave:left", "frank:left", "gina:offered"}; err != nil || !reflect.DeepEqual(states, wantStates) {
		t.Errorf("the waiting list of kiln after the copy = %q, %v; want %q", states, err, wantStates)
	}
	if findings, err := engine.CheckAt(ctx, to, *now); err != nil || len(findings) != 0 {
		t.Errorf("Check of the target after a leaving = %v, %v", findings, err)
	}
}

func TestCopyWaitlistsToBolt(t *testing.T) {
	to := newBolt(t, "to.db")
	testCopyWaitlists(t, to)
	if findings, err := to.Check(context.Background()); err != nil || len(findings) != 0 {
		t.Errorf("the store's check of the target = %v, %v", findings, err)
	}
}

func TestCopyWaitlistsToPostgres(t *testing.T) { testCopyWaitlists(t, newPostgres(t)) }

// TestCopyWaitlistsFromPostgresToBolt moves waiting lists into PostgreSQL
// and from there into bbolt, whose receipts of waiting lists accept only
// answers built from their members.
func TestCopyWaitlistsFromPostgresToBolt(t *testing.T) {
	testCopyWaitlists(t, newBolt(t, "to.db"), newPostgres(t))
}
