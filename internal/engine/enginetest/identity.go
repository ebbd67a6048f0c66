package enginetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/reserve/reserve/internal/engine"
)

// name returns a wanted-name function for ActorOf that answers actor and
// counts its calls in calls.
func name(actor string, calls *atomic.Int32) func() (string, error) {
	return func() (string, error) {
		calls.Add(1)
		return actor, nil
	}
}

// mustActorOf binds (or looks up) subject with wanted and returns its
// actor.
func (h *harness) mustActorOf(eng *engine.Engine, subject engine.Subject, wanted func() (string, error)) string {
	h.t.Helper()
	actor, err := eng.ActorOf(h.ctx, subject, wanted)
	if err != nil {
		h.t.Fatalf("ActorOf(%s): %v", subject, err)
	}
	return actor
}

// bindings returns every binding of the store in its order.
func (h *harness) bindings() []engine.Binding {
	h.t.Helper()
	var all []engine.Binding
	err := h.store.View(h.ctx, func(tx engine.Tx) error {
		all = all[:0]
		return tx.ForEachBinding(func(b engine.Binding) error { all = append(all, b); return nil })
	})
	if err != nil {
		h.t.Fatalf("ForEachBinding: %v", err)
	}
	return all
}

// testBindingIsStable: a subject seen for the first time is bound to the
// name it wants then, and keeps that actor whatever it wants later, also
// when its name cannot be had at all, and for an engine that has never
// seen it (the binding is stored, not remembered).
func testBindingIsStable(t *testing.T, h *harness) {
	uid := engine.UIDSubject(55555)
	var calls atomic.Int32
	if got := h.mustActorOf(h.eng, uid, name("unix-ghost", &calls)); got != "unix-ghost" || calls.Load() != 1 {
		t.Fatalf("first binding = %s after %d calls of wanted, want unix-ghost after 1", got, calls.Load())
	}
	renamed := h.mustActorOf(h.eng, uid, name("unix-ghost2", &calls))
	failing := h.mustActorOf(h.eng, uid, func() (string, error) {
		return "", engine.Errorf(engine.CodeIdentityUnavailable, "the user database fails")
	})
	fresh := h.mustActorOf(h.engineOn(h.store), uid, name("uid-55555", &calls))
	if renamed != "unix-ghost" || failing != "unix-ghost" || fresh != "unix-ghost" {
		t.Fatalf("after a rename %s, with a failing user database %s, on a fresh engine %s; want unix-ghost each time", renamed, failing, fresh)
	}
	if calls.Load() != 1 {
		t.Errorf("wanted was called %d times, want once: a bound subject needs no name", calls.Load())
	}
	want := engine.Binding{Kind: engine.SubjectUID, Subject: "55555", Actor: "unix-ghost", CreatedAt: h.now()}
	if got := h.bindings(); len(got) != 1 || !got[0].CreatedAt.Equal(want.CreatedAt) || got[0].Of() != want.Of() || got[0].Actor != want.Actor {
		t.Fatalf("bindings = %+v, want only %+v", got, want)
	}
	err := h.store.View(h.ctx, func(tx engine.Tx) error {
		b, ok, err := tx.Binding(engine.SubjectUID, "55555")
		if err != nil || !ok || b.Actor != "unix-ghost" {
			return fmt.Errorf("Binding(uid, 55555) = %+v, %t, %v", b, ok, err)
		}
		b, ok, err = tx.BindingOfActor("unix-ghost")
		if err != nil || !ok || b.Of() != uid {
			return fmt.Errorf("BindingOfActor(unix-ghost) = %+v, %t, %v", b, ok, err)
		}
		for _, absent := range []func() (engine.Binding, bool, error){
			func() (engine.Binding, bool, error) { return tx.Binding(engine.SubjectUID, "55556") },
			func() (engine.Binding, bool, error) { return tx.Binding("other", "55555") },
			func() (engine.Binding, bool, error) { return tx.BindingOfActor("unix-ghost2") },
		} {
			if b, ok, err := absent(); err != nil || ok {
				return fmt.Errorf("a lookup of what is not bound = %+v, %t, %v", b, ok, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// testBindingNamesAreNeverReused: a subject whose wanted name another
// subject holds gets the first free numbered name, shortened to fit an
// actor name, and the holder keeps its name.
func testBindingNamesAreNeverReused(t *testing.T, h *harness) {
	var calls atomic.Int32
	long := "unix-" + strings.Repeat("x", 36) // 41 characters, the longest actor name.
	cases := []struct {
		uid          uint32
		wanted, want string
	}{
		{1000, "unix-alice", "unix-alice"},
		{1001, "unix-alice", "unix-alice-2"},
		{1002, "unix-alice", "unix-alice-3"},
		{1003, "unix-alice-2", "unix-alice-2-2"},
		{1004, long, long},
		{1005, long, long[:39] + "-2"},
		{1006, long, long[:39] + "-3"},
	}
	for _, c := range cases {
		got := h.mustActorOf(h.eng, engine.UIDSubject(c.uid), name(c.wanted, &calls))
		if got != c.want || engine.ValidateActor(got) != nil {
			t.Errorf("uid %d wanting %s is bound to %s, want %s", c.uid, c.wanted, got, c.want)
		}
	}
	for _, c := range cases {
		if got := h.mustActorOf(h.engineOn(h.store), engine.UIDSubject(c.uid), name("unix-other", &calls)); got != c.want {
			t.Errorf("uid %d is bound to %s on a second look, want %s", c.uid, got, c.want)
		}
	}
	if got := len(h.bindings()); got != len(cases) {
		t.Errorf("%d bindings, want %d", got, len(cases))
	}
}

// testBindingWaitsForAName: while wanted fails, nothing is bound and its
// error is returned as it is; once it answers, the subject is bound. A
// wanted name that is not an actor name binds nothing either.
func testBindingWaitsForAName(t *testing.T, h *harness) {
	uid := engine.UIDSubject(4242)
	_, err := h.eng.ActorOf(h.ctx, uid, func() (string, error) {
		return "", engine.Errorf(engine.CodeIdentityUnavailable, "the user database fails")
	})
	wantCode(t, err, engine.CodeIdentityUnavailable)
	if _, err := h.eng.ActorOf(h.ctx, uid, func() (string, error) { return "Not An Actor", nil }); err == nil {
		t.Fatal("a subject was bound to a name that is not an actor name")
	}
	if got := h.bindings(); len(got) != 0 {
		t.Fatalf("bindings after failed binds = %+v, want none", got)
	}
	var calls atomic.Int32
	if got := h.mustActorOf(h.eng, uid, name("uid-4242", &calls)); got != "uid-4242" {
		t.Fatalf("binding once the name is known = %s, want uid-4242", got)
	}
}

// testAddBindingRefusesBound: a store refuses a second binding of a bound
// subject and a binding of a bound actor to another subject, and keeps
// the first binding as it was.
func testAddBindingRefusesBound(t *testing.T, h *harness) {
	var calls atomic.Int32
	h.mustActorOf(h.eng, engine.UIDSubject(1000), name("unix-alice", &calls))
	first := h.bindings()
	for _, b := range []engine.Binding{
		{Kind: engine.SubjectUID, Subject: "1000", Actor: "unix-mallory", CreatedAt: h.now()},
		{Kind: engine.SubjectUID, Subject: "1001", Actor: "unix-alice", CreatedAt: h.now()},
	} {
		if err := h.store.Update(h.ctx, func(tx engine.Tx) error { return tx.AddBinding(b) }); err == nil {
			t.Errorf("AddBinding(%+v) succeeded over %+v", b, first)
		}
	}
	if got := h.bindings(); len(got) != 1 || got[0].Actor != "unix-alice" || got[0].Of() != first[0].Of() {
		t.Fatalf("bindings after refused adds = %+v, want %+v", got, first)
	}
}

// testConcurrentBindsAgree: engines that share nothing but the store (as
// daemons on one database do) binding one new subject at once all get one
// actor, and new subjects wanting one name at once all get distinct
// actors.
func testConcurrentBindsAgree(t *testing.T, h *harness) {
	const n = 16
	same, shared := make([]string, n), make([]string, n)
	errs := make([]error, 2*n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			eng := h.engineOn(h.store)
			same[i], errs[i] = eng.ActorOf(h.ctx, engine.UIDSubject(2000), func() (string, error) { return "unix-bob", nil })
		})
		wg.Go(func() {
			eng := h.engineOn(h.store)
			shared[i], errs[n+i] = eng.ActorOf(h.ctx, engine.UIDSubject(uint32(3000+i)), func() (string, error) { return "unix-carol", nil })
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i := range n {
		if same[i] != "unix-bob" {
			t.Errorf("concurrent bind %d of uid 2000 = %s, want unix-bob", i, same[i])
		}
		if seen[shared[i]] || !strings.HasPrefix(shared[i], "unix-carol") {
			t.Errorf("uid %d is bound to %s, which is taken or not unix-carol[-n]", 3000+i, shared[i])
		}
		seen[shared[i]] = true
	}
	if got := len(h.bindings()); got != n+1 {
		t.Errorf("%d bindings, want %d", got, n+1)
	}
}

// testCheckFindsBrokenBindings: a binding to a name that is not an actor
// name is reported.
func testCheckFindsBrokenBindings(t *testing.T, h *harness) {
	var calls atomic.Int32
	h.mustActorOf(h.eng, engine.UIDSubject(1000), name("unix-alice", &calls))
	h.mustCheckClean()
	bad := engine.Binding{Kind: engine.SubjectUID, Subject: "1001", Actor: "Not An Actor", CreatedAt: h.now()}
	if err := h.store.Update(h.ctx, func(tx engine.Tx) error { return tx.AddBinding(bad) }); err != nil {
		t.Fatal(err)
	}
	findings, err := engine.CheckAt(h.ctx, h.store, h.now())
	if err != nil || len(findings) != 1 || findings[0].Kind != engine.FindingBinding {
		t.Fatalf("Check = %v, %v; want one %s", findings, err, engine.FindingBinding)
	}
}

// testBindingNumbersSkipHistory: in a store written before bindings
// existed, actors were named by the user name alone. A made-up numbered
// name that already has history (a user "alice-2" reserved as
// unix-alice-2, a user "alice-3" was answered unavailable as unix-alice-3)
// is not given to a new subject; the subject whose name it is finds its
// own receipts under it, and its retries replay.
func testBindingNumbersSkipHistory(t *testing.T, h *harness) {
	h.workshop("ws", 1, 1)
	kReserved, kUnavailable := newKey(), newKey()
	first := h.mustReserve("unix-alice-2", kReserved, "ws", 1)
	refused := h.mustReserve("unix-alice-3", kUnavailable, "ws", 1)
	if first.Answer.Status != engine.StatusReserved || refused.Answer.Status != engine.StatusUnavailable {
		t.Fatalf("history: %s, %s", first.Answer.JSON(), refused.Answer.JSON())
	}
	var calls atomic.Int32
	for _, c := range []struct {
		uid          uint32
		wanted, want string
	}{
		{1000, "unix-alice", "unix-alice"},
		{1001, "unix-alice", "unix-alice-4"}, // -2 and -3 have history.
		{1003, "unix-alice-2", "unix-alice-2"},
		{1004, "unix-alice-3", "unix-alice-3"},
	} {
		if got := h.mustActorOf(h.eng, engine.UIDSubject(c.uid), name(c.wanted, &calls)); got != c.want {
			t.Fatalf("uid %d wanting %s is bound to %s, want %s", c.uid, c.wanted, got, c.want)
		}
	}
	for _, c := range []struct {
		actor string
		key   engine.OperationKey
		want  engine.Outcome
	}{{"unix-alice-2", kReserved, first}, {"unix-alice-3", kUnavailable, refused}} {
		again := h.mustReserve(c.actor, c.key, "ws", 1)
		if !again.Replayed || string(again.Answer.JSON()) != string(c.want.Answer.JSON()) {
			t.Errorf("the retry of %s = %s (replayed %t), want the replay of %s", c.actor, again.Answer.JSON(), again.Replayed, c.want.Answer.JSON())
		}
	}
}
