package daemon_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/paths/pathstest"
	"github.com/reserve/reserve/internal/pgstore/pgtest"
	"github.com/reserve/reserve/internal/server/servertest"
	"github.com/reserve/reserve/internal/testskip"
)

// notifySocket listens for the daemon's service manager notifications
// on a datagram socket, as systemd does, and delivers each datagram.
func notifySocket(t *testing.T) (string, <-chan string) {
	t.Helper()
	path := filepath.Join(servertest.ShortTempDir(t), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	msgs := make(chan string, 1000)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(msgs)
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	return path, msgs
}

// next returns the next notification, failing t if none comes in time.
func next(t *testing.T, msgs <-chan string, want string) string {
	t.Helper()
	select {
	case m := <-msgs:
		return m
	case <-time.After(startTimeout):
		t.Fatalf("no notification within %v, waiting for %s", startTimeout, want)
	}
	return ""
}

// freePort returns a loopback TCP address that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestServiceNotifications runs reserved as systemd runs a Type=notify
// service: READY=1 comes only once both the socket and the TCP address
// accept connections, WATCHDOG=1 comes at half of WATCHDOG_USEC while the
// store answers reads, and SIGTERM brings STOPPING=1 and a clean exit.
func TestServiceNotifications(t *testing.T) {
	dir := t.TempDir()
	socket := filepath.Join(servertest.ShortTempDir(t), "r.sock")
	notify, msgs := notifySocket(t)
	addr := freePort(t)
	const watchdog = 400 * time.Millisecond
	started := time.Now()
	p := launch(t, env(dir, "NOTIFY_SOCKET="+notify, "WATCHDOG_USEC="+strconv.FormatInt(watchdog.Microseconds(), 10)),
		"serve", "--db", filepath.Join(dir, "reserved.db"), "--socket", socket, "--listen", addr, "--log-format", "json")
	p.socket = socket
	if m := next(t, msgs, "READY=1"); m != "READY=1" {
		t.Fatalf("first notification = %q, want READY=1", m)
	}
	for _, network := range []string{"unix", "tcp"} {
		target := socket
		if network == "tcp" {
			target = addr
		}
		c, err := net.Dial(network, target)
		if err != nil {
			t.Fatalf("at READY=1 the %s listener does not accept: %v", network, err)
		}
		c.Close()
	}
	// Each ping follows a tick of half the watchdog interval, so the n-th
	// one after the first comes no sooner than n half-intervals after the
	// process started.
	const pings = 4
	for i := range pings {
		if m := next(t, msgs, "WATCHDOG=1"); m != "WATCHDOG=1" {
			t.Fatalf("notification %d after READY=1 = %q, want WATCHDOG=1", i+1, m)
		}
	}
	if early := time.Duration(pings-1) * watchdog / 2; time.Since(started) < early {
		t.Errorf("%d watchdog pings within %v: more often than every %v", pings, time.Since(started), watchdog/2)
	}
	p.waitServing(t)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for m := next(t, msgs, "STOPPING=1"); m != "STOPPING=1"; m = next(t, msgs, "STOPPING=1") {
		if m != "WATCHDOG=1" {
			t.Fatalf("notification at shutdown = %q, want STOPPING=1", m)
		}
	}
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit code = %d", code)
	}
}

// TestWatchdogOfAnotherProcess: a WATCHDOG_PID naming another process
// means the pings are not ours to send.
func TestWatchdogOfAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	socket := filepath.Join(servertest.ShortTempDir(t), "r.sock")
	notify, msgs := notifySocket(t)
	p := launch(t, env(dir, "NOTIFY_SOCKET="+notify, "WATCHDOG_USEC=20000", "WATCHDOG_PID=1"), serveArgs(dir, socket)...)
	p.socket = socket
	if m := next(t, msgs, "READY=1"); m != "READY=1" {
		t.Fatalf("first notification = %q, want READY=1", m)
	}
	p.waitServing(t)
	if code := p.stop(t); code != 0 {
		t.Fatalf("exit code = %d", code)
	}
	if m := next(t, msgs, "STOPPING=1"); m != "STOPPING=1" {
		t.Fatalf("notification = %q, want only STOPPING=1 after READY=1", m)
	}
}

// needSocketActivate returns the path of systemd-socket-activate; without
// it the test fails under RESERVE_CI and skips loudly elsewhere.
func needSocketActivate(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("systemd-socket-activate")
	if err == nil {
		return path
	}
	if os.Getenv("RESERVE_CI") != "" {
		t.Fatalf("socket activation tests need systemd-socket-activate (package systemd), and CI (RESERVE_CI) must run them: %v", err)
	}
	testskip.Missing(t, "systemd", "socket activation: systemd-socket-activate is not installed (%v); install systemd to run this test", err)
	return ""
}

