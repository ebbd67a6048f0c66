// Package pgcluster builds a small PostgreSQL cluster on this machine, a
// primary with one synchronous streaming standby, and breaks it the ways a
// production cluster breaks: the primary crashes and restarts, or dies or
// hangs and the standby is promoted in its place.
//
// Every commit on the primary waits until the standby has flushed it
// (synchronous_commit=on, synchronous_standby_names='*'), so a commit the
// primary acknowledged survives the loss of the primary. The servers run as
// the user postgres, listen only on Unix sockets in the cluster's
// directory, and need root to be set up; FindBinaries says what is missing
// when they cannot run.
package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Timeout bounds each wait of the cluster: a server accepting
// connections, a standby streaming, processes gone.
const Timeout = 60 * time.Second

// The cluster's database and its owner, which DSN names.
const (
	User     = "reserve"
	Database = "reserve"
)

// basePort is the port of the first place; the others follow. Ports only
// name the socket files: the servers listen on no TCP port, so clusters in
// different directories do not collide.
const basePort = 54341

// FindBinaries returns the directory of the newest PostgreSQL server
// binaries in /usr/lib/postgresql/*/bin, or an error that says what a
// cluster lacks on this machine: root (the servers run as the user
// postgres), the binaries, runuser or the user postgres.
func FindBinaries() (string, error) {
	if os.Getuid() != 0 {
		return "", errors.New("it must run as root (the servers run as the user postgres)")
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	if len(dirs) == 0 {
		return "", errors.New("no PostgreSQL server binaries in /usr/lib/postgresql/*/bin (Debian package postgresql)")
	}
	sort.Slice(dirs, func(i, j int) bool { return major(dirs[i]) < major(dirs[j]) })
	if _, err := exec.LookPath("runuser"); err != nil {
		return "", errors.New("runuser is not installed")
	}
	if err := exec.Command("id", "postgres").Run(); err != nil {
		return "", errors.New("there is no user postgres")
	}
	bin := dirs[len(dirs)-1]
	for _, tool := range []string{"initdb", "pg_ctl", "pg_basebackup", "pg_isready"} {
		if _, err := os.Stat(filepath.Join(bin, tool)); err != nil {
			return "", fmt.Errorf("%s is missing", filepath.Join(bin, tool))
		}
	}
	return bin, nil
}

// major is the major version in a path /usr/lib/postgresql/N/bin.
func major(bin string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(bin)))
	return n
}

// node is one place of the cluster: a server on a Unix socket only.
type node struct {
	name string
	dir  string // Owned by postgres: the socket, data/ and server.log.
	port int    // Names the socket file only.
}

func (n *node) data() string { return filepath.Join(n.dir, "data") }

// Cluster is a primary with one synchronous streaming standby and a third
// place for the standby that replaces a promoted one. The roles rotate
// over the three places, so a new standby never has to wait for the old
// primary's place to be free. Its methods may be called from several
// goroutines; they take turns.
type Cluster struct {
	bin  string
	base string
	log  io.Writer

	mu               sync.Mutex
	nodes            [3]*node
	primary, standby int // Indexes in nodes; the third node is spare.
}

// New initializes and starts a primary and a synchronous standby seeded
// from it in a new directory under dir ("" is /tmp; socket paths are
// short, so dir should be too), with the role User owning the database
// Database. bin is the directory of the server binaries (FindBinaries).
// Progress goes to log unless it is nil. On an error nothing of the
// cluster is left running or on disk.
func New(ctx context.Context, bin, dir string, log io.Writer) (*Cluster, error) {
	if dir == "" {
		dir = "/tmp"
	}
	base, err := os.MkdirTemp(dir, "rsvha")
	if err != nil {
		return nil, fmt.Errorf("cluster directory: %w", err)
	}
	// The servers' processes are found by their working directory, which
	// the kernel names without symbolic links.
	if real, err := filepath.EvalSymlinks(base); err == nil {
		base = real
	}
	if log == nil {
		log = io.Discard
	}
	c := &Cluster{bin: bin, base: base, log: log, primary: 0, standby: 1}
	if err := c.build(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) build(ctx context.Context) error {
	for i, name := range []string{"a", "b", "c"} {
		n := &node{name: name, dir: filepath.Join(c.base, name), port: basePort + i}
		if err := os.Mkdir(n.dir, 0o700); err != nil {
			return fmt.Errorf("cluster directory: %w", err)
		}
		c.nodes[i] = n
	}
	if err := run("chown", "-R", "postgres:", c.base); err != nil {
		return err
	}
	primary := c.nodes[0]
	if err := c.asPostgres(filepath.Join(c.bin, "initdb"), "-D", primary.data(), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C"); err != nil {
		return err
	}
	if err := c.start(ctx, primary); err != nil {
		return err
	}
	if err := c.seed(ctx, c.nodes[1], primary); err != nil { // First: every commit waits for a standby.
		return err
	}
	conn, err := c.connect(ctx, primary)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for _, sql := range []string{"CREATE ROLE " + User + " LOGIN", "CREATE DATABASE " + Database + " OWNER " + User} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("%s on node %s: %w", sql, primary.name, err)
		}
	}
	fmt.Fprintf(c.log, "pgcluster: node %s is the primary, node %s its synchronous standby, in %s\n", primary.name, c.nodes[1].name, c.base)
	return nil
}

