package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/daemon"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/faults"
	"github.com/reserve/reserve/internal/paths"
	"github.com/reserve/reserve/internal/paths/pathstest"
	"github.com/reserve/reserve/internal/server/servertest"
)

var demo = engine.Request{Workshop: "workshop-demo", Quantity: 1}

// TestServeStopRestart is the real-process test: reserve over the socket and
// over TCP, stop with SIGTERM while an answer is in flight, and find every
// answer replayed byte for byte by the restarted daemon.
func TestServeStopRestart(t *testing.T) {
	dir := t.TempDir()
	socket := filepath.Join(servertest.ShortTempDir(t), "r.sock")
	ctx := context.Background()
	p := start(t, dir, socket, "--enable-fault-injection")
	if p.logs.Find("created the demo workshop in the new database", "workshop", "workshop-demo") == nil {
		t.Error("no log line about the demo workshop")
	}
	if w := p.logs.Find("fault injection is enabled: admins can make reservations fail or answers break via POST /api/v1/debug/faults; never use this in production", "level", "WARN"); w == nil {
		t.Errorf("fault injection warning = %v", w)
	}
	if st, err := os.Stat(socket); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("socket mode = %v %v, want 0600", st.Mode(), err)
	}

	local := p.socketClient()
	token, err := local.CreateToken(ctx, "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	socketKey, tcpKey, heldKey := engine.OperationKey(uuid.NewString()), engine.OperationKey(uuid.NewString()), engine.OperationKey(uuid.NewString())
	status, socketBody, replayed, err := local.Reserve(ctx, socketKey, demo)
	if err != nil || status != http.StatusCreated || replayed {
		t.Fatalf("reserve on the socket = %d %s %v %v", status, socketBody, replayed, err)
	}
	alice := p.tcpClient(token)
	status, tcpBody, replayed, err := alice.Reserve(ctx, tcpKey, demo)
	if err != nil || status != http.StatusCreated || replayed {
		t.Fatalf("reserve on TCP = %d %s %v %v", status, tcpBody, replayed, err)
	}
	if status, again, replayed, err := alice.Reserve(ctx, tcpKey, demo); err != nil || status != http.StatusCreated || !replayed || !bytes.Equal(again, tcpBody) {
		t.Errorf("replay on TCP = %d %s %v %v", status, again, replayed, err)
	}

	// An answer held by a fault is in flight when SIGTERM arrives: the
	// daemon lets it finish before it exits.
	if err := local.ArmFault(ctx, api.Fault{Fault: api.FaultDelayResponse, DelayMS: api.MaxFaultDelayMS}); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		status int
		body   []byte
		err    error
	}
	held := make(chan answer, 1)
	go func() {
		status, body, _, err := alice.Reserve(ctx, heldKey, demo)
		held <- answer{status, body, err}
	}()
	waitReceipt(t, p.tcpClient(token), heldKey)
	servertest.Eventually(t, startTimeout, "answer held", func() bool {
		return p.logs.Find(faults.HoldingMessage, "operation", string(heldKey)) != nil
	})
	if code := p.stop(t); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d, want 0", code)
	}
	a := <-held
	if a.err != nil || a.status != http.StatusCreated {
		t.Errorf("answer in flight at shutdown = %d %s %v", a.status, a.body, a.err)
	}
	mustNotExist(t, socket)
	if p.logs.Find("reserved stopped") == nil {
		t.Error("no log line about stopping")
	}

	p = start(t, dir, socket)
	if p.logs.Find("created the demo workshop in the new database") != nil {
		t.Error("the demo workshop was created again on an existing database")
	}
	alice = p.tcpClient(token)
	if status, again, replayed, err := alice.Reserve(ctx, tcpKey, demo); err != nil || status != http.StatusCreated || !replayed || !bytes.Equal(again, tcpBody) {
		t.Errorf("replay on TCP after restart = %d %s %v %v, want %s", status, again, replayed, err, tcpBody)
	}
	if status, again, replayed, err := p.socketClient().Reserve(ctx, socketKey, demo); err != nil || status != http.StatusCreated || !replayed || !bytes.Equal(again, socketBody) {
		t.Errorf("replay on the socket after restart = %d %s %v %v, want %s", status, again, replayed, err, socketBody)
	}
	if status, again, replayed, err := alice.Reserve(ctx, heldKey, demo); err != nil || !replayed || !bytes.Equal(again, a.body) {
		t.Errorf("replay of the answer held at shutdown = %d %s %v %v, want %s", status, again, replayed, err, a.body)
	}
	if code := p.stop(t); code != 0 {
		t.Errorf("second exit code = %d", code)
	}
	mustNotExist(t, socket)
}