// activated runs reserved under systemd-socket-activate with the given
// listener arguments (-l, --fdname, -d) and reserved's arguments.
func activated(t *testing.T, dir string, listeners []string, args ...string) *proc {
	t.Helper()
	activate := needSocketActivate(t)
	// The activator's own messages are not JSON; only warnings are kept.
	full := append(append([]string{"-E", "PATH=" + os.Getenv("PATH"), "-E", "HOME=" + dir}, listeners...), append([]string{reservedBin}, args...)...)
	p := launchProgram(t, env(dir, "SYSTEMD_LOG_LEVEL=warning"), activate, full...)
	triggerActivation(t, p, listeners)
	return p
}

// triggerActivation connects to the first listener, or sends a datagram
// to it, which makes systemd-socket-activate exec its program. The
// connection is closed at once: it waits in the listener's backlog all
// the same, and the program reads its end. Kept open, it would be a
// connection that never sends a request, which the daemon's graceful stop
// waits 5 s for.
func triggerActivation(t *testing.T, p *proc, listeners []string) {
	t.Helper()
	network, addr := "unix", ""
	for i, a := range listeners {
		switch {
		case a == "-d":
			network = "unixgram"
		case a == "-l" && addr == "":
			addr = listeners[i+1]
		}
	}
	if !strings.HasPrefix(addr, "/") {
		network = "tcp"
	}
	servertest.Eventually(t, startTimeout, "systemd-socket-activate listening on "+addr, func() bool {
		select {
		case <-p.done:
			t.Fatalf("systemd-socket-activate exited before it was triggered: %v\n%s", p.err, p.logs)
		default:
		}
		c, err := net.Dial(network, addr)
		if err != nil {
			return false
		}
		if network == "unixgram" {
			c.Write([]byte("x"))
		}
		c.Close()
		return true
	})
}

// TestSocketActivation runs reserved on the listeners systemd passes: the
// Unix socket and the TCP listener replace --socket and --listen (here
// both unusable), socket peers are identified by their credentials as on
// a socket of its own, TCP clients by token, and the daemon takes no lock
// file beside the socket and leaves the socket file, which is systemd's,
// in place when it stops.
func TestSocketActivation(t *testing.T) {
	dir := t.TempDir()
	socket := filepath.Join(servertest.ShortTempDir(t), "r.sock")
	notAFile := filepath.Join(dir, "file")
	if err := os.WriteFile(notAFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	p := activated(t, dir, []string{"-l", socket, "-l", freePort(t), "--fdname=socket:tcp"},
		"serve", "--db", filepath.Join(dir, "reserved.db"), "--socket", filepath.Join(notAFile, "r.sock"), "--listen", "256.0.0.1:1", "--log-format", "json")
	p.socket = socket
	p.waitServing(t)
	if r := p.logs.Find("reserved is serving"); r["socket"] != socket || r["socket_activated"] != true {
		t.Errorf("start line = %v, want the inherited socket %s", r, socket)
	}
	ctx := context.Background()
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	who, err := p.socketClient().WhoAmI(ctx)
	if err != nil || who.Actor != "unix-"+me.Username || !who.Admin {
		t.Fatalf("whoami on the inherited socket = %+v %v, want unix-%s, an admin", who, err, me.Username)
	}
	token, err := p.socketClient().CreateToken(ctx, "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	if who, err := p.tcpClient(token).WhoAmI(ctx); err != nil || who.Actor != "alice" || who.Admin {
		t.Fatalf("whoami on the inherited TCP listener = %+v %v", who, err)
	}
	mustNotExist(t, socket+".lock")
	if code := p.stop(t); code != 0 {
		t.Fatalf("exit code = %d", code)
	}
	if fi, err := os.Lstat(socket); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Errorf("the inherited socket file is gone: %v %v", fi, err)
	}
}

