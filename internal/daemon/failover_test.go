package daemon_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server/servertest"
)

// failovers is how often TestPostgresFailover kills the primary.
const failovers = 5

// pgNode is one PostgreSQL server of a pgCluster, on a Unix socket only.
type pgNode struct {
	name string
	dir  string // Owned by postgres: the socket, data/ and server.log.
	port int    // Names the socket file only.
}

func (n *pgNode) data() string { return filepath.Join(n.dir, "data") }

// pgCluster is a primary with one synchronous streaming standby, built on
// this machine from the PostgreSQL binaries in bin, and a third place for
// the standby that replaces the promoted one. The roles rotate over the
// three places, so a new standby never has to wait for the old primary's
// place to be free.
type pgCluster struct {
	t                *testing.T
	bin              string
	nodes            [3]*pgNode
	primary, standby int // Indexes in nodes; the third node is spare.
}

// needPostgresBinaries returns the directory of the PostgreSQL server
// binaries for a test that builds its own servers, which must run as root
// (initdb and the servers run as the user postgres). Without them the test
// fails under RESERVE_CI and is skipped loudly elsewhere.
func needPostgresBinaries(t *testing.T) string {
	t.Helper()
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgMajor(dirs[i]) < pgMajor(dirs[j]) })
	var missing string
	switch {
	case os.Getuid() != 0:
		missing = "it must run as root (the servers run as the user postgres)"
	case len(dirs) == 0:
		missing = "no PostgreSQL server binaries in /usr/lib/postgresql/*/bin (Debian package postgresql)"
	}
	if missing == "" {
		if _, err := exec.LookPath("runuser"); err != nil {
			missing = "runuser is not installed"
		} else if err := exec.Command("id", "postgres").Run(); err != nil {
			missing = "there is no user postgres"
		}
	}
	if missing == "" {
		bin := dirs[len(dirs)-1]
		for _, tool := range []string{"initdb", "pg_ctl", "pg_basebackup", "pg_isready"} {
			if _, err := os.Stat(filepath.Join(bin, tool)); err != nil {
				missing = fmt.Sprintf("%s is missing", filepath.Join(bin, tool))
			}
		}
		if missing == "" {
			return bin
		}
	}
	if os.Getenv("RESERVE_CI") != "" {
		t.Fatalf("the failover test needs root and the PostgreSQL binaries, and CI (RESERVE_CI) must run it: %s", missing)
	}
	t.Skipf("SKIPPING the PostgreSQL failover test: %s; run it as root on a machine with the postgresql package", missing)
	return ""
}

// pgMajor is the major version in a path /usr/lib/postgresql/N/bin.
func pgMajor(bin string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(bin)))
	return n
}

