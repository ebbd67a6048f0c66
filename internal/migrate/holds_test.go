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

// holdOp is one hold, confirmation or release of the source with its first
// answer.
type holdOp struct {
	kind   engine.OperationKind
	actor  string
	key    engine.OperationKey
	req    engine.HoldRequest
	holdID string
	answer engine.Answer
}

func (o holdOp) run(ctx context.Context, eng *engine.Engine) (engine.Outcome, error) {
	who := engine.Principal{Actor: o.actor}
	switch o.kind {
	case engine.OperationHold:
		return eng.Hold(ctx, o.actor, o.key, o.req)
	case engine.OperationConfirm:
		return eng.Confirm(ctx, who, o.key, o.holdID)
	default:
		return eng.Release(ctx, who, o.key, o.holdID)
	}
}

// holdSource builds a store with a hold in every state: open before its
// deadline, open past it (never cleaned), confirmed, released, cleaned up,
// and an unavailable hold request, with a clock that has nanoseconds.
func holdSource(t *testing.T, s engine.Store) (ops []holdOp, open string, now *time.Time) {
	t.Helper()
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 12, 0, 0, 123456789, time.UTC)
	now = &at
	eng := engine.New(s, engine.WithClock(func() time.Time { return *now }))
	if _, _, err := eng.PutWorkshop(ctx, "go-basics", engine.WorkshopSpec{Capacity: 8, MaxQuantity: 3}, nil); err != nil {
		t.Fatal(err)
	}
	do := func(o holdOp) holdOp {
		t.Helper()
		o.key = engine.OperationKey(uuid.NewString())
		out, err := o.run(ctx, eng)
		if err != nil {
			t.Fatal(err)
		}
		o.answer = out.Answer
		ops = append(ops, o)
		return o
	}
	hold := func(actor string, q, ttl int) string {
		return do(holdOp{kind: engine.OperationHold, actor: actor, req: engine.HoldRequest{Workshop: "go-basics", Quantity: q, TTLSeconds: ttl}}).answer.HoldID
	}
	cleaned := hold("alice", 1, 30)
	stale := hold("bob", 2, 60)
	confirmed := hold("alice", 3, 600)
	released := hold("bob", 1, 600)
	do(holdOp{kind: engine.OperationHold, actor: "carol", req: engine.HoldRequest{Workshop: "go-basics", Quantity: 3, TTLSeconds: 600}}) // Unavailable.
	*now = now.Add(time.Second + 7*time.Nanosecond)
	do(holdOp{kind: engine.OperationConfirm, actor: "alice", holdID: confirmed})
	do(holdOp{kind: engine.OperationRelease, actor: "bob", holdID: released})
	*now = now.Add(45 * time.Second)
	do(holdOp{kind: engine.OperationConfirm, actor: "alice", holdID: cleaned}) // Expired, and cleaned up.
	open = hold("carol", 2, 600)
	*now = now.Add(30 * time.Second) // stale is past its deadline, never cleaned.
	_ = stale
	return ops, open, now
}

// toMicroseconds returns hs with their times cut to the microsecond,
// which is what PostgreSQL keeps of a timestamp.
func toMicroseconds(hs []engine.Hold) []engine.Hold {
	for i := range hs {
		hs[i].CreatedAt = hs[i].CreatedAt.Truncate(time.Microsecond)
		hs[i].ExpiresAt = hs[i].ExpiresAt.Truncate(time.Microsecond)
		hs[i].SettledAt = hs[i].SettledAt.Truncate(time.Microsecond)
	}
	return hs
}

func allHolds(t *testing.T, s engine.Store) []engine.Hold {
	t.Helper()
	var hs []engine.Hold
	if err := s.View(context.Background(), func(tx engine.Tx) error {
		return tx.ForEachHold(func(h engine.Hold) error { hs = append(hs, h); return nil })
	}); err != nil {
		t.Fatal(err)
	}
	return hs
}

// testCopyHolds copies a store of holds into to and proves the copy keeps
// them: the same holds, a clean Check at the source's clock, byte-identical
// replays of every hold operation, and the open hold still confirmable.
func testCopyHolds(t *testing.T, to engine.Store, via ...engine.Store) {
	ctx := context.Background()
	var from engine.Store = memstore.New(memstore.Options{})
	ops, open, now := holdSource(t, from)
	for _, hop := range via {
		if _, err := migrate.Copy(ctx, from, hop); err != nil {
			t.Fatal(err)
		}
		from = hop
	}
	c, err := migrate.Copy(ctx, from, to)
	if err != nil {
		t.Fatal(err)
	}
	if c.Holds != 5 {
		t.Errorf("copied %d holds, want 5", c.Holds)
	}
	if got, want := toMicroseconds(allHolds(t, to)), toMicroseconds(allHolds(t, from)); !reflect.DeepEqual(got, want) {
		for i := range min(len(got), len(want)) {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Errorf("hold after the copy:\n got %+v\nwant %+v", got[i], want[i])
			}
		}
	}
	findings, err := engine.CheckAt(ctx, to, *now)
	if err != nil || len(findings) != 0 {
		t.Errorf("Check of the target = %v, %v", findings, err)
	}
	eng := engine.New(to, engine.WithClock(func() time.Time { return *now }))
	for _, o := range ops {
		out, err := o.run(ctx, eng)
		if err != nil || !out.Replayed || !bytes.Equal(out.Answer.JSON(), o.answer.JSON()) {
			t.Errorf("%s %s of %s after the copy = %s replayed=%v, %v; want %s", o.kind, o.key, o.actor, out.Answer.JSON(), out.Replayed, err, o.answer.JSON())
		}
	}
	w, err := eng.Workshop(ctx, "go-basics")
	if err != nil || w.Reserved != 3 || w.Held != 2 {
		t.Errorf("workshop after the copy = %+v, %v; want 3 reserved, 2 held", w, err)
	}
	out, err := eng.Confirm(ctx, engine.Principal{Actor: "carol"}, engine.OperationKey(uuid.NewString()), open)
	if err != nil || out.Answer.Status != engine.StatusReserved {
		t.Errorf("confirm of the open hold after the copy = %+v, %v", out, err)
	}
	if findings, err := engine.CheckAt(ctx, to, *now); err != nil || len(findings) != 0 {
		t.Errorf("Check of the target after a confirmation = %v, %v", findings, err)
	}
}

func TestCopyHoldsToBolt(t *testing.T) { testCopyHolds(t, newBolt(t, "to.db")) }

func TestCopyHoldsToPostgres(t *testing.T) { testCopyHolds(t, newPostgres(t)) }

// TestCopyHoldsFromPostgresToBolt moves holds into PostgreSQL and from
// there into bbolt, whose receipt format of hold operations accepts only
// answers built from their members.
func TestCopyHoldsFromPostgresToBolt(t *testing.T) {
	testCopyHolds(t, newBolt(t, "to.db"), newPostgres(t))
}
