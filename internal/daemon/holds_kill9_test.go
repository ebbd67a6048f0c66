package daemon_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server/servertest"
)

var holdKills = flag.Int("holds.kills", 8, "how many times TestHoldsKill9 kills the daemon with SIGKILL")

// The load of the holds kill test: small workshops that run full, so that
// holds and reservations are both made and refused, and holds are
// confirmed and released, while the daemon dies.
const (
	holdClients   = 6
	holdWorkshops = 2
	holdCapacity  = 40
)

// holdOp is one operation a hold client sent under its own key, and the
// first authoritative answer it got.
type holdOp struct {
	key   engine.OperationKey
	op    client.Operation
	first answer
	res   client.Result
}

// holdClient is one concurrent client of the holds kill test, with its own
// actor and token.
type holdClient struct {
	actor string
	c     *client.Client
	rng   *rand.Rand
	ops   []*holdOp
	open  []string // Holds it made and has not confirmed or released.
	done  []string // Holds it confirmed or released.
}

// TestHoldsKill9 runs concurrent clients that reserve, hold, confirm and
// release against a real reserved over TCP while the daemon is killed with
// SIGKILL at random moments and restarted, -holds.kills times. Each client
// sends every operation with its own key until it gets an authoritative
// answer, across restarts, and now and then repeats a settled one, whose
// answer must not change. Afterwards every operation must replay its first
// answer byte for byte, `reserved check` must find nothing (reserved plus
// held within capacity, one reservation per confirmed hold, …), and the
// store must hold exactly the reservations and holds the answers named.
func TestHoldsKill9(t *testing.T) {
	dir := t.TempDir()
	socket := filepath.Join(servertest.ShortTempDir(t), "h.sock")
	addr := freeAddr(t)
	args := []string{"--listen", addr, "--no-demo"}
	ctx := context.Background()

	p := start(t, dir, socket, args...)
	admin := p.socketClient()
	for i := range holdWorkshops {
		spec := engine.WorkshopSpec{Capacity: holdCapacity, MaxQuantity: 2}
		if _, _, err := admin.PutWorkshop(ctx, fmt.Sprintf("hold-%d", i), spec, nil); err != nil {
			t.Fatal(err)
		}
	}
	clients := make([]*holdClient, holdClients)
	for i := range clients {
		actor := fmt.Sprintf("holder-%d", i)
		token, err := admin.CreateToken(ctx, actor, false)
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = &holdClient{actor: actor, c: &client.Client{BaseURL: "http://" + addr, Token: token}, rng: rand.New(rand.NewPCG(rand.Uint64(), uint64(i)))}
	}
	l := newLoad(holdClients)
	for _, hc := range clients {
		l.goClient(hc.run)
	}
	for kill := range *holdKills {
		l.waitAnswers(t, rand.Int64N(60), fmt.Sprintf("kill %d: answers", kill))
		p = killAndRestart(t, p, func() *proc { return start(t, dir, socket, args...) })
	}
	l.end(t)

	// Every operation replays its first answer, byte for byte.
	counts := map[engine.OperationKind]map[string]int{}
	for _, hc := range clients {
		for _, o := range hc.ops {
			r, err := hc.c.Send(ctx, o.key, o.op)
			if err != nil || !r.Decided || !r.Replayed || r.Status != o.first.status || !bytes.Equal(r.Body, o.first.body) {
				t.Errorf("%s %s %s: final answer %d %s (replayed %v, %v), first was %d %s", hc.actor, o.op.Kind, o.key, r.Status, r.Body, r.Replayed, err, o.first.status, o.first.body)
			}
			if counts[o.op.Kind] == nil {
				counts[o.op.Kind] = map[string]int{}
			}
			counts[o.op.Kind][o.res.Answer.Status]++
		}
	}
	t.Logf("%d kills, %d unclear answers retried; answers by kind and status: %v", *holdKills, l.unclear.Load(), counts)
	if l.unclear.Load() == 0 {
		t.Error("no answer was lost to a kill, so nothing was proven")
	}
	for _, want := range []struct {
		kind   engine.OperationKind
		status string
	}{{engine.OperationHold, engine.StatusHeld}, {engine.OperationConfirm, engine.StatusReserved}, {engine.OperationRelease, engine.StatusReleased}, {engine.OperationReserve, engine.StatusReserved}} {
		if counts[want.kind][want.status] == 0 {
			t.Errorf("no %s was answered %s, so nothing was proven about it", want.kind, want.status)
		}
	}

	if code := p.stop(t); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d", code)
	}
	db := filepath.Join(dir, "reserved.db")
	if out, err := exec.Command(reservedBin, "check", "--db", db).CombinedOutput(); err != nil || !strings.Contains(string(out), "no findings") {
		t.Errorf("reserved check: %v\n%s", err, out)
	}
	st, err := boltstore.Open(db, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	verifyHeld(t, st, clients)
}

