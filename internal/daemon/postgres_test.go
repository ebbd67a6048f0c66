package daemon_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/daemon"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/pgstore"
	"github.com/reserve/reserve/internal/pgstore/pgtest"
	"github.com/reserve/reserve/internal/server/servertest"
)

// startOnPostgres runs `reserved serve --store postgres` on dsn with its own
// socket and TCP address, and waits until it serves.
func startOnPostgres(t *testing.T, dsn, socket, addr string, extra ...string) *proc {
	t.Helper()
	dir := t.TempDir()
	args := append([]string{"serve", "--store", "postgres", "--dsn", dsn, "--socket", socket, "--listen", addr, "--log-format", "json"}, extra...)
	p := launch(t, env(dir), args...)
	p.socket = socket
	p.waitServing(t)
	return p
}

func TestStoreFlagsAreChecked(t *testing.T) {
	dir := t.TempDir()
	socket := filepath.Join(servertest.ShortTempDir(t), "f.sock")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--store", "postgres"}, "reserved: --store postgres needs --dsn (or RESERVED_DSN), e.g. postgres://reserve@db.example/reserve\n"},
		{[]string{"--store", "bolt", "--dsn", "postgres://x/y"}, "reserved: --dsn names a PostgreSQL database, but --store is bolt\n"},
		{[]string{"--store", "sqlite"}, "reserved: --store \"sqlite\": use bolt or postgres\n"},
		{[]string{"--store", "postgres", "--dsn", "postgres://x/y", "--no-group-commit"}, "reserved: --no-group-commit applies to the bolt store only\n"},
	} {
		p := launch(t, env(dir), append([]string{"serve", "--socket", socket, "--listen", ""}, c.args...)...)
		if code := p.wait(t); code != daemon.ExitUsage || p.logs.String() != c.want {
			t.Errorf("reserved serve %v: exit %d, output %q; want exit 2 and %q", c.args, code, p.logs, c.want)
		}
	}
}

func TestServeOnPostgres(t *testing.T) {
	dsn, _ := pgtest.FreshSchema(t)
	socket := filepath.Join(servertest.ShortTempDir(t), "p.sock")
	ctx := context.Background()

	p := startOnPostgres(t, dsn, socket, "")
	if r := p.logs.Find("created the demo workshop in the new database"); r == nil {
		t.Fatalf("a new PostgreSQL database did not get the demo workshop:\n%s", p.logs)
	}
	// The PostgreSQL store lets concurrent decisions share a transaction.
	if gc := p.logs.Find("reserved is serving")["group_commit"]; gc != true {
		t.Errorf("start line on PostgreSQL says group_commit=%v", gc)
	}
	key := engine.OperationKey(uuid.NewString())
	req := engine.Request{Workshop: daemon.DemoWorkshop, Quantity: 2}
	status, first, _, err := p.socketClient().Reserve(ctx, key, req)
	if err != nil || status != http.StatusCreated {
		t.Fatalf("reserve: %d %s %v", status, first, err)
	}
	if code := p.stop(t); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d", code)
	}

	p = startOnPostgres(t, dsn, socket, "")
	if r := p.logs.Find("created the demo workshop in the new database"); r != nil {
		t.Fatal("a restart on an existing database created the demo workshop again")
	}
	status, again, replayed, err := p.socketClient().Reserve(ctx, key, req)
	if err != nil || status != http.StatusCreated || !replayed || string(again) != string(first) {
		t.Fatalf("replay after restart = %d %s replayed=%v %v; want %s", status, again, replayed, err, first)
	}
	// check works while daemons run on the database: it only reads.
	out, err := exec.Command(reservedBin, "check", "--dsn", dsn).CombinedOutput() // --dsn alone means postgres.
	if err != nil || string(out) != "PostgreSQL "+describeDSN(t, dsn)+" is consistent: no findings\n" {
		t.Errorf("reserved check --store postgres: %v\n%s", err, out)
	}
	if code := p.stop(t); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d", code)
	}
}

