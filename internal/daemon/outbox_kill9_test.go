package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server/servertest"
)

// eventReceiver is the --notify-url of the outbox tests: it counts the
// distinct event ids it accepted and refuses one delivery in five with a
// 503, so the dispatcher's retries are exercised too.
type eventReceiver struct {
	mu       sync.Mutex
	accepted map[string]int
	posts    int
	rng      *rand.Rand
}

func (r *eventReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.posts++
	if r.rng.IntN(5) == 0 {
		http.Error(w, "try again", http.StatusServiceUnavailable)
		return
	}
	r.accepted[req.Header.Get("Idempotency-Key")]++
}

// ids returns the distinct ids accepted so far and the number of POSTs.
func (r *eventReceiver) ids() (map[string]bool, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := map[string]bool{}
	for id := range r.accepted {
		ids[id] = true
	}
	return ids, r.posts
}

// TestOutboxKill9 reserves and cancels with several clients while reserved,
// started with --notify-url, is killed with SIGKILL and restarted. Then the
// database must hold exactly one confirmation event per reservation and per
// cancellation and none for anything rolled back (reserved check), and the
// receiver must have got every one of those event ids and no other id.
func TestOutboxKill9(t *testing.T) {
	rcv := &eventReceiver{accepted: map[string]int{}, rng: rand.New(rand.NewPCG(1, 2))}
	hook := httptest.NewServer(rcv)
	t.Cleanup(hook.Close)
	dir := t.TempDir()
	socket := filepath.Join(servertest.ShortTempDir(t), "o.sock")
	addr := freeAddr(t)
	args := []string{"--listen", addr, "--no-demo", "--notify-url", hook.URL}
	ctx := context.Background()
	p := start(t, dir, socket, args...)
	admin := p.socketClient()
	if _, _, err := admin.PutWorkshop(ctx, "outbox", engine.WorkshopSpec{Capacity: 20, MaxQuantity: 2}, nil); err != nil {
		t.Fatal(err)
	}
	const clients = 4
	l := newLoad(clients)
	for i := range clients {
		token, err := admin.CreateToken(ctx, fmt.Sprintf("outbox-%d", i), false)
		if err != nil {
			t.Fatal(err)
		}
		c := &client.Client{BaseURL: "http://" + addr, Token: token}
		rng := rand.New(rand.NewPCG(rand.Uint64(), uint64(i)))
		l.goClient(func(stop <-chan struct{}, answers, unclear *atomic.Int64) error {
			return reserveAndCancel(c, rng, stop, answers, unclear)
		})
	}
	for cycle := range 8 {
		l.waitAnswers(t, 1+rand.Int64N(30), fmt.Sprintf("cycle %d: answers", cycle))
		p = killAndRestart(t, p, func() *proc { return start(t, dir, socket, args...) })
	}
	l.end(t)

	// The committed events, read from the stopped daemon's database.
	db := filepath.Join(dir, "reserved.db")
	committed := func() map[string]bool {
		if code := p.stop(t); code != 0 {
			t.Fatalf("exit code after SIGTERM = %d", code)
		}
		s, err := boltstore.Open(db, boltstore.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		findings, err := s.Check(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range findings {
			t.Errorf("check: %s", f)
		}
		ids := map[string]bool{}
		err = s.View(ctx, func(tx engine.Tx) error {
			return tx.ForEachEvent(func(ev engine.Event) error { ids[ev.ID] = true; return nil })
		})
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	events := committed()
	// A last daemon delivers whatever the kills left pending.
	p = start(t, dir, socket, args...)
	servertest.Eventually(t, time.Minute, "every committed event received", func() bool {
		got, _ := rcv.ids()
		for id := range events {
			if !got[id] {
				return false
			}
		}
		return true
	})
	if again := committed(); len(again) != len(events) {
		t.Fatalf("the idle daemon committed %d new events", len(again)-len(events))
	}
	got, posts := rcv.ids()
	for id := range got {
		if !events[id] {
			t.Errorf("the receiver got event %s, which the database does not have", id)
		}
	}
	if len(events) == 0 || l.unclear.Load() == 0 {
		t.Fatalf("%d events, %d unclear answers: nothing was proven", len(events), l.unclear.Load())
	}
	t.Logf("%d events committed and received in %d POSTs; %d unclear answers retried", len(events), posts, l.unclear.Load())
}

// reserveAndCancel reserves one place after another, cancels about half of
// its reservations, and repeats every unclear send with the same key.
func reserveAndCancel(c *client.Client, rng *rand.Rand, stop <-chan struct{}, answers, unclear *atomic.Int64) error {
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		key := engine.OperationKey(uuid.NewString())
		req := engine.Request{Workshop: "outbox", Quantity: 1}
		status, body, err := untilAnswered(unclear, func(ctx context.Context) (int, []byte, bool, error) { return c.Reserve(ctx, key, req) })
		if err != nil {
			return err
		}
		answers.Add(1)
		if status != http.StatusCreated || rng.IntN(2) == 0 {
			continue
		}
		var a engine.Answer
		if err := json.Unmarshal(body, &a); err != nil {
			return err
		}
		ckey := engine.OperationKey(uuid.NewString())
		if _, _, err := untilAnswered(unclear, func(ctx context.Context) (int, []byte, bool, error) { return c.Cancel(ctx, ckey, a.ReservationID) }); err != nil {
			return err
		}
		answers.Add(1)
	}
}

// untilAnswered repeats send until it gets an authoritative answer.
func untilAnswered(unclear *atomic.Int64, send func(context.Context) (int, []byte, bool, error)) (int, []byte, error) {
	deadline := time.Now().Add(tortureIntentTimeout)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		status, body, _, err := send(ctx)
		cancel()
		if err == nil {
			return status, body, nil
		}
		if !client.Undecided(status, err) {
			return 0, nil, fmt.Errorf("refused: %w", err)
		}
		unclear.Add(1)
		if time.Now().After(deadline) {
			return 0, nil, fmt.Errorf("no authoritative answer within %v: %w", tortureIntentTimeout, err)
		}
		<-tick.C
	}
}