// DSN is the multi-host DSN of the cluster's database as User: every
// place, and a session only on the one that takes writes.
func (c *Cluster) DSN() string {
	var hosts, ports []string
	for _, n := range c.nodes {
		hosts, ports = append(hosts, n.dir), append(ports, strconv.Itoa(n.port))
	}
	return fmt.Sprintf("host=%s port=%s user=%s dbname=%s target_session_attrs=read-write",
		strings.Join(hosts, ","), strings.Join(ports, ","), User, Database)
}

// PrimaryDSN is the DSN of the current primary's database db as the
// superuser postgres.
func (c *Cluster) PrimaryDSN(db string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[c.primary].dsn(db)
}

func (n *node) dsn(db string) string {
	return fmt.Sprintf("host=%s port=%d user=postgres dbname=%s", n.dir, n.port, db)
}

// Primary names the place of the current primary ("a", "b" or "c").
func (c *Cluster) Primary() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[c.primary].name
}

// Restart crashes the primary, as when its machine loses power with the
// disk intact: every process of its server is killed with SIGKILL at once,
// the postmaster first. It is then started again in its place, recovers
// from its WAL, and Restart returns once the standby streams from it
// synchronously again.
func (c *Cluster) Restart(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	primary, standby := c.nodes[c.primary], c.nodes[c.standby]
	if err := c.kill(primary); err != nil {
		return err
	}
	if err := c.start(ctx, primary); err != nil {
		return fmt.Errorf("restart node %s: %w", primary.name, err)
	}
	if err := c.waitSync(ctx, primary); err != nil {
		return fmt.Errorf("node %s streaming again: %w", standby.name, err)
	}
	fmt.Fprintf(c.log, "pgcluster: node %s crashed and recovered\n", primary.name)
	return nil
}

// Failover takes the primary away, promotes the standby and seeds a new
// standby from it on the spare place; the old primary's place is the
// spare one then. The primary is killed with SIGKILL; unless frozen is
// nil, it is first stopped with SIGSTOP instead, like a machine that hangs
// or a network that drops every packet, and killed only once frozen has
// returned, after the new standby is streaming.
func (c *Cluster) Failover(ctx context.Context, frozen func()) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, spare := c.primary, 3-c.primary-c.standby
	if frozen != nil {
		c.signal(c.nodes[old], syscall.SIGSTOP)
	} else if err := c.kill(c.nodes[old]); err != nil {
		return err
	}
	if err := c.pgCtl("-D", c.nodes[c.standby].data(), "-w", "-t", strconv.Itoa(int(Timeout/time.Second)), "promote"); err != nil {
		return err
	}
	c.primary, c.standby = c.standby, spare
	if err := c.seed(ctx, c.nodes[c.standby], c.nodes[c.primary]); err != nil {
		return err
	}
	if frozen != nil {
		frozen()
		if err := c.kill(c.nodes[old]); err != nil {
			return err
		}
	}
	fmt.Fprintf(c.log, "pgcluster: node %s is the primary, node %s its standby\n", c.nodes[c.primary].name, c.nodes[c.standby].name)
	return nil
}

// WriteLogs writes the server log of every place to w.
func (c *Cluster) WriteLogs(w io.Writer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.nodes {
		if n == nil {
			continue
		}
		if log, err := os.ReadFile(filepath.Join(n.dir, "server.log")); err == nil {
			fmt.Fprintf(w, "server log of node %s:\n%s\n", n.name, log)
		}
	}
}

// Close kills every server of the cluster and removes its directory.
func (c *Cluster) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, n := range c.nodes {
		if n != nil {
			errs = append(errs, c.kill(n))
		}
	}
	errs = append(errs, os.RemoveAll(c.base))
	return errors.Join(errs...)
}

