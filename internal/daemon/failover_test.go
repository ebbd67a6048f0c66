package daemon_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/pgcluster/pgclustertest"
	"github.com/reserve/reserve/internal/server/servertest"
)

// failovers is how often TestPostgresFailover kills the primary.
const failovers = 5

// TestPostgresFailover runs three real daemons on a primary with a
// synchronous standby, reached through a multi-host DSN with
// target_session_attrs=read-write, under the load of clients that retry
// every undecided answer with the same key after its Retry-After. The
// primary is killed with SIGKILL and the standby promoted, again and again,
// each time with a new standby seeded from the new primary; the daemons are
// never restarted. Afterwards every acknowledged reservation exists with its
// id, no key has two reservations, no workshop is over capacity, `reserved
// check` is clean, and every answer while no primary served was 503
// store_unavailable with Retry-After: never a 500, never a decided refusal.
func TestPostgresFailover(t *testing.T) {
	cluster := pgclustertest.New(t)
	dsn := cluster.DSN()
	ctx := context.Background()
	short := servertest.ShortTempDir(t)
	addrs := make([]string, 3)
	procs := make([]*proc, 3)
	for i := range procs {
		addrs[i] = freeAddr(t)
		procs[i] = startOnPostgres(t, dsn, filepath.Join(short, fmt.Sprintf("f%d.sock", i)), addrs[i], "--no-demo")
	}
	admin := procs[0].socketClient()
	for i := range tortureWorkshops {
		spec := engine.WorkshopSpec{Capacity: tortureCapacity, MaxQuantity: 2}
		if _, _, err := admin.PutWorkshop(ctx, fmt.Sprintf("torture-%d", i), spec, nil); err != nil {
			t.Fatal(err)
		}
	}
	log := &answerLog{byStatus: map[int]int{}}
	hc := &http.Client{Transport: observed{next: http.DefaultTransport.(*http.Transport).Clone(), log: log}}
	clients := make([]*tortureClient, tortureClients)
	for i := range clients {
		actor := fmt.Sprintf("client-%d", i)
		token, err := admin.CreateToken(ctx, actor, false)
		if err != nil {
			t.Fatal(err)
		}
		cs := make([]*client.Client, len(addrs))
		for j, addr := range addrs {
			cs[j] = &client.Client{BaseURL: "http://" + addr, Token: token, HTTPClient: hc}
		}
		clients[i] = &tortureClient{actor: actor, cs: cs, rng: rand.New(rand.NewPCG(rand.Uint64(), uint64(i))),
			reqs: map[engine.OperationKey]engine.Request{}, first: map[engine.OperationKey]answer{}}
	}

	l := newLoad(len(clients))
	for _, tc := range clients {
		l.goClient(tc.runPatiently)
	}
	for n := range failovers {
		l.waitAnswers(t, 20+rand.Int64N(40), fmt.Sprintf("answers before failover %d", n+1))
		start := time.Now()
		var frozen func()
		if n%2 == 1 {
			// The daemons must leave the hung host by themselves: new
			// connections try it first, and must give up on it soon.
			frozen = func() { l.waitAnswers(t, 30, fmt.Sprintf("failover %d: answers while the old primary hangs", n+1)) }
		}
		if err := cluster.Failover(ctx, frozen); err != nil {
			t.Fatal(err)
		}
		t.Logf("failover %d (old primary %s): node %s is the primary after %v", n+1,
			map[bool]string{true: "hung, then killed", false: "killed"}[frozen != nil], cluster.Primary(), time.Since(start).Round(time.Millisecond))
	}
	l.waitAnswers(t, 60, "answers after the last failover")
	l.end(t)
	during := log.snapshot() // The verification below adds its own answers.
	verifyTortured(t, clients, stopAndOpenPostgres(t, ctx, procs, dsn), "--store", "postgres", "--dsn", dsn)
	if bad := log.firstBad(); bad != "" {
		t.Errorf("an answer while no primary served was not 503 store_unavailable: %s", bad)
	}
	t.Logf("%d failovers; answers under load by status %v; %d undecided answers retried", failovers, during, l.unclear.Load())
	if during[http.StatusServiceUnavailable] == 0 {
		t.Error("no request met a failover, so nothing was proven")
	}
}

// snapshot returns the number of answers by status so far.
func (l *answerLog) snapshot() map[int]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.byStatus)
}

// runPatiently is the loop of a client of TestPostgresFailover, like run
// without repeats: each intent is sent until a decided answer, and an
// undecided one is sent again with the same key after the answer's
// Retry-After (a short pause when there was no answer at all). A decided
// refusal fails the client.
func (tc *tortureClient) runPatiently(stop <-chan struct{}, answers, unclear *atomic.Int64) error {
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		key := engine.OperationKey(uuid.NewString())
		tc.keys = append(tc.keys, key)
		req := engine.Request{Workshop: fmt.Sprintf("torture-%d", tc.rng.IntN(tortureWorkshops)), Quantity: 1 + tc.rng.IntN(2)}
		tc.reqs[key] = req
		deadline := time.Now().Add(tortureIntentTimeout)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			r, err := tc.pick().Send(ctx, key, client.Reserving(req))
			cancel()
			if err == nil && r.Decided {
				if r.Problem != nil {
					return fmt.Errorf("%s %s: decided refusal %d %s", tc.actor, key, r.Status, r.Body)
				}
				tc.first[key] = answer{r.Status, r.Body}
				answers.Add(1)
				break
			}
			unclear.Add(1)
			if time.Now().After(deadline) {
				return fmt.Errorf("%s %s: no decided answer within %v: %d %s %v", tc.actor, key, tortureIntentTimeout, r.Status, r.Body, err)
			}
			pause := 20 * time.Millisecond
			if err == nil && r.RetryAfter > 0 {
				pause = r.RetryAfter
			}
			time.Sleep(pause)
		}
	}
}
