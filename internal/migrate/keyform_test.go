package migrate_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/migrate"
)

// TestTimeOrderedKeysRoundTrip: receipts and tombstones of UUIDv7 keys,
// copied from bbolt to PostgreSQL and back, replay (or stay expired) on
// both, the actors known only by them keep their names against a new
// subject, and both checks are clean.
func TestTimeOrderedKeysRoundTrip(t *testing.T) {
	ctx := context.Background()
	from := newBolt(t, "v7-from.db")
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	clock := engine.WithClock(func() time.Time { return now })
	eng := engine.New(from, clock)
	if _, _, err := eng.PutWorkshop(ctx, "one", engine.WorkshopSpec{Capacity: 1, MaxQuantity: 1}, nil); err != nil {
		t.Fatal(err)
	}
	key := func() engine.OperationKey {
		k, err := engine.NewOperationKey()
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	req := engine.Request{Workshop: "one", Quantity: 1}
	gone := intent{actor: "wes", key: key(), req: req} // Refused, then expired.
	if _, err := eng.Reserve(ctx, gone.actor, engine.OperationKey(uuid.NewString()), req); err != nil {
		t.Fatal(err)
	}
	if out, err := eng.Reserve(ctx, gone.actor, gone.key, req); err != nil || out.Answer.Status != engine.StatusUnavailable {
		t.Fatalf("wes = %+v, %v", out, err)
	}
	now = now.Add(48 * time.Hour)
	if n, err := eng.ExpireReceipts(ctx, time.Hour, 100); err != nil || n != 2 {
		t.Fatalf("ExpireReceipts = %d, %v", n, err)
	}
	var kept []intent
	for _, actor := range []string{"vera", "wes", "xia"} {
		it := intent{actor: actor, key: key(), req: req}
		out, err := eng.Reserve(ctx, it.actor, it.key, it.req)
		if err != nil || out.Answer.Status != engine.StatusUnavailable {
			t.Fatalf("%s = %+v, %v", actor, out, err)
		}
		it.answer = out.Answer
		kept = append(kept, it)
	}
	same := func(s engine.Store, where string) {
		t.Helper()
		e := engine.New(s, clock)
		for _, it := range kept {
			out, err := e.Reserve(ctx, it.actor, it.key, it.req)
			if err != nil || !out.Replayed || string(out.Answer.JSON()) != string(it.answer.JSON()) {
				t.Errorf("%s: %s %s = %s replayed=%v %v", where, it.actor, it.key, out.Answer.JSON(), out.Replayed, err)
			}
		}
		if _, err := e.Reserve(ctx, gone.actor, gone.key, req); engine.ErrorCode(err) != engine.CodeOperationExpired {
			t.Errorf("%s: the expired key: %v", where, err)
		}
		for _, actor := range []string{"vera", "wes", "xia"} {
			var has bool
			if err := s.View(ctx, func(tx engine.Tx) (err error) { has, err = tx.HasReceiptsOf(actor); return err }); err != nil || !has {
				t.Errorf("%s: HasReceiptsOf(%s) = %v, %v", where, actor, has, err)
			}
		}
		if findings, err := engine.CheckAt(ctx, s, now); err != nil || len(findings) != 0 {
			t.Errorf("%s: engine check = %v, %v", where, findings, err)
		}
		if b, ok := s.(*boltstore.Store); ok {
			if findings, err := b.Check(ctx); err != nil || len(findings) != 0 {
				t.Errorf("%s: bbolt check = %v, %v", where, findings, err)
			}
		}
	}
	same(from, "source")
	pg := newPostgres(t)
	if _, err := migrate.Copy(ctx, from, pg); err != nil {
		t.Fatal(err)
	}
	same(pg, "postgres")
	back := newBolt(t, "v7-back.db")
	if _, err := migrate.Copy(ctx, pg, back); err != nil {
		t.Fatal(err)
	}
	same(back, "back on bbolt")
	for i, actor := range []string{"vera", "wes"} {
		got, err := engine.New(back, clock).ActorOf(ctx, engine.Subject{Kind: "oidc", ID: actor}, func() (string, error) { return actor, nil })
		if err != nil || got != actor+"-2" {
			t.Errorf("%d: a new subject wanting %s got %s, %v", i, actor, got, err)
		}
	}
}
