package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/pgstore"
	"github.com/reserve/reserve/internal/pgstore/pgtest"
	"github.com/reserve/reserve/internal/server/servertest"
)

// TestOutboxTwoDaemonsOnePostgres runs two daemons with the same
// --notify-url on one PostgreSQL schema. Both dispatchers deliver the same
// pending events (delivery is at least once, and receivers deduplicate by
// event id), so this test proves what that promise needs: every committed
// reservation and cancellation has exactly one event in the database, the
// receiver gets every one of those ids, whichever daemon committed it, and
// no id the database does not have.
func TestOutboxTwoDaemonsOnePostgres(t *testing.T) {
	dsn, _ := pgtest.FreshSchema(t)
	rcv := &eventReceiver{accepted: map[string]int{}, rng: rand.New(rand.NewPCG(3, 4))}
	hook := httptest.NewServer(rcv)
	t.Cleanup(hook.Close)
	short := servertest.ShortTempDir(t)
	ctx := context.Background()
	procs := make([]*proc, 2)
	clients := make([]*client.Client, 2)
	for i := range procs {
		procs[i] = startOnPostgres(t, dsn, filepath.Join(short, fmt.Sprintf("o%d.sock", i)), "", "--no-demo", "--notify-url", hook.URL)
		clients[i] = procs[i].socketClient()
	}
	if _, _, err := clients[0].PutWorkshop(ctx, "outbox", engine.WorkshopSpec{Capacity: 100, MaxQuantity: 2}, nil); err != nil {
		t.Fatal(err)
	}

	// Reservations through both daemons; every third one is cancelled
	// through the other daemon.
	const n = 24
	var reserved, cancelled int
	for i := range n {
		c := clients[i%2]
		status, body, _, err := c.Reserve(ctx, engine.OperationKey(uuid.NewString()), engine.Request{Workshop: "outbox", Quantity: 1})
		if err != nil || status != http.StatusCreated {
			t.Fatalf("reserve %d: %d %s %v", i, status, body, err)
		}
		reserved++
		if i%3 != 0 {
			continue
		}
		var a engine.Answer
		if err := json.Unmarshal(body, &a); err != nil {
			t.Fatal(err)
		}
		other := clients[(i+1)%2]
		if status, body, _, err := other.Cancel(ctx, engine.OperationKey(uuid.NewString()), a.ReservationID); err != nil || status != http.StatusOK {
			t.Fatalf("cancel %s: %d %s %v", a.ReservationID, status, body, err)
		}
		cancelled++
	}

	// The committed events, from the database both daemons share.
	s, err := pgstore.Open(ctx, dsn, pgstore.Options{NoMigrate: true, MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	events := map[string]engine.Event{}
	err = s.View(ctx, func(tx engine.Tx) error {
		return tx.ForEachEvent(func(ev engine.Event) error { events[ev.ID] = ev; return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != reserved+cancelled {
		t.Fatalf("%d events committed for %d reservations and %d cancellations, want one each", len(events), reserved, cancelled)
	}
	byType := map[string]int{}
	for _, ev := range events {
		byType[ev.Type]++
	}
	if byType[engine.EventReserved] != reserved || byType[engine.EventCancelled] != cancelled {
		t.Errorf("events by type %v, want %d confirmed and %d cancelled", byType, reserved, cancelled)
	}

	// Every event reaches the receiver, and the outbox empties.
	servertest.Eventually(t, time.Minute, "every committed event received and marked", func() bool {
		got, _ := rcv.ids()
		for id := range events {
			if !got[id] {
				return false
			}
		}
		pending := 0
		err := s.View(ctx, func(tx engine.Tx) error {
			return tx.ForEachPendingEvent(func(engine.Event) error { pending++; return nil })
		})
		if err != nil {
			t.Fatal(err)
		}
		return pending == 0
	})
	got, posts := rcv.ids()
	for id := range got {
		if _, ok := events[id]; !ok {
			t.Errorf("the receiver got event %s, which the database does not have", id)
		}
	}
	rcv.mu.Lock()
	twice := 0
	for _, k := range rcv.accepted {
		if k > 1 {
			twice++
		}
	}
	rcv.mu.Unlock()
	t.Logf("%d events committed, received in %d POSTs; %d delivered more than once (both daemons' dispatchers)", len(events), posts, twice)

	for i, p := range procs {
		if code := p.stop(t); code != 0 {
			t.Fatalf("daemon %d: exit code after SIGTERM = %d", i, code)
		}
	}
	out, err := exec.Command(reservedBin, "check", "--dsn", dsn).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "no findings") {
		t.Errorf("reserved check: %v\n%s", err, out)
	}
}
