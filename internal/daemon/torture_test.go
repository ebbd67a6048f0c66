package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server/servertest"
)

var tortureCycles = flag.Int("torture.cycles", 20, "how many times TestTortureKill9 kills the daemon with SIGKILL")

// The load of the torture test: a few small workshops that run full, so
// both 201 and 409 answers are decided while the daemon dies.
const (
	tortureClients   = 8
	tortureWorkshops = 3
	tortureCapacity  = 100
	// tortureIntentTimeout bounds how long one intent may stay unclear, in
	// particular across a restart; it only ends a hung test clearly.
	tortureIntentTimeout = 60 * time.Second
)

// answer is an authoritative answer to one reservation request.
type answer struct {
	status int
	body   []byte
}

// tortureClient is one concurrent client with its own actor and token. It
// owns its keys and remembers the first authoritative answer of each.
type tortureClient struct {
	actor string
	cs    []*client.Client // The daemons it may send to; each send picks one.
	rng   *rand.Rand
	keys  []engine.OperationKey
	reqs  map[engine.OperationKey]engine.Request
	first map[engine.OperationKey]answer
}

// TestTortureKill9 runs concurrent clients against a real reserved over TCP
// while the daemon is killed with SIGKILL at random moments and restarted,
// -torture.cycles times. Each client sends every intent with its own key
// until it gets an authoritative answer, across restarts, and now and then
// repeats a settled intent. Afterwards `reserved check` must be clean, every
// 201 any client saw must exist with the same reservation id, every key must
// have at most one reservation (and the reservations must be exactly the
// 201s), no workshop may be over capacity, and every key must still be
// answered with its first authoritative answer.
func TestTortureKill9(t *testing.T) {
	dir := t.TempDir()
	socket := filepath.Join(servertest.ShortTempDir(t), "t.sock")
	addr := freeAddr(t)
	args := []string{"--listen", addr, "--no-demo"}
	ctx := context.Background()

	p := start(t, dir, socket, args...)
	admin := p.socketClient()
	for i := range tortureWorkshops {
		spec := engine.WorkshopSpec{Capacity: tortureCapacity, MaxQuantity: 2}
		if _, _, err := admin.PutWorkshop(ctx, fmt.Sprintf("torture-%d", i), spec, nil); err != nil {
			t.Fatal(err)
		}
	}
	clients := make([]*tortureClient, tortureClients)
	for i := range clients {
		actor := fmt.Sprintf("client-%d", i)
		token, err := admin.CreateToken(ctx, actor, false)
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = &tortureClient{
			actor: actor,
			cs:    []*client.Client{{BaseURL: "http://" + addr, Token: token}},
			rng:   rand.New(rand.NewPCG(rand.Uint64(), uint64(i))),
			reqs:  map[engine.OperationKey]engine.Request{},
			first: map[engine.OperationKey]answer{},
		}
	}

	l := newLoad(tortureClients)
	for _, tc := range clients {
		l.goClient(tc.run)
	}
	for cycle := range *tortureCycles {
		// Kill at a random moment: right after the start, or once the
		// clients have had a random number of answers from this daemon.
		l.waitAnswers(t, rand.Int64N(40), fmt.Sprintf("cycle %d: answers", cycle))
		p = killAndRestart(t, p, func() *proc { return start(t, dir, socket, args...) })
	}
	l.end(t)
	db := filepath.Join(dir, "reserved.db")
	verifyTortured(t, clients, func() engine.Store {
		if code := p.stop(t); code != 0 {
			t.Fatalf("exit code after SIGTERM = %d", code)
		}
		s, err := boltstore.Open(db, boltstore.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}, "--db", db)
	t.Logf("%d kills, %d unclear answers retried", *tortureCycles, l.unclear.Load())
	if l.unclear.Load() == 0 {
		t.Error("no answer was lost to a kill, so nothing was proven")
	}
}

// load runs concurrent clients and counts their authoritative and unclear
// answers, so a test can kill daemons at moments chosen by progress.
type load struct {
	answers, unclear atomic.Int64
	stop             chan struct{}
	errs             chan error
	wg               sync.WaitGroup
}

// client is the loop of one client of a load: it runs until stop is closed.
type loadClient func(stop <-chan struct{}, answers, unclear *atomic.Int64) error

func newLoad(clients int) *load {
	return &load{stop: make(chan struct{}), errs: make(chan error, clients)}
}

// goClient starts one client.
func (l *load) goClient(run loadClient) {
	l.wg.Go(func() { l.errs <- run(l.stop, &l.answers, &l.unclear) })
}

// waitAnswers waits until the clients have had n more answers, and fails the
// test as soon as a client fails.
func (l *load) waitAnswers(t *testing.T, n int64, what string) {
	t.Helper()
	target := l.answers.Load() + n
	servertest.Eventually(t, tortureIntentTimeout, what, func() bool {
		if len(l.errs) > 0 {
			t.Fatalf("%s: a client failed: %v", what, <-l.errs)
		}
		return l.answers.Load() >= target
	})
}

// end stops the clients and fails the test if any of them failed.
func (l *load) end(t *testing.T) {
	t.Helper()
	close(l.stop)
	l.wg.Wait()
	close(l.errs)
	for err := range l.errs {
		if err != nil {
			t.Error(err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// killAndRestart kills p with SIGKILL, waits for it to die and returns the
// daemon restart starts.
func killAndRestart(t *testing.T, p *proc, restart func() *proc) *proc {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
	return restart()
}

// verifyTortured checks the promise after a torture run, while the daemons
// still serve the clients: every key is answered with its first
// authoritative answer again, and the reservation of each 201 exists with
// the same id. Then stopped stops the daemons and returns the store, in
// which every key must have at most one reservation and the reservations
// must be exactly the 201s, no workshop may be over capacity, and `reserved
// check` with checkArgs must find nothing.
func verifyTortured(t *testing.T, clients []*tortureClient, stopped func() engine.Store, checkArgs ...string) {
	t.Helper()
	ctx := context.Background()
	reserved := map[string]string{} // Reservation id → actor/key.
	keys := 0
	for _, tc := range clients {
		keys += len(tc.keys)
		for _, key := range tc.keys {
			want := tc.first[key]
			status, body, replayed, err := tc.pick().Reserve(ctx, key, tc.reqs[key])
			if err != nil || !replayed || status != want.status || !bytes.Equal(body, want.body) {
				t.Errorf("%s %s: final answer %d %s (replayed %v, %v), first was %d %s", tc.actor, key, status, body, replayed, err, want.status, want.body)
			}
			if want.status != http.StatusCreated {
				continue
			}
			id := reservationID(t, want.body)
			r, err := tc.pick().Reservation(ctx, id)
			if err != nil || r.OperationKey != key || r.Actor != tc.actor || r.Workshop != tc.reqs[key].Workshop || r.Quantity != tc.reqs[key].Quantity {
				t.Errorf("%s %s: reservation %s = %+v, %v", tc.actor, key, id, r, err)
			}
			reserved[id] = tc.actor + "/" + string(key)
		}
	}

	st := stopped()
	if out, err := exec.Command(reservedBin, append([]string{"check"}, checkArgs...)...).CombinedOutput(); err != nil {
		t.Errorf("reserved check: %v\n%s", err, out)
	}
	perKey := map[string]int{}
	err := st.View(ctx, func(tx engine.Tx) error {
		err := tx.ForEachWorkshop(func(w engine.Workshop) error {
			if w.Reserved > w.Capacity {
				t.Errorf("workshop %s is over capacity: %+v", w.ID, w)
			}
			return nil
		})
		if err != nil {
			return err
		}
		return tx.ForEachReservation(func(r engine.Reservation) error {
			k := r.Actor + "/" + string(r.OperationKey)
			perKey[k]++
			if reserved[r.ID] != k {
				t.Errorf("reservation %s of %s was never answered with a 201 (the 201 named %q)", r.ID, k, reserved[r.ID])
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	for k, n := range perKey {
		if n > 1 {
			t.Errorf("key %s has %d reservations", k, n)
		}
	}
	if len(perKey) != len(reserved) {
		t.Errorf("%d keys have a reservation, %d were answered with a 201", len(perKey), len(reserved))
	}
	t.Logf("%d intents, %d of them reserved; all verified", keys, len(reserved))
	if len(reserved) == 0 {
		t.Error("no intent was reserved, so nothing was proven")
	}
}

// pick returns the client of a random daemon of tc's.
func (tc *tortureClient) pick() *client.Client {
	if len(tc.cs) == 1 {
		return tc.cs[0]
	}
	return tc.cs[tc.rng.IntN(len(tc.cs))]
}

// run sends intents until stop is closed, then settles its open intent and
// returns. Each intent is sent until it gets an authoritative answer; about
// one in five sends repeats a settled intent, whose answer must not change.
func (tc *tortureClient) run(stop <-chan struct{}, answers, unclear *atomic.Int64) error {
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		if len(tc.keys) > 0 && tc.rng.IntN(5) == 0 {
			key := tc.keys[tc.rng.IntN(len(tc.keys))]
			a, err := tc.settle(key, unclear)
			if err != nil {
				return err
			}
			if want := tc.first[key]; a.status != want.status || !bytes.Equal(a.body, want.body) {
				return fmt.Errorf("%s %s: repeat answered %d %s, first answer was %d %s", tc.actor, key, a.status, a.body, want.status, want.body)
			}
			answers.Add(1)
			continue
		}
		key := engine.OperationKey(uuid.NewString())
		tc.keys = append(tc.keys, key)
		tc.reqs[key] = engine.Request{Workshop: fmt.Sprintf("torture-%d", tc.rng.IntN(tortureWorkshops)), Quantity: 1 + tc.rng.IntN(2)}
		a, err := tc.settle(key, unclear)
		if err != nil {
			return err
		}
		tc.first[key] = a
		answers.Add(1)
	}
}

// settle sends key until it gets an authoritative answer: a 201 or 409 with
// its JSON body. Unclear answers (the daemon is dead or restarting, the
// connection broke, a 5xx) are retried with the same key, a few
// milliseconds apart, until tortureIntentTimeout.
func (tc *tortureClient) settle(key engine.OperationKey, unclear *atomic.Int64) (answer, error) {
	deadline := time.Now().Add(tortureIntentTimeout)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		status, body, _, err := tc.pick().Reserve(ctx, key, tc.reqs[key])
		cancel()
		if err == nil {
			return answer{status, body}, nil
		}
		if !client.Undecided(status, err) {
			return answer{}, fmt.Errorf("%s %s: refused: %w", tc.actor, key, err)
		}
		unclear.Add(1)
		if time.Now().After(deadline) {
			return answer{}, fmt.Errorf("%s %s: no authoritative answer within %v: %w", tc.actor, key, tortureIntentTimeout, err)
		}
		<-tick.C
	}
}

// freeAddr returns a loopback TCP address that was free a moment ago, so a
// restarted daemon can listen where the clients already send.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// reservationID returns the reservation id of a 201 answer body.
func reservationID(t *testing.T, body []byte) string {
	t.Helper()
	var a engine.Answer
	if err := json.Unmarshal(body, &a); err != nil || a.ReservationID == "" {
		t.Fatalf("201 body %s: %v", body, err)
	}
	return a.ReservationID
}