// describeDSN is how pgstore names the database of dsn in messages.
func describeDSN(t *testing.T, dsn string) string {
	t.Helper()
	s, err := pgstore.Open(context.Background(), dsn, pgstore.Options{NoMigrate: true, MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	return s.String()[len("PostgreSQL "):]
}

// TestMultiDaemonPostgres runs three daemons on one PostgreSQL database.
// Torture clients send each intent to a random daemon and retry unclear
// answers with the same key on any daemon; racers send one intent to all
// three daemons at once. One daemon is killed with SIGKILL mid-load and
// restarted. Afterwards no key has two reservations, no workshop is over
// capacity, every 201 seen exists with its id, every key answers its first
// answer again, and `reserved check --store postgres` is clean.
func TestMultiDaemonPostgres(t *testing.T) {
	dsn, _ := pgtest.FreshSchema(t)
	multiDaemon(t, dsn)
}

// TestMultiDaemonBehindPgBouncer is TestMultiDaemonPostgres with the daemons
// connected through PgBouncer in transaction pooling mode.
func TestMultiDaemonBehindPgBouncer(t *testing.T) {
	t.Parallel()
	multiDaemon(t, pgtest.BouncerDSN(t))
}

// multiDaemon is the test of TestMultiDaemonPostgres on dsn.
func multiDaemon(t *testing.T, dsn string) {
	ctx := context.Background()
	short := servertest.ShortTempDir(t)
	type daemonAt struct{ socket, addr string }
	daemons := make([]daemonAt, 3)
	procs := make([]*proc, 3)
	for i := range daemons {
		daemons[i] = daemonAt{filepath.Join(short, fmt.Sprintf("d%d.sock", i)), freeAddr(t)}
		procs[i] = startOnPostgres(t, dsn, daemons[i].socket, daemons[i].addr, "--no-demo")
	}
	admin := procs[0].socketClient()
	for i := range tortureWorkshops {
		spec := engine.WorkshopSpec{Capacity: tortureCapacity, MaxQuantity: 2}
		if _, _, err := admin.PutWorkshop(ctx, fmt.Sprintf("torture-%d", i), spec, nil); err != nil {
			t.Fatal(err)
		}
	}
	clientsOf := func(token string) []*client.Client {
		cs := make([]*client.Client, len(daemons))
		for i, d := range daemons {
			cs[i] = &client.Client{BaseURL: "http://" + d.addr, Token: token}
		}
		return cs
	}
	clients := make([]*tortureClient, tortureClients)
	for i := range clients {
		actor := fmt.Sprintf("client-%d", i)
		token, err := procs[i%len(procs)].socketClient().CreateToken(ctx, actor, false) // Tokens are shared through the database.
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = &tortureClient{
			actor: actor, cs: clientsOf(token),
			rng:  rand.New(rand.NewPCG(rand.Uint64(), uint64(i))),
			reqs: map[engine.OperationKey]engine.Request{}, first: map[engine.OperationKey]answer{},
		}
	}
	racerToken, err := admin.CreateToken(ctx, "racer", false)
	if err != nil {
		t.Fatal(err)
	}

	l := newLoad(tortureClients + 1)
	for _, tc := range clients {
		l.goClient(tc.run)
	}
	racer := &tortureClient{actor: "racer", cs: clientsOf(racerToken), rng: rand.New(rand.NewPCG(1, 2)),
		reqs: map[engine.OperationKey]engine.Request{}, first: map[engine.OperationKey]answer{}}
	var raced atomic.Int64
	l.goClient(func(stop <-chan struct{}, _, unclear *atomic.Int64) error { return racer.race(stop, &raced, unclear) })

	l.waitAnswers(t, 120, "answers before the kill")
	procs[1] = killAndRestart(t, procs[1], func() *proc {
		l.waitAnswers(t, 60, "answers while one daemon is dead")
		return startOnPostgres(t, dsn, daemons[1].socket, daemons[1].addr, "--no-demo")
	})
	l.waitAnswers(t, 180, "answers after the restart")
	l.end(t)
	verifyTortured(t, append(clients, racer), stopAndOpenPostgres(t, ctx, procs, dsn), "--store", "postgres", "--dsn", dsn)
	t.Logf("%d unclear answers retried, %d intents raced on all daemons at once", l.unclear.Load(), raced.Load())
	if l.unclear.Load() == 0 || raced.Load() == 0 {
		t.Error("no answer was lost to the kill or no intent was raced, so nothing was proven")
	}
}

// race sends each new intent to every daemon at once, settles each send,
// and requires the same authoritative answer from all of them, until stop is
// closed.
func (tc *tortureClient) race(stop <-chan struct{}, raced, unclear *atomic.Int64) error {
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		key := engine.OperationKey(uuid.NewString())
		tc.keys = append(tc.keys, key)
		tc.reqs[key] = engine.Request{Workshop: fmt.Sprintf("torture-%d", tc.rng.IntN(tortureWorkshops)), Quantity: 1}
		got := make([]answer, len(tc.cs))
		errs := make([]error, len(tc.cs))
		var wg sync.WaitGroup
		for i, c := range tc.cs {
			wg.Go(func() {
				one := &tortureClient{actor: tc.actor, cs: []*client.Client{c}, reqs: tc.reqs}
				got[i], errs[i] = one.settle(key, unclear)
			})
		}
		wg.Wait()
		for i := range got {
			if errs[i] != nil {
				return errs[i]
			}
			if got[i].status != got[0].status || string(got[i].body) != string(got[0].body) {
				return fmt.Errorf("racer %s: daemon %d answered %d %s, daemon 0 answered %d %s", key, i, got[i].status, got[i].body, got[0].status, got[0].body)
			}
		}
		tc.first[key] = got[0]
		raced.Add(1)
	}
}

// TestMigrateToPostgres moves a bbolt database that a daemon filled into
// PostgreSQL and proves the keys replay there byte for byte, the token
// still works, and that migrate refuses a running daemon's file and a
// non-empty target.
func TestMigrateToPostgres(t *testing.T) {
	dsn, _ := pgtest.FreshSchema(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "reserved.db")
	socket := filepath.Join(servertest.ShortTempDir(t), "m.sock")
	ctx := context.Background()

	p := start(t, dir, socket)
	token, err := p.socketClient().CreateToken(ctx, "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	type sent struct {
		key  engine.OperationKey
		req  engine.Request
		body []byte
	}
	var all []sent
	for _, q := range []int{2, 2} { // The second is unavailable.
		s := sent{key: engine.OperationKey(uuid.NewString()), req: engine.Request{Workshop: daemon.DemoWorkshop, Quantity: q}}
		if _, s.body, _, err = p.tcpClient(token).Reserve(ctx, s.key, s.req); err != nil {
			t.Fatal(err)
		}
		all = append(all, s)
	}
	migrateCmd := func() (int, string) {
		out, err := exec.Command(reservedBin, "migrate", "--from-db", db, "--to-dsn", dsn).CombinedOutput()
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	if code, out := migrateCmd(); code != daemon.ExitUsage || !strings.Contains(out, "is in use by another reserved") {
		t.Fatalf("migrate of a running daemon's file: exit %d\n%s", code, out)
	}
	if code := p.stop(t); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d", code)
	}
	code, out := migrateCmd()
	if code != 0 || !strings.Contains(out, "copied 1 workshops, 1 reservations, 0 holds, 2 receipts, 0 tombstones, 2 credentials, 1 events, 1 bindings from database "+db) ||
		!strings.HasSuffix(out, "is consistent: no findings\n") {
		t.Fatalf("migrate: exit %d\n%s", code, out)
	}
	if code, out := migrateCmd(); code != daemon.ExitUsage || !strings.Contains(out, "the target database is not empty: it holds workshops") {
		t.Fatalf("second migrate into the same database: exit %d\n%s", code, out)
	}

	p = startOnPostgres(t, dsn, socket, "127.0.0.1:0", "--no-demo")
	for _, s := range all {
		_, body, replayed, err := p.tcpClient(token).Reserve(ctx, s.key, s.req)
		if !replayed || !bytes.Equal(body, s.body) {
			t.Errorf("%s after the move: %s replayed=%v %v; want %s", s.key, body, replayed, err, s.body)
		}
	}
	if code := p.stop(t); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d", code)
	}
}

// stopAndOpenPostgres returns the store opener of verifyTortured for
// daemons on PostgreSQL: it stops every daemon with SIGTERM, which must
// exit 0, and then opens their database without migrating it.
func stopAndOpenPostgres(t *testing.T, ctx context.Context, procs []*proc, dsn string) func() engine.Store {
	return func() engine.Store {
		for i, p := range procs {
			if code := p.stop(t); code != 0 {
				t.Errorf("daemon %d: exit code after SIGTERM = %d", i, code)
			}
		}
		s, err := pgstore.Open(ctx, dsn, pgstore.Options{NoMigrate: true, MaxConns: 2})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}