// newPgCluster initializes and starts a primary and a synchronous standby
// seeded from it, and stops both when the test ends.
func newPgCluster(t *testing.T, bin string) *pgCluster {
	t.Helper()
	base, err := os.MkdirTemp("/tmp", "rsvha") // Short: socket paths are limited.
	if err != nil {
		t.Fatal(err)
	}
	c := &pgCluster{t: t, bin: bin, primary: 0, standby: 1}
	for i, name := range []string{"a", "b", "c"} {
		n := &pgNode{name: name, dir: filepath.Join(base, name), port: 54341 + i}
		if err := os.Mkdir(n.dir, 0o700); err != nil {
			t.Fatal(err)
		}
		c.nodes[i] = n
	}
	c.asPostgres("chown", "-R", "postgres:", base) // Runs as root: chown needs it.
	t.Cleanup(func() {
		for _, n := range c.nodes {
			c.kill(n)
		}
		if t.Failed() {
			for _, n := range c.nodes {
				if log, err := os.ReadFile(filepath.Join(n.dir, "server.log")); err == nil {
					t.Logf("server log of node %s:\n%s", n.name, log)
				}
			}
		}
		os.RemoveAll(base)
	})
	primary := c.nodes[0]
	c.asPostgres("runuser", "-u", "postgres", "--", filepath.Join(bin, "initdb"), "-D", primary.data(), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C")
	c.start(primary)
	c.seed(c.nodes[1], primary) // First: every commit waits for a standby.
	conn := c.connect(primary, "postgres")
	defer conn.Close(context.Background())
	for _, sql := range []string{"CREATE ROLE reserve LOGIN", "CREATE DATABASE reserve OWNER reserve"} {
		if _, err := conn.Exec(context.Background(), sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	return c
}

// asPostgres runs a command and fails the test with its output if it fails.
func (c *pgCluster) asPostgres(name string, args ...string) {
	c.t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		c.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// pgCtl runs pg_ctl as the user postgres.
func (c *pgCluster) pgCtl(args ...string) {
	c.t.Helper()
	c.asPostgres("runuser", append([]string{"-u", "postgres", "--", filepath.Join(c.bin, "pg_ctl")}, args...)...)
}

// start starts the server of n, durable as in production (fsync aside,
// which a killed process does not need: the kernel keeps what it wrote):
// every commit waits until a standby has flushed it.
func (c *pgCluster) start(n *pgNode) {
	c.t.Helper()
	opts := fmt.Sprintf("-c listen_addresses='' -c unix_socket_directories='%s' -c port=%d -c max_connections=200 "+
		"-c synchronous_commit=on -c synchronous_standby_names='*' -c wal_keep_size=256MB -c fsync=off", n.dir, n.port)
	c.pgCtl("-D", n.data(), "-l", filepath.Join(n.dir, "server.log"), "-W", "start", "-o", opts)
	servertest.Eventually(c.t, startTimeout, "node "+n.name+" accepting connections", func() bool {
		return exec.Command(filepath.Join(c.bin, "pg_isready"), "-q", "-h", n.dir, "-p", strconv.Itoa(n.port)).Run() == nil
	})
}

// connect opens a connection to database db of n as postgres.
func (c *pgCluster) connect(n *pgNode, db string) *pgx.Conn {
	c.t.Helper()
	conn, err := pgx.Connect(context.Background(), fmt.Sprintf("host=%s port=%d user=postgres dbname=%s", n.dir, n.port, db))
	if err != nil {
		c.t.Fatalf("connect to node %s: %v", n.name, err)
	}
	return conn
}

// seed makes n a new standby of primary: a base backup of it, with the
// settings that stream from it (pg_basebackup -R), started, and waited for
// until primary names it its synchronous standby.
func (c *pgCluster) seed(n, primary *pgNode) {
	c.t.Helper()
	if err := os.RemoveAll(n.data()); err != nil {
		c.t.Fatal(err)
	}
	c.asPostgres("runuser", "-u", "postgres", "--", filepath.Join(c.bin, "pg_basebackup"),
		"-h", primary.dir, "-p", strconv.Itoa(primary.port), "-U", "postgres", "-D", n.data(), "-R", "-X", "stream", "-c", "fast")
	c.start(n)
	conn := c.connect(primary, "postgres")
	defer conn.Close(context.Background())
	servertest.Eventually(c.t, startTimeout, "node "+n.name+" the synchronous standby of node "+primary.name, func() bool {
		var sync bool
		err := conn.QueryRow(context.Background(), `SELECT EXISTS (SELECT FROM pg_stat_replication WHERE sync_state = 'sync')`).Scan(&sync)
		return err == nil && sync
	})
}

// kill ends every process of n's server with SIGKILL at once, as when its
// machine dies, and waits until they are gone. Like a machine that is
// replaced, it keeps none of the server's socket files: a killed server
// that its parent has not reaped yet would make a new one refuse the lock
// file.
func (c *pgCluster) kill(n *pgNode) {
	c.t.Helper()
	pids := c.signal(n, syscall.SIGKILL)
	servertest.Eventually(c.t, startTimeout, "the processes of node "+n.name+" gone", func() bool {
		for _, pid := range pids {
			if alive(pid) {
				return false
			}
		}
		return true
	})
	socket := filepath.Join(n.dir, fmt.Sprintf(".s.PGSQL.%d", n.port))
	for _, f := range []string{socket, socket + ".lock"} {
		if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
			c.t.Fatal(err)
		}
	}
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, _ := procStat(child); ppid == pid {
			out = append(out, child)
		}
	}
	return out
}

// procStat returns the parent and the state of process pid.
func procStat(pid int) (ppid int, state string) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, ""
	}
	// pid (comm) state ppid …; comm may hold spaces and parentheses.
	fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	if len(fields) < 2 {
		return 0, ""
	}
	ppid, _ = strconv.Atoi(fields[1])
	return ppid, fields[0]
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	_, state := procStat(pid)
	return state != "" && state != "Z"
}

// failover takes the primary away, promotes the standby and seeds a new
// standby from it on the spare node; the old primary's node is the spare
// one then. The primary is killed with SIGKILL; unless frozen is nil, it is
// first stopped with SIGSTOP instead, like a machine that hangs or a network
// that drops every packet, and killed only once frozen has returned, after
// the new standby is streaming.
func (c *pgCluster) failover(frozen func()) {
	c.t.Helper()
	old, spare := c.primary, 3-c.primary-c.standby
	if frozen != nil {
		c.signal(c.nodes[old], syscall.SIGSTOP)
	} else {
		c.kill(c.nodes[old])
	}
	c.pgCtl("-D", c.nodes[c.standby].data(), "-w", "-t", "60", "promote")
	c.primary, c.standby = c.standby, spare
	c.seed(c.nodes[c.standby], c.nodes[c.primary])
	if frozen != nil {
		frozen()
		c.kill(c.nodes[old])
	}
}

// signal sends sig to every process of n's server at once and returns them.
func (c *pgCluster) signal(n *pgNode, sig syscall.Signal) []int {
	c.t.Helper()
	raw, err := os.ReadFile(filepath.Join(n.data(), "postmaster.pid"))
	if err != nil {
		return nil // Never started.
	}
	first, _, _ := strings.Cut(string(raw), "\n")
	pm, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		c.t.Fatalf("postmaster.pid of node %s: %q", n.name, first)
	}
	pids := append([]int{pm}, childrenOf(pm)...)
	for _, pid := range pids {
		syscall.Kill(pid, sig)
	}
	return pids
}

// dsn is the multi-host DSN of the cluster: every node, and a session only
// on the one that takes writes.
func (c *pgCluster) dsn() string {
	var hosts, ports []string
	for _, n := range c.nodes {
		hosts, ports = append(hosts, n.dir), append(ports, strconv.Itoa(n.port))
	}
	return fmt.Sprintf("host=%s port=%s user=reserve dbname=reserve target_session_attrs=read-write", strings.Join(hosts, ","), strings.Join(ports, ","))
}

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
	bin := needPostgresBinaries(t)
	cluster := newPgCluster(t, bin)
	dsn := cluster.dsn()
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
		cluster.failover(frozen)
		t.Logf("failover %d (old primary %s): node %s is the primary after %v", n+1,
			map[bool]string{true: "hung, then killed", false: "killed"}[frozen != nil], cluster.nodes[cluster.primary].name, time.Since(start).Round(time.Millisecond))
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
