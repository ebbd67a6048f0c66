package engine_test

import (
	"context"
	"testing"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/engine/memstore"
)

// TestAttackNumberedNameHasHistory: in a store written before bindings
// existed, uid 1003 (user "alice-2") reserved as unix-alice-2. After the
// upgrade uid 1000 binds unix-alice, then uid 1001 (a new account that
// reuses the name alice) is given the "fresh" name unix-alice-2, which is
// not fresh: it owns uid 1003's reservations. Then uid 1003 is bound to
// unix-alice-2-2, and its retry with the same key reserves a second time.
func TestAttackNumberedNameHasHistory(t *testing.T) {
	ctx := context.Background()
	eng := engine.New(memstore.New(memstore.Options{}), engine.WithExclusiveStore())
	if _, _, err := eng.PutWorkshop(ctx, "ws", engine.WorkshopSpec{Capacity: 10}, nil); err != nil {
		t.Fatal(err)
	}
	key := engine.OperationKey("3f1c2d4e-5a6b-4c7d-8e9f-0a1b2c3d4e5f")
	req := engine.Request{Workshop: "ws", Quantity: 1}
	// Before the upgrade: the actor was the name, no binding was stored.
	first, err := eng.Reserve(ctx, "unix-alice-2", key, req)
	if err != nil {
		t.Fatal(err)
	}
	name := func(n string) func() (string, error) { return func() (string, error) { return n, nil } }
	for _, c := range []struct {
		uid  uint32
		name string
	}{{1000, "unix-alice"}, {1001, "unix-alice"}} {
		if _, err := eng.ActorOf(ctx, engine.UIDSubject(c.uid), name(c.name)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := eng.ActorOf(ctx, engine.UIDSubject(1001), name("unix-alice"))
	if err != nil {
		t.Fatal(err)
	}
	owner, err := eng.ActorOf(ctx, engine.UIDSubject(1003), name("unix-alice-2"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("uid 1001 (new alice) is %s; uid 1003 (alice-2, who reserved as unix-alice-2) is %s", got, owner)
	retry, err := eng.Reserve(ctx, owner, key, req)
	if err != nil {
		t.Fatal(err)
	}
	if !retry.Replayed {
		t.Errorf("uid 1003's retry of its key as %s was decided again (%s, first %s): two reservations for one intent",
			owner, retry.Answer.JSON(), first.Answer.JSON())
	}
	if got == "unix-alice-2" {
		t.Errorf("uid 1001 was given unix-alice-2 as a fresh name, but that actor already has reservations")
	}
}
