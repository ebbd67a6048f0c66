package migrate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/migrate"
	"github.com/reserve/reserve/internal/pgstore"
	"github.com/reserve/reserve/internal/pgstore/pgtest"
)

func TestMain(m *testing.M) {
	pgtest.Announce()
	os.Exit(m.Run())
}

// intent is one operation of the source and its first answer.
type intent struct {
	actor  string
	key    engine.OperationKey
	req    engine.Request
	answer engine.Answer
}

// source builds a bbolt store with every kind of record: workshops,
// reservations (one cancelled), an unavailable receipt, a cancel receipt,
// a tombstone, credentials, delivered and pending events, and a binding of
// uid 1000 to unix-alice.
func source(t *testing.T) (s *boltstore.Store, intents []intent, token string, expired intent) {
	t.Helper()
	s = newBolt(t, "from.db")
	ctx := context.Background()
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	eng := engine.New(s, engine.WithClock(func() time.Time { return now }))
	for id, capacity := range map[string]int{"go-basics": 3, "rust-basics": 10} {
		if _, _, err := eng.PutWorkshop(ctx, id, engine.WorkshopSpec{Capacity: capacity, MaxQuantity: 2}, nil); err != nil {
			t.Fatal(err)
		}
	}
	reserve := func(actor, workshop string, quantity int) intent {
		it := intent{actor: actor, key: engine.OperationKey(uuid.NewString()), req: engine.Request{Workshop: workshop, Quantity: quantity}}
		out, err := eng.Reserve(ctx, actor, it.key, it.req)
		if err != nil {
			t.Fatal(err)
		}
		it.answer = out.Answer
		intents = append(intents, it)
		return it
	}
	expired = reserve("alice", "rust-basics", 1)
	now = now.Add(48 * time.Hour)
	if n, err := eng.ExpireReceipts(ctx, 24*time.Hour, 100); err != nil || n != 1 {
		t.Fatalf("ExpireReceipts = %d, %v", n, err)
	}
	intents = intents[:0] // The old key now answers 410 operation_expired.
	first := reserve("alice", "go-basics", 2)
	reserve("bob", "go-basics", 2) // Unavailable.
	reserve("bob", "rust-basics", 2)
	var ans engine.Answer
	if err := json.Unmarshal(first.answer.JSON(), &ans); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Cancel(ctx, engine.Principal{Actor: "alice"}, engine.OperationKey(uuid.NewString()), ans.ReservationID); err != nil {
		t.Fatal(err)
	}
	pending, err := eng.PendingEvents(ctx, 1)
	if err != nil || len(pending) != 1 {
		t.Fatalf("PendingEvents = %v, %v", pending, err)
	}
	if err := eng.MarkDelivered(ctx, pending[0].ID); err != nil {
		t.Fatal(err)
	}
	token, err = eng.CreateToken(ctx, "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.ActorOf(ctx, engine.UIDSubject(1000), func() (string, error) { return "unix-alice", nil }); err != nil {
		t.Fatal(err)
	}
	name, lang := "Alice Liddell", "de"
	if _, err := eng.ChangeProfile(ctx, "alice", engine.ProfileChange{DisplayName: &name, Language: &lang}); err != nil {
		t.Fatal(err)
	}
	return s, intents, token, expired
}