// TestSocketActivationRefusesWrongListeners: a listener of an unknown
// name, of the wrong family, or one that does not listen is refused with
// exit status 2 and a line that names it, before any database is made.
func TestSocketActivationRefusesWrongListeners(t *testing.T) {
	for _, tc := range []struct {
		name      string
		listeners func(sockDir string) []string
		want      string
	}{
		{"UnknownName", func(d string) []string {
			return []string{"-l", filepath.Join(d, "r.sock"), "--fdname=api"}
		}, `reserved: socket activation passed a listener named "api": reserved takes only "socket" (the Unix socket) and "tcp" (the TCP listener); set FileDescriptorName= in the socket unit`},
		{"TCPAsSocket", func(string) []string {
			return []string{"-l", freePort(t), "--fdname=socket"}
		}, `reserved: socket activation: listener "socket" is a tcp socket on 127.0.0.1:`},
		{"UnixAsTCP", func(d string) []string {
			return []string{"-l", filepath.Join(d, "r.sock"), "--fdname=tcp"}
		}, `reserved: socket activation: listener "tcp" is a unix socket on ` + "/"},
		{"Datagram", func(d string) []string {
			return []string{"-d", "-l", filepath.Join(d, "r.sock"), "--fdname=socket"}
		}, `reserved: socket activation: listener "socket": it is a socket that does not listen`},
		{"Unnamed", func(d string) []string {
			return []string{"-l", filepath.Join(d, "r.sock")}
		}, `reserved: socket activation: LISTEN_FDS=1 passes 1 file descriptors but LISTEN_FDNAMES="" names 0; name each one (FileDescriptorName= or systemd-socket-activate --fdname)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			db := filepath.Join(dir, "reserved.db")
			p := activated(t, dir, tc.listeners(servertest.ShortTempDir(t)), "serve", "--db", db, "--listen", "")
			if code := p.wait(t); code != 2 || !strings.HasPrefix(p.logs.String(), tc.want) || strings.Count(p.logs.String(), "\n") != 1 {
				t.Errorf("exit %d, %q; want exit 2 and one line starting %q", code, p.logs, tc.want)
			}
			mustNotExist(t, db)
		})
	}
}

// TestAdminGroup: with --admin-group, a socket peer whose group it is
// (here uid and gid 65534, run as that user) is an admin; without it the
// same peer is not.
func TestAdminGroup(t *testing.T) {
	pathstest.NeedRoot(t)
	group, err := user.LookupGroupId(strconv.Itoa(pathstest.ForeignUID))
	if err != nil {
		t.Fatalf("gid %d has no group: %v", pathstest.ForeignUID, err)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		admin bool
	}{
		{"Member", []string{"--admin-group", group.Name}, true},
		{"NoFlag", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			sockDir := servertest.ShortTempDir(t)
			if err := os.Chmod(sockDir, 0o755); err != nil {
				t.Fatal(err)
			}
			socket := filepath.Join(sockDir, "r.sock")
			p := start(t, dir, socket, append([]string{"--socket-mode", "0666"}, tc.args...)...)
			pathstest.RunAsNobody(t, "^TestAdminGroupPeer$", peerEnv+"="+socket, "TEST_WANT_ADMIN="+strconv.FormatBool(tc.admin))
			if code := p.stop(t); code != 0 {
				t.Fatalf("exit code = %d", code)
			}
		})
	}
}

// peerEnv names the daemon's socket to a test's peer run as another
// user.
const peerEnv = "RESERVE_TEST_PEER_SOCKET"

// TestAdminGroupPeer is TestAdminGroup's peer, run as another user.
func TestAdminGroupPeer(t *testing.T) {
	socket := os.Getenv(peerEnv)
	if socket == "" {
		t.Skip("run by TestAdminGroup")
	}
	who, err := (&client.Client{Socket: socket}).WhoAmI(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := os.Getenv("TEST_WANT_ADMIN") == "true"; who.Admin != want {
		t.Fatalf("whoami as uid %d = %+v, want admin %v", os.Getuid(), who, want)
	}
}

// TestAdminGroupUnknown: an --admin-group that names no group is a usage
// error, before anything is made.
func TestAdminGroupUnknown(t *testing.T) {
	dir := t.TempDir()
	socket := filepath.Join(servertest.ShortTempDir(t), "r.sock")
	p := launch(t, env(dir), serveArgs(dir, socket, "--admin-group", "no-such-group-xyz")...)
	if code := p.wait(t); code != 2 || !strings.HasPrefix(p.logs.String(), `reserved: --admin-group "no-such-group-xyz": `) {
		t.Errorf("exit %d, %q", code, p.logs)
	}
	mustNotExist(t, socket)
	mustNotExist(t, filepath.Join(dir, "reserved.db"))
}

// TestWatchdogAndReadyzFollowPostgres runs reserved on PostgreSQL through
// a proxy and takes the database away, cut off (connections refused) or
// stalled (accepted, never answered): /readyz answers 503
// store_unavailable within a bounded time, /livez stays 200, and the
// watchdog pings stop, each missed one logged; once the database is back,
// the pings and /readyz's 200 return.
func TestWatchdogAndReadyzFollowPostgres(t *testing.T) {
	t.Parallel()
	for _, outage := range []string{"Cut", "Stall"} {
		t.Run(outage, func(t *testing.T) {
			dsn, _ := pgtest.FreshSchema(t)
			proxy, via := pgtest.NewProxy(t, dsn)
			dir := t.TempDir()
			socket := filepath.Join(servertest.ShortTempDir(t), "r.sock")
			notify, msgs := notifySocket(t)
			p := launch(t, env(dir, "NOTIFY_SOCKET="+notify, "WATCHDOG_USEC=400000"),
				"serve", "--store", "postgres", "--dsn", via, "--socket", socket, "--listen", "", "--log-format", "json")
			p.socket = socket
			if m := next(t, msgs, "READY=1"); m != "READY=1" {
				t.Fatalf("first notification = %q", m)
			}
			if m := next(t, msgs, "WATCHDOG=1"); m != "WATCHDOG=1" {
				t.Fatalf("notification = %q, want WATCHDOG=1", m)
			}
			p.waitServing(t)
			ctx := context.Background()
			get := func(path string) (*http.Response, []byte) {
				t.Helper()
				resp, body, err := p.socketClient().Do(ctx, http.MethodGet, path, nil, nil)
				if err != nil {
					t.Fatalf("GET %s: %v", path, err)
				}
				return resp, body
			}
			if resp, body := get(api.PathReady); resp.StatusCode != http.StatusOK {
				t.Fatalf("/readyz with the database up = %d %s", resp.StatusCode, body)
			}
			if outage == "Cut" {
				proxy.Cut()
			} else {
				proxy.Stall()
			}
			servertest.Eventually(t, startTimeout, "/readyz 503", func() bool {
				resp, body := get(api.PathReady)
				return wantStoreUnavailable(resp, body) == nil
			})
			if resp, body := get(api.PathLive); resp.StatusCode != http.StatusOK {
				t.Errorf("/livez with the database down = %d %s", resp.StatusCode, body)
			}
			missed := func() int {
				recs, _ := p.logs.Records()
				n := 0
				for _, r := range recs {
					if r["msg"] == "no watchdog ping: the store does not answer reads" {
						n++
					}
				}
				return n
			}
			// A ping sent before the outage may still be on its way until
			// the first missed one is logged; none may come after.
			var first int
			servertest.Eventually(t, startTimeout, "a missed watchdog ping", func() bool { first = missed(); return first > 0 })
			servertest.Eventually(t, startTimeout, "another missed watchdog ping", func() bool { return missed() > first })
			for len(msgs) > 0 {
				<-msgs
			}
			mark := missed()
			servertest.Eventually(t, startTimeout, "two more missed watchdog pings", func() bool { return missed() >= mark+2 })
			for len(msgs) > 0 {
				if m := <-msgs; m == "WATCHDOG=1" {
					t.Fatal("a watchdog ping was sent while the database was down")
				}
			}
			proxy.Restore()
			if m := next(t, msgs, "WATCHDOG=1"); m != "WATCHDOG=1" {
				t.Fatalf("notification after the database came back = %q, want WATCHDOG=1", m)
			}
			if resp, body := get(api.PathReady); resp.StatusCode != http.StatusOK {
				t.Errorf("/readyz after the database came back = %d %s", resp.StatusCode, body)
			}
			if code := p.stop(t); code != 0 {
				t.Errorf("exit code = %d", code)
			}
		})
	}
}

// TestNoReadyWithoutStore: a daemon whose store cannot be opened (another
// process holds the database's lock) never says READY=1, although its
// listeners were already up, and exits with an error.
func TestNoReadyWithoutStore(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "reserved.db")
	held, err := boltstore.Open(db, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	socket := filepath.Join(servertest.ShortTempDir(t), "r.sock")
	notify, msgs := notifySocket(t)
	p := launch(t, env(dir, "NOTIFY_SOCKET="+notify), serveArgs(dir, socket)...)
	if code := p.wait(t); code == 0 {
		t.Fatalf("reserved served on a locked database:\n%s", p.logs)
	}
	// Everything the daemon sent is queued before this marker.
	c, err := net.Dial("unixgram", notify)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("marker"))
	c.Close()
	for m := next(t, msgs, "marker"); m != "marker"; m = next(t, msgs, "marker") {
		if m == "READY=1" {
			t.Fatal("READY=1 was sent although the store never opened")
		}
	}
}