// run runs a command and returns an error with its output if it fails.
func run(name string, args ...string) error {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// asPostgres runs a PostgreSQL tool as the user postgres.
func (c *Cluster) asPostgres(tool string, args ...string) error {
	return run("runuser", append([]string{"-u", "postgres", "--", tool}, args...)...)
}

func (c *Cluster) pgCtl(args ...string) error {
	return c.asPostgres(filepath.Join(c.bin, "pg_ctl"), args...)
}

// start starts the server of n, durable as in production (fsync aside,
// which a killed process does not need: the kernel keeps what it wrote):
// every commit waits until a standby has flushed it.
func (c *Cluster) start(ctx context.Context, n *node) error {
	opts := fmt.Sprintf("-c listen_addresses='' -c unix_socket_directories='%s' -c port=%d -c max_connections=200 "+
		"-c synchronous_commit=on -c synchronous_standby_names='*' -c wal_keep_size=256MB -c fsync=off", n.dir, n.port)
	if err := c.pgCtl("-D", n.data(), "-l", filepath.Join(n.dir, "server.log"), "-W", "start", "-o", opts); err != nil {
		return err
	}
	return poll(ctx, "node "+n.name+" accepting connections", func() bool {
		return exec.Command(filepath.Join(c.bin, "pg_isready"), "-q", "-h", n.dir, "-p", strconv.Itoa(n.port)).Run() == nil
	})
}

// connect opens a connection to the database postgres of n as postgres.
func (c *Cluster) connect(ctx context.Context, n *node) (*pgx.Conn, error) {
	conn, err := pgx.Connect(ctx, n.dsn("postgres"))
	if err != nil {
		return nil, fmt.Errorf("connect to node %s: %w", n.name, err)
	}
	return conn, nil
}

// seed makes n a new standby of primary: a base backup of it, with the
// settings that stream from it (pg_basebackup -R), started, and waited for
// until primary names it its synchronous standby.
func (c *Cluster) seed(ctx context.Context, n, primary *node) error {
	if err := os.RemoveAll(n.data()); err != nil {
		return fmt.Errorf("seed node %s: %w", n.name, err)
	}
	if err := c.asPostgres(filepath.Join(c.bin, "pg_basebackup"),
		"-h", primary.dir, "-p", strconv.Itoa(primary.port), "-U", "postgres", "-D", n.data(), "-R", "-X", "stream", "-c", "fast"); err != nil {
		return err
	}
	if err := c.start(ctx, n); err != nil {
		return err
	}
	return c.waitSync(ctx, primary)
}

// waitSync waits until primary has a synchronous standby.
func (c *Cluster) waitSync(ctx context.Context, primary *node) error {
	conn, err := c.connect(ctx, primary)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return poll(ctx, "a synchronous standby of node "+primary.name, func() bool {
		var sync bool
		err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_replication WHERE sync_state = 'sync')`).Scan(&sync)
		return err == nil && sync
	})
}

// kill ends every process of n's server with SIGKILL, the postmaster
// first, as when its machine dies, and waits until they are gone. Like a
// machine that restarts, it keeps none of the server's socket and lock
// files: a killed postmaster that its parent has not reaped yet would make
// a new one refuse them.
func (c *Cluster) kill(n *node) error {
	c.signal(n, syscall.SIGKILL)
	// A backend the postmaster forked just before it died is killed on
	// the next turn.
	if err := poll(context.Background(), "the processes of node "+n.name+" gone", func() bool {
		pids := processesIn(n.data())
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		return len(pids) == 0
	}); err != nil {
		return err
	}
	socket := filepath.Join(n.dir, fmt.Sprintf(".s.PGSQL.%d", n.port))
	for _, f := range []string{socket, socket + ".lock", filepath.Join(n.data(), "postmaster.pid")} {
		if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}

// signal sends sig to every process of n's server, the postmaster first,
// so that it starts no more.
func (c *Cluster) signal(n *node, sig syscall.Signal) {
	pids := processesIn(n.data())
	if raw, err := os.ReadFile(filepath.Join(n.data(), "postmaster.pid")); err == nil {
		first, _, _ := strings.Cut(string(raw), "\n")
		if pm, err := strconv.Atoi(strings.TrimSpace(first)); err == nil && slices.Contains(pids, pm) {
			syscall.Kill(pm, sig)
			pids = processesIn(n.data())
		}
	}
	for _, pid := range pids {
		syscall.Kill(pid, sig)
	}
}

// processesIn lists the live processes whose working directory is dir: a
// PostgreSQL server's postmaster and every process it starts work in its
// data directory. A zombie has none.
func processesIn(dir string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid)); err == nil && cwd == dir {
			out = append(out, pid)
		}
	}
	return out
}

// poll calls cond every 20 ms until it holds, and fails after Timeout or
// when ctx ends.
func poll(ctx context.Context, what string, cond func() bool) error {
	deadline := time.Now().Add(Timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %v", what, Timeout)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}