// newBolt opens a new bbolt store named name, closed when t ends.
func newBolt(t *testing.T, name string) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), name), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// newPostgres opens a store on a new, empty PostgreSQL schema, closed
// when t ends.
func newPostgres(t *testing.T) *pgstore.Store {
	t.Helper()
	dsn, _ := pgtest.FreshSchema(t)
	s, err := pgstore.Open(context.Background(), dsn, pgstore.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func counts(t *testing.T, s engine.Store) migrate.Counts {
	t.Helper()
	var c migrate.Counts
	err := s.View(context.Background(), func(tx engine.Tx) error {
		for _, scan := range []func() error{
			func() error { return tx.ForEachWorkshop(func(engine.Workshop) error { c.Workshops++; return nil }) },
			func() error {
				return tx.ForEachReservation(func(engine.Reservation) error { c.Reservations++; return nil })
			},
			func() error { return tx.ForEachReceipt(func(engine.Receipt) error { c.Receipts++; return nil }) },
			func() error { return tx.ForEachTombstone(func(engine.Tombstone) error { c.Tombstones++; return nil }) },
			func() error { return tx.ForEachToken(func(engine.TokenRecord) error { c.Tokens++; return nil }) },
			func() error { return tx.ForEachEvent(func(engine.Event) error { c.Events++; return nil }) },
			func() error { return tx.ForEachBinding(func(engine.Binding) error { c.Bindings++; return nil }) },
			func() error { return tx.ForEachProfile(func(engine.Profile) error { c.Profiles++; return nil }) },
			func() error {
				return tx.ForEachWebhookEndpoint(func(engine.WebhookEndpoint) error { c.Webhooks++; return nil })
			},
			func() error {
				for _, state := range engine.DeliveryStates {
					if err := tx.ForEachDeliveryIn(state, "", func(engine.Delivery) error { c.Deliveries++; return nil }); err != nil {
						return err
					}
				}
				return nil
			},
			func() error { return tx.ForEachWaitEntry(func(engine.WaitEntry) error { c.WaitEntries++; return nil }) },
		} {
			if err := scan(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// testCopy copies a full source into the empty store to and proves that the
// target keeps every promise of the source.
func testCopy(t *testing.T, to engine.Store) {
	from, intents, token, expired := source(t)
	ctx := context.Background()
	want := counts(t, from)
	if want.Tombstones != 1 || want.Events < 4 || want.Tokens != 1 || want.Bindings != 1 || want.Profiles != 1 {
		t.Fatalf("source lacks a kind of record: %v", want)
	}
	got, err := migrate.Copy(ctx, from, to)
	if err != nil {
		t.Fatal(err)
	}
	if got != want || counts(t, to) != want {
		t.Fatalf("copied %v, target holds %v, source holds %v", got, counts(t, to), want)
	}
	findings, err := engine.Check(ctx, to)
	if err != nil || len(findings) != 0 {
		t.Fatalf("Check of the target = %v, %v", findings, err)
	}
	eng := engine.New(to)
	for _, it := range intents {
		out, err := eng.Reserve(ctx, it.actor, it.key, it.req)
		if err != nil || !out.Replayed || out.Answer != it.answer || !bytes.Equal(out.Answer.JSON(), it.answer.JSON()) {
			t.Errorf("%s %s after the move: %+v %s replayed=%v %v; want %+v %s", it.actor, it.key, out.Answer, out.Answer.JSON(), out.Replayed, err, it.answer, it.answer.JSON())
		}
	}
	if _, err := eng.Reserve(ctx, expired.actor, expired.key, expired.req); engine.ErrorCode(err) != engine.CodeOperationExpired {
		t.Errorf("expired key after the move: %v, want %s", err, engine.CodeOperationExpired)
	}
	if p, err := eng.Authenticate(ctx, token); err != nil || p.Actor != "alice" {
		t.Errorf("token after the move: %+v, %v", p, err)
	}
	// uid 1000 keeps its actor, whatever its name is now.
	if actor, err := eng.ActorOf(ctx, engine.UIDSubject(1000), func() (string, error) { return "unix-renamed", nil }); err != nil || actor != "unix-alice" {
		t.Errorf("uid 1000 after the move is %s, %v; want unix-alice", actor, err)
	}
	srcPending, _ := engine.New(from).CountPendingEvents(ctx)
	if n, err := eng.CountPendingEvents(ctx); err != nil || n != srcPending {
		t.Errorf("pending events after the move = %d, %v; want %d", n, err, srcPending)
	}

	// A second copy into the now non-empty target is refused and changes
	// nothing.
	if _, err := migrate.Copy(ctx, from, to); !errors.Is(err, migrate.ErrNotEmpty) {
		t.Fatalf("copy into a non-empty target: %v", err)
	}
	if counts(t, to) != want {
		t.Fatalf("a refused copy changed the target: %v", counts(t, to))
	}
}

func TestCopyToBolt(t *testing.T) { testCopy(t, newBolt(t, "to.db")) }

func TestCopyToPostgres(t *testing.T) { testCopy(t, newPostgres(t)) }

func TestRefusesEveryKindOfRecord(t *testing.T) {
	from, _, _, _ := source(t)
	ctx := context.Background()
	for _, kind := range []string{"workshops", "credentials", "bindings", "waiting list entries"} {
		to, err := boltstore.Open(filepath.Join(t.TempDir(), kind+".db"), boltstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		eng := engine.New(to)
		switch kind {
		case "workshops":
			_, _, err = eng.PutWorkshop(ctx, "other", engine.WorkshopSpec{Capacity: 1}, nil)
		case "credentials":
			_, err = eng.CreateToken(ctx, "carol", false)
		case "bindings":
			_, err = eng.ActorOf(ctx, engine.UIDSubject(1001), func() (string, error) { return "unix-carol", nil })
		case "waiting list entries":
			err = to.Update(ctx, func(tx engine.Tx) error {
				return tx.PutWaitEntry(engine.WaitEntry{ID: "01a236fbc1ea58a209fdd19e1bd08adb", Actor: "carol", OperationKey: engine.OperationKey(uuid.NewString()),
					Workshop: "go-basics", Quantity: 1, State: engine.WaitLeft, CreatedAt: time.Now().UTC()})
			})
		}
		if err != nil {
			t.Fatal(err)
		}
		_, err = migrate.Copy(ctx, from, to)
		if !errors.Is(err, migrate.ErrNotEmpty) || !bytes.Contains([]byte(err.Error()), []byte("it holds "+kind)) {
			t.Errorf("copy into a target with %s: %v", kind, err)
		}
		to.Close()
	}
}