// verifyHeld checks the store against the answers: no workshop holds more
// than its capacity in reservations and open holds, every reservation is
// the one a reservation or a confirmation was answered with, and every
// hold is the one a hold request was answered with, in the state its
// confirmations and releases were answered with.
func verifyHeld(t *testing.T, st engine.Store, clients []*holdClient) {
	t.Helper()
	reservations := map[string]bool{} // The ids the answers named.
	holds := map[string]engine.HoldState{}
	for _, hc := range clients {
		for _, o := range hc.ops {
			a := o.res.Answer
			switch {
			case a.Status == engine.StatusReserved:
				reservations[a.ReservationID] = true
				if o.op.Kind == engine.OperationConfirm {
					holds[a.HoldID] = engine.HoldConfirmed
				}
			case o.op.Kind == engine.OperationHold && a.Status == engine.StatusHeld:
				if _, settled := holds[a.HoldID]; !settled {
					holds[a.HoldID] = engine.HoldHeld
				}
			case o.op.Kind == engine.OperationRelease && a.Status == engine.StatusReleased:
				holds[a.HoldID] = engine.HoldReleased
			}
		}
	}
	err := st.View(context.Background(), func(tx engine.Tx) error {
		err := tx.ForEachWorkshop(func(w engine.Workshop) error {
			if w.Reserved+w.Holding > w.Capacity {
				t.Errorf("workshop %s holds more than its capacity: %+v", w.ID, w)
			}
			return nil
		})
		if err != nil {
			return err
		}
		n := 0
		err = tx.ForEachReservation(func(r engine.Reservation) error {
			n++
			if !reservations[r.ID] {
				t.Errorf("reservation %s of %s was never answered", r.ID, r.Actor)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if n != len(reservations) {
			t.Errorf("the store holds %d reservations, the answers named %d", n, len(reservations))
		}
		n = 0
		err = tx.ForEachHold(func(h engine.Hold) error {
			n++
			if want, ok := holds[h.ID]; !ok || h.State != want {
				t.Errorf("hold %s of %s is stored %s, the answers said %q", h.ID, h.Actor, h.State, want)
			}
			return nil
		})
		if n != len(holds) {
			t.Errorf("the store holds %d holds, the answers named %d", n, len(holds))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// run sends operations until stop is closed: reservations and holds of
// one or two places, confirmations and releases of its open holds, now
// and then a second confirmation or release of a settled hold under a new
// key, and about one in five sends a repeat of a settled operation, whose
// answer must not change.
func (hc *holdClient) run(stop <-chan struct{}, answers, unclear *atomic.Int64) error {
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		if len(hc.ops) > 0 && hc.rng.IntN(5) == 0 {
			o := hc.ops[hc.rng.IntN(len(hc.ops))]
			r, err := hc.settle(o.key, o.op, unclear)
			if err != nil {
				return err
			}
			if r.Status != o.first.status || !bytes.Equal(r.Body, o.first.body) {
				return fmt.Errorf("%s %s %s: repeat answered %d %s, first answer was %d %s", hc.actor, o.op.Kind, o.key, r.Status, r.Body, o.first.status, o.first.body)
			}
			answers.Add(1)
			continue
		}
		op := hc.next()
		o := &holdOp{key: engine.OperationKey(uuid.NewString()), op: op}
		hc.ops = append(hc.ops, o)
		r, err := hc.settle(o.key, op, unclear)
		if err != nil {
			return err
		}
		o.first, o.res = answer{r.Status, r.Body}, r
		if op.Kind == engine.OperationHold && r.Answer.Status == engine.StatusHeld {
			hc.open = append(hc.open, r.Answer.HoldID)
		}
		answers.Add(1)
	}
}

// next picks the next operation: a confirmation or release of an open
// hold (taking it out of the open ones), a second settlement of a settled
// hold, a hold, or a reservation.
func (hc *holdClient) next() client.Operation {
	workshop := engine.Request{Workshop: fmt.Sprintf("hold-%d", hc.rng.IntN(holdWorkshops)), Quantity: 1 + hc.rng.IntN(2)}
	switch n := hc.rng.IntN(10); {
	case n < 4 && len(hc.open) > 0:
		i := hc.rng.IntN(len(hc.open))
		id := hc.open[i]
		hc.open = append(hc.open[:i], hc.open[i+1:]...)
		hc.done = append(hc.done, id)
		if hc.rng.IntN(3) == 0 {
			return client.Releasing(id)
		}
		return client.Confirming(id)
	case n < 5 && len(hc.done) > 0:
		id := hc.done[hc.rng.IntN(len(hc.done))]
		if hc.rng.IntN(2) == 0 {
			return client.Releasing(id)
		}
		return client.Confirming(id)
	case n < 8:
		return client.Holding(engine.HoldRequest{Workshop: workshop.Workshop, Quantity: workshop.Quantity, TTLSeconds: 3600})
	}
	return client.Reserving(workshop)
}

// settle sends op under key until it gets an authoritative answer, a few
// milliseconds apart, as tortureClient.settle does; a decided refusal is
// an error, as none is expected.
func (hc *holdClient) settle(key engine.OperationKey, op client.Operation, unclear *atomic.Int64) (client.Result, error) {
	deadline := time.Now().Add(tortureIntentTimeout)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := hc.c.Send(ctx, key, op)
		cancel()
		switch {
		case err == nil && r.Decided && r.Answer.Status != "":
			return r, nil
		case err == nil && r.Decided:
			return r, fmt.Errorf("%s %s %s: refused: %w", hc.actor, op.Kind, key, r.Err())
		case err == nil:
			err = r.Err()
		}
		unclear.Add(1)
		if time.Now().After(deadline) {
			return r, fmt.Errorf("%s %s %s: no authoritative answer within %v: %w", hc.actor, op.Kind, key, tortureIntentTimeout, err)
		}
		<-tick.C
	}
}