// waitReceipt polls until the caller's receipt of key exists.
func waitReceipt(t *testing.T, c *client.Client, key engine.OperationKey) {
	t.Helper()
	servertest.Eventually(t, startTimeout, "receipt of "+string(key), func() bool {
		_, err := c.Operation(context.Background(), key)
		if err != nil && engine.ErrorCode(err) != engine.CodeUnknownOperation {
			t.Fatal(err)
		}
		return err == nil
	})
}

func TestGarbledAnswerFromTheRealDaemon(t *testing.T) {
	dir := t.TempDir()
	p := start(t, dir, filepath.Join(servertest.ShortTempDir(t), "r.sock"), "--enable-fault-injection", "--listen", "")
	ctx := context.Background()
	c := p.socketClient()
	if p.url != "" {
		t.Errorf("--listen '' still serves TCP on %s", p.url)
	}
	if err := c.ArmFault(ctx, api.Fault{Fault: api.FaultGarbleResponse}); err != nil {
		t.Fatal(err)
	}
	key := engine.OperationKey(uuid.NewString())
	status, body, _, err := c.Reserve(ctx, key, demo)
	var ue *client.UnexpectedResponseError
	if status != http.StatusOK || json.Valid(body) || !errors.As(err, &ue) {
		t.Fatalf("garbled = %d %q %v", status, body, err)
	}
	op, err := c.Operation(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if status, body, replayed, err := c.Reserve(ctx, key, demo); err != nil || status != http.StatusCreated || !replayed || !bytes.Equal(body, op.Response) {
		t.Errorf("retry = %d %s %v %v", status, body, replayed, err)
	}
	if code := p.stop(t); code != 0 {
		t.Errorf("exit code = %d", code)
	}
}

func TestSecondDaemonFailsFast(t *testing.T) {
	dir := t.TempDir()
	short := servertest.ShortTempDir(t)
	socket := filepath.Join(short, "r.sock")
	first := start(t, dir, socket)
	db := filepath.Join(dir, "reserved.db")

	mustFail(t, env(dir), "reserved: another reserved is already serving on socket "+socket+" (or starting on it: it holds "+socket+".lock)\n",
		"serve", "--db", db, "--socket", socket, "--listen", "")
	mustFail(t, env(dir), "reserved: database "+db+" is in use by another reserved\n",
		"serve", "--db", db, "--socket", filepath.Join(short, "other.sock"), "--listen", "")
	mustNotExist(t, filepath.Join(short, "other.sock"))

	// The first daemon is untouched.
	if who, err := first.socketClient().WhoAmI(context.Background()); err != nil || !who.Admin {
		t.Errorf("first daemon after the failed starts: %+v %v", who, err)
	}
	if code := first.stop(t); code != 0 {
		t.Errorf("exit code = %d", code)
	}
}

// TestListenAddressInUse: a TCP address that cannot be had refuses the
// start with the flag and variable that name it, before anything is
// created: no database file, no socket.
func TestListenAddressInUse(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dir := t.TempDir()
	db := filepath.Join(dir, "new", "reserved.db")
	socket := filepath.Join(servertest.ShortTempDir(t), "r.sock")
	addr := taken.Addr().String()
	want := "reserved: listen on " + addr + " (--listen, RESERVED_LISTEN): listen tcp " + addr + ": bind: address already in use; choose another address, or --listen '' to serve only the socket\n"
	mustFail(t, env(dir), want, "serve", "--db", db, "--socket", socket, "--listen", addr)
	mustNotExist(t, db)
	mustNotExist(t, filepath.Dir(db))
	mustNotExist(t, socket)
	if gc := (func() any {
		p := launch(t, env(dir), "serve", "--db", filepath.Join(dir, "ok.db"), "--socket", socket, "--listen", "", "--log-format", "json")
		p.socket = socket
		p.waitServing(t)
		defer p.stop(t)
		return p.logs.Find("reserved is serving")["group_commit"]
	})(); gc != true {
		t.Errorf("start line on bbolt says group_commit=%v", gc)
	}
}

func TestSocketFileHandling(t *testing.T) {
	dir := t.TempDir()
	short := servertest.ShortTempDir(t)

	// A socket that nothing answers on is replaced after the probe. The
	// paths come from the environment this time, and TCP is disabled.
	stale := filepath.Join(short, "stale.sock")
	staleSocket(t, stale)
	p := launch(t, env(dir, "RESERVED_DB="+filepath.Join(dir, "env.db"), "RESERVED_SOCKET="+stale, "RESERVED_LISTEN="), "--log-format", "json", "--no-demo")
	p.socket = stale
	p.waitServing(t)
	if p.url != "" {
		t.Errorf("RESERVED_LISTEN='' still serves TCP on %s", p.url)
	}
	if ws, err := p.socketClient().Workshops(context.Background(), false); err != nil || len(ws) != 0 {
		t.Errorf("workshops with --no-demo = %v %v", ws, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "env.db")); err != nil {
		t.Errorf("RESERVED_DB was not used: %v", err)
	}
	if code := p.stop(t); code != 0 {
		t.Errorf("exit code = %d", code)
	}
	mustNotExist(t, stale)

	// A file that is not a socket is never removed.
	regular := filepath.Join(short, "file.sock")
	if err := os.WriteFile(regular, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustFail(t, env(dir), "reserved: "+regular+" exists and is not a socket: remove it or choose another --socket\n",
		"serve", "--db", filepath.Join(dir, "reserved.db"), "--socket", regular, "--listen", "")
	if data, err := os.ReadFile(regular); err != nil || string(data) != "keep me" {
		t.Errorf("the regular file was touched: %q %v", data, err)
	}
}

// TestSocketOfAnotherUserRefused: a socket in a world-writable directory,
// such as the default /tmp/reserved-<uid>.sock, that belongs to another
// user is neither served on nor replaced, listening or not.
func TestSocketOfAnotherUserRefused(t *testing.T) {
	dir := t.TempDir()
	socket, ln := pathstest.ForeignSocket(t, 0o777|os.ModeSticky, "r.sock")
	want := "reserved: " + (&paths.SocketOwnerError{Path: socket, Owner: pathstest.ForeignUID}).Error() + "\n"
	mustFail(t, env(dir), want, "serve", "--db", filepath.Join(dir, "reserved.db"), "--socket", socket, "--listen", "")
	// Closed, it would look stale; it is still not replaced.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	mustFail(t, env(dir), want, "serve", "--db", filepath.Join(dir, "reserved.db"), "--socket", socket, "--listen", "")
	if fi, err := os.Lstat(socket); err != nil || fi.Sys().(*syscall.Stat_t).Uid != pathstest.ForeignUID {
		t.Errorf("the other user's socket was touched: %v %v", fi, err)
	}
}

func TestClientWithoutDaemon(t *testing.T) {
	socket := filepath.Join(servertest.ShortTempDir(t), "none.sock")
	_, err := (&client.Client{Socket: socket}).WhoAmI(context.Background())
	var ce *client.ConnectError
	if !errors.As(err, &ce) || err.Error() != "cannot connect to reserved at "+socket+": is it running?" {
		t.Errorf("whoami without a daemon: %v", err)
	}
}

// mustFail runs reserved with args and wants exit status 1 and exactly the
// one line want as its output.
func mustFail(t *testing.T, environ []string, want string, args ...string) {
	t.Helper()
	p := launch(t, environ, args...)
	if code := p.wait(t); code != 1 || p.logs.String() != want {
		t.Errorf("reserved %s = exit %d, %q; want exit 1, %q", strings.Join(args, " "), code, p.logs, want)
	}
}

// TestTuning starts the daemon with each tuning flag and environment
// variable and reads the value in effect from its start line: the garbage
// collector target (its own default, also with an empty GOGC; GOGC from the
// environment, off being -1; --gc-percent, which wins over GOGC) and the
// committer's nice value. Out-of-range values are usage errors.
func TestTuning(t *testing.T) {
	for _, tc := range []struct {
		name  string
		env   []string
		args  []string
		field string
		want  float64
	}{
		{"GCDefault", nil, nil, "gc_percent", 400},
		{"GOGC", []string{"GOGC=150"}, nil, "gc_percent", 150},
		{"GCFlagOverGOGC", []string{"GOGC=150"}, []string{"--gc-percent", "250"}, "gc_percent", 250},
		{"EmptyGOGC", []string{"GOGC="}, nil, "gc_percent", 400},
		{"GCOff", []string{"GOGC=off"}, nil, "gc_percent", -1},
		{"NiceDefault", nil, nil, "committer_nice", -10},
		{"NiceOff", nil, []string{"--committer-nice", "0"}, "committer_nice", 0},
		{"RateDefault", nil, nil, "rate_limit", 50},
		{"BurstDefault", nil, nil, "rate_burst", 100},
		{"RateGiven", nil, []string{"--rate-limit", "2.5"}, "rate_limit", 2.5},
		{"RateFromEnvironment", []string{"RESERVED_RATE_LIMIT=7"}, nil, "rate_limit", 7},
		{"RateOffByBurst", nil, []string{"--rate-burst", "0"}, "rate_limit", 0},
		{"BurstOffByRate", nil, []string{"--rate-limit", "0"}, "rate_burst", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			socket := filepath.Join(servertest.ShortTempDir(t), "r.sock")
			args := append([]string{"serve", "--db", filepath.Join(dir, "reserved.db"), "--socket", socket, "--listen", "", "--log-format", "json"}, tc.args...)
			p := launch(t, env(dir, tc.env...), args...)
			p.socket = socket
			p.waitServing(t)
			want := tc.want
			// Without CAP_SYS_NICE (root has it, as in CI) the committer
			// keeps the daemon's priority and the log says why; the thread
			// itself is checked in internal/boltstore.
			if strings.Contains(p.logs.String(), "the group committer runs at the daemon's priority") {
				if tc.field != "committer_nice" || tc.want == 0 {
					t.Errorf("log says the committer's priority was refused, but none was asked for; log:\n%s", p.logs)
				}
				want = 0
			}
			if got := p.logs.Find("reserved is serving")[tc.field]; got != want {
				t.Errorf("%s = %v, want %v", tc.field, got, want)
			}
			if code := p.stop(t); code != 0 {
				t.Fatalf("exit code after SIGTERM = %d", code)
			}
		})
	}
	for _, tc := range []struct{ flag, value, want string }{
		{"--gc-percent", "-2", "--gc-percent must be at least 0, or -1"},
		{"--committer-nice", "20", "--committer-nice must be between -20 and 19, not 20"},
		{"--committer-nice", "-21", "--committer-nice must be between -20 and 19, not -21"},
		{"--write-timeout", "0s", "--write-timeout must be positive, not 0s"},
		{"--rate-limit", "-1", "--rate-limit must be a number of requests a second, 0 or more (0 turns the limit off), not -1"},
		{"--rate-limit", "NaN", "--rate-limit must be a number of requests a second, 0 or more (0 turns the limit off), not NaN"},
		{"--rate-burst", "-5", "--rate-burst must be 0 or more (0 turns the limit off), not -5"},
	} {
		dir := t.TempDir()
		p := launch(t, env(dir), "serve", "--db", filepath.Join(dir, "reserved.db"), "--socket", filepath.Join(servertest.ShortTempDir(t), "r.sock"), "--listen", "", tc.flag, tc.value)
		if code := p.wait(t); code != daemon.ExitUsage || !strings.Contains(p.logs.String(), tc.want) {
			t.Errorf("%s %s: exit %d, %s; want a usage error", tc.flag, tc.value, code, p.logs)
		}
	}
}

// TestClearTextWarning: a TCP listener on an address that is not loopback
// serves plain HTTP to the network, where tokens and sessions travel in
// clear text and browsers do not run the form's sign-in, so the daemon
// warns at start; on loopback it does not.
func TestClearTextWarning(t *testing.T) {
	for _, tc := range []struct {
		listen string
		warn   bool
	}{{"0.0.0.0:0", true}, {"127.0.0.1:0", false}} {
		p := start(t, t.TempDir(), filepath.Join(servertest.ShortTempDir(t), "r.sock"), "--listen", tc.listen)
		w := p.logs.Find(daemon.ClearTextWarning, "level", "WARN")
		if (w != nil) != tc.warn || (w != nil && w["tcp"] != p.logs.Find("reserved is serving")["tcp"]) {
			t.Errorf("--listen %s: warning %v, want one naming the listener: %v", tc.listen, w, tc.warn)
		}
		p.stop(t)
	}
}

// TestLogLevel: with --log-level warn the daemon logs its warnings (here
// that fault injection is on) and no line below them: neither its start
// lines nor the request lines; its shutdown line reports the timeout in
// milliseconds at the default level.
func TestLogLevel(t *testing.T) {
	dir := t.TempDir()
	socket := filepath.Join(servertest.ShortTempDir(t), "r.sock")
	p := launch(t, env(dir), serveArgs(dir, socket, "--log-level", "warn", "--enable-fault-injection")...)
	p.socket = socket
	servertest.Eventually(t, startTimeout, "the fault injection warning", func() bool {
		return p.logs.Find("fault injection is enabled: admins can make reservations fail or answers break via POST /api/v1/debug/faults; never use this in production") != nil
	})
	// The warning comes before the listeners serve: wait for an answer.
	servertest.Eventually(t, startTimeout, "an answer on the socket", func() bool {
		_, err := p.socketClient().WhoAmI(context.Background())
		return err == nil
	})
	if code := p.stop(t); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d", code)
	}
	recs, err := p.logs.Records()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r["level"] != "WARN" && r["level"] != "ERROR" {
			t.Errorf("--log-level warn logged %v", r)
		}
	}

	p = start(t, dir, socket)
	if code := p.stop(t); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d", code)
	}
	if r := p.logs.Find("shutting down"); r == nil || r["timeout_ms"] != float64(10000) {
		t.Errorf("shutdown line = %v, want timeout_ms 10000", r)
	}
}
