//go:build linux

package daemon_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/cli"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/paths/pathstest"
	"github.com/reserve/reserve/internal/server"
	"github.com/reserve/reserve/internal/server/servertest"
)

// The uids of TestSocketAdminsKeepTheirSlots: none of them is root, and
// each has a gid of its own number, so that only the one given the admin
// group is in it.
const (
	slotsDaemonUID = 65530 // Runs the daemon.
	slotsMemberUID = 65528 // A member of the admin group.
	slotsLateUID   = 65527 // Comes when the slots not kept for admins are full.
)

// slotsHoarders are the uids that hoard socket connections, in turn.
var slotsHoarders = []int{65534, 65533, 65532, 65531}

// TestSocketAdminsKeepTheirSlots runs the daemon as a user of its own with
// a socket open to everyone and a cap of 16 socket connections, and lets
// users who are not admins, each a real process of its own uid, open
// socket connections until one is refused, sending pipelined requests on
// each and never reading the answers, so that every connection stays busy
// until the write timeout: the first hoarder gets its share and no more,
// while root, the daemon's own user and a member of --admin-group are
// answered; another user still gets its own share; once the hoarders hold
// every slot not kept for admins the admins are still answered, and a
// latecomer's reservectl is refused with an answer that says nothing was
// read (exit 75, the intent kept).
func TestSocketAdminsKeepTheirSlots(t *testing.T) {
	pathstest.NeedRootFor(t, "running processes as other users", "that admins keep their socket connections")
	const maxConns = 16
	reserved, share := server.SocketSlots(maxConns)
	if reserved != 2 || share != 4 {
		t.Fatalf("SocketSlots(%d) = %d, %d; this test is written for 2 reserved slots and a share of 4", maxConns, reserved, share)
	}
	admins, err := user.LookupGroup("users")
	if err != nil {
		t.Fatalf("the admin group of this test, users, does not exist: %v", err)
	}
	adminGID, _ := strconv.Atoi(admins.Gid)

	o := newOtherUsers(t)
	p := o.startDaemonAs(t, slotsDaemonUID, "--max-socket-connections", strconv.Itoa(maxConns), "--admin-group", admins.Name,
		"--socket-mode", "0666", "--write-timeout", "10m")
	if r := p.logs.Find("reserved is serving"); r["socket_admin_slots"] != float64(reserved) || r["socket_uid_share"] != float64(share) {
		t.Errorf("start line = %v, want socket_admin_slots %d and socket_uid_share %d", r, reserved, share)
	}
	token, err := p.socketClient().CreateToken(context.Background(), "ops", true)
	if err != nil {
		t.Fatal(err)
	}
	growListing(t, p, token)
	adminsAnswered := func(when string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), answerTimeout)
		defer cancel()
		if who, err := p.socketClient().WhoAmI(ctx); err != nil || !who.Admin {
			t.Fatalf("%s: root asking whoami on the socket: %+v, %v", when, who, err)
		}
		for _, peer := range []struct {
			name     string
			uid, gid int
		}{{"the daemon's own user", slotsDaemonUID, slotsDaemonUID}, {"a member of --admin-group", slotsMemberUID, adminGID}} {
			if got := o.whoami(t, p.socket, peer.uid, peer.gid); !strings.HasSuffix(got, " admin=true") {
				t.Errorf("%s: %s (uid %d) asking whoami on the socket: %s", when, peer.name, peer.uid, got)
			}
		}
	}

	first := o.hoard(t, p.socket, slotsHoarders[0])
	adminsAnswered("with one user's connections busy")
	wantShare := fmt.Sprintf("uid %d holds its share of %d socket connections, each busy with a request (one whose answers are not being read is busy): reserved closed this connection without reading a request from it, so nothing was done; retry", slotsHoarders[0], share)
	first.want(t, share, wantShare)
	// Another user who is not an admin gets its own share, then two more
	// take the rest of the slots not kept for admins.
	for _, uid := range slotsHoarders[1:3] {
		o.hoard(t, p.socket, uid).want(t, share, fmt.Sprintf("uid %d holds its share of %d socket connections", uid, share))
	}
	const wantUnreserved = "the 14 socket connections not kept for admins are all held, each busy with a request: reserved closed this connection without reading a request from it, so nothing was done; retry"
	o.hoard(t, p.socket, slotsHoarders[3]).want(t, maxConns-reserved-3*share, wantUnreserved)
	adminsAnswered("with every slot not kept for admins busy")

	// A latecomer's reservectl is refused before anything of its intent
	// is sent, and says so: with the answer that the daemon read no
	// request when it wrote its request before the daemon closed the
	// connection, else that the daemon closed it before the request was
	// sent.
	out := o.peer(t, slotsLateUID, slotsLateUID, "reserve", p.socket)
	const kept = "; your intent is kept — run: reservectl reserve --retry\n"
	wantCLI := []string{
		"peer exit 75\npeer stderr outcome unknown: nothing was sent: too_many_connections: " + wantUnreserved + kept,
		"peer exit 75\npeer stderr outcome unknown: nothing was sent: cannot connect to reserved at " + p.socket + ": it closed the connection before the request was sent (restarting, or at its connection cap?)" + kept,
	}
	if !slices.Contains(wantCLI, out) {
		t.Errorf("reservectl reserve as uid %d printed\n%s\nwant one of\n%s", slotsLateUID, out, strings.Join(wantCLI, "\n"))
	}

	ctx, cancel := context.WithTimeout(context.Background(), answerTimeout)
	defer cancel()
	_, metrics, err := p.tcpClient(token).Do(ctx, http.MethodGet, api.PathMetrics, nil, nil)
	for _, want := range []string{
		`reserved_connections_at_cap_total{action="refused_share",listener="socket"} 3`,
		`reserved_connections_at_cap_total{action="refused_unreserved",listener="socket"} 2`,
	} {
		if err != nil || !strings.Contains(string(metrics), want+"\n") {
			t.Errorf("metrics (%v) lack %s", err, want)
		}
	}
	if p.logs.Find("a listener closed new connections of a user at once: that user held its whole share of connections, each busy with a request", "listener", "socket", "uid", strconv.Itoa(slotsHoarders[0])) == nil {
		t.Error("the log does not say which user held its share")
	}
	o.stopPeers(t)
	if code := p.stop(t); code != 0 {
		t.Errorf("exit code = %d", code)
	}
}

// growListing adds workshops until the answer to GET /api/v1/workshops is
// longer than three times a Unix socket's default send buffer
// (net.core.wmem_default): the daemon cannot write one such answer to a
// client that does not read it, so from its first request on, a hoarder's
// connection is busy for good, never idle between two answers, and what
// the listener may close to make room does not depend on timing.
func growListing(t *testing.T, p *proc, token string) {
	t.Helper()
	raw, err := os.ReadFile("/proc/sys/net/core/wmem_default")
	if err != nil {
		t.Fatal(err)
	}
	sndbuf, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	// Each '<' of a title is six bytes of JSON (\u003c).
	title := strings.Repeat("<", 200)
	n := 3*sndbuf/(6*len(title)) + 1
	c := p.tcpClient(token)
	ids := make(chan string)
	errs := make(chan error, 8)
	for range cap(errs) {
		go func() {
			var err error
			for id := range ids {
				if err == nil {
					_, _, err = c.PutWorkshop(context.Background(), id, engine.WorkshopSpec{Capacity: 1, Title: title}, nil)
				}
			}
			errs <- err
		}()
	}
	for i := range n {
		ids <- fmt.Sprintf("filler-%d", i)
	}
	close(ids)
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), answerTimeout)
	defer cancel()
	_, body, err := p.socketClient().Do(ctx, http.MethodGet, api.PathWorkshops, nil, nil)
	if err != nil || len(body) < 3*sndbuf {
		t.Fatalf("the workshop listing has %d bytes (%v), want more than %d", len(body), err, 3*sndbuf)
	}
}

// otherUsers runs this test binary and reserved as other users, from a
// directory they may enter.
type otherUsers struct {
	dir      string
	test     string // A copy of this test binary.
	reserved string // A copy of reserved.
	peers    []*exec.Cmd
}

func newOtherUsers(t *testing.T) *otherUsers {
	t.Helper()
	dir := servertest.ShortTempDir(t)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	o := &otherUsers{dir: dir, test: filepath.Join(dir, "test"), reserved: filepath.Join(dir, "reserved")}
	for from, to := range map[string]string{self: o.test, reservedBin: o.reserved} {
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { o.stopPeers(t) })
	return o
}

// userDir makes a directory of uid's in o.dir.
func (o *otherUsers) userDir(t *testing.T, name string, uid int, mode os.FileMode) string {
	t.Helper()
	dir := filepath.Join(o.dir, name)
	if err := os.Mkdir(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, uid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	return dir
}

// as makes cmd run as uid and gid, with no supplementary groups.
func as(cmd *exec.Cmd, uid, gid int) *exec.Cmd {
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}
	return cmd
}

// startDaemonAs starts reserved as uid, with its database and its socket
// in directories of that user, and waits until it serves.
func (o *otherUsers) startDaemonAs(t *testing.T, uid int, extra ...string) *proc {
	t.Helper()
	state := o.userDir(t, "daemon", uid, 0o700)
	socket := filepath.Join(o.userDir(t, "run", uid, 0o755), "r.sock")
	cmd := exec.Command(o.reserved, serveArgs(state, socket, extra...)...)
	cmd.Env = env(state)
	p := launchCmd(t, as(cmd, uid, uid))
	p.socket = socket
	p.waitServing(t)
	return p
}

// peerRole names what TestSocketSlotsPeer does.
const peerRole = "RESERVE_TEST_PEER_ROLE"

// peerCmd returns the command that runs TestSocketSlotsPeer as uid and gid
// in role against socket.
func (o *otherUsers) peerCmd(t *testing.T, uid, gid int, role, socket string) *exec.Cmd {
	t.Helper()
	home := o.userDir(t, fmt.Sprintf("home-%d-%s-%d", uid, role, len(o.peers)), uid, 0o700)
	cmd := exec.Command(o.test, "-test.run=^TestSocketSlotsPeer$")
	cmd.Dir = home
	cmd.Env = []string{"HOME=" + home, "TMPDIR=" + home, "PATH=" + os.Getenv("PATH"), pathstest.QuickRaceExit(), peerEnv + "=" + socket, peerRole + "=" + role}
	return as(cmd, uid, gid)
}

// peer runs TestSocketSlotsPeer in role to its end and returns the lines it
// printed for the test.
func (o *otherUsers) peer(t *testing.T, uid, gid int, role, socket string) string {
	t.Helper()
	cmd := o.peerCmd(t, uid, gid, role, socket)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("peer %s as uid %d: %v\n%s", role, uid, err, out)
	}
	var lines strings.Builder
	for line := range strings.Lines(string(out)) {
		if strings.HasPrefix(line, "peer ") {
			lines.WriteString(line)
		}
	}
	return lines.String()
}

// whoami asks whoami on socket as uid and gid and returns what the peer
// printed: "<actor> admin=<bool>", or the error.
func (o *otherUsers) whoami(t *testing.T, socket string, uid, gid int) string {
	t.Helper()
	return strings.TrimSpace(strings.TrimPrefix(o.peer(t, uid, gid, "whoami", socket), "peer whoami "))
}

// hoarder is a peer that holds socket connections until stopPeers.
type hoarder struct {
	uid     int
	held    int    // Connections the daemon admitted and still holds.
	refusal string // The answer to the first connection it refused.
}

// hoard starts a peer as uid that opens socket connections until one is
// refused and holds them, and returns what it reports.
func (o *otherUsers) hoard(t *testing.T, socket string, uid int) hoarder {
	t.Helper()
	cmd := o.peerCmd(t, uid, uid, "hoard", socket)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cmd.StdinPipe(); err != nil { // Closed by stopPeers.
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	o.peers = append(o.peers, cmd)
	h := hoarder{uid: uid, held: -1}
	sc := bufio.NewScanner(stdout)
	for h.refusal == "" && sc.Scan() {
		if n, ok := strings.CutPrefix(sc.Text(), "peer held "); ok {
			h.held, _ = strconv.Atoi(n)
		}
		if r, ok := strings.CutPrefix(sc.Text(), "peer refusal "); ok {
			h.refusal = r
		}
	}
	if h.refusal == "" {
		t.Fatalf("the hoarder as uid %d ended without a report: %v", uid, sc.Err())
	}
	go io.Copy(io.Discard, stdout)
	return h
}

// want wants the hoarder to hold n connections, and its first refused
// connection to have been closed unread: answered 503
// too_many_connections with a detail that starts with detail when its
// request had arrived, else closed without an answer.
func (h hoarder) want(t *testing.T, n int, detail string) {
	t.Helper()
	if h.held != n {
		t.Errorf("uid %d holds %d socket connections, want %d", h.uid, h.held, n)
	}
	if h.refusal == hoardClosed {
		return
	}
	status, body, _ := strings.Cut(h.refusal, " ")
	var problem api.Problem
	if err := json.Unmarshal([]byte(body), &problem); err != nil || status != "503" || problem.Code != "too_many_connections" || !strings.HasPrefix(problem.Detail, detail) {
		t.Errorf("uid %d: its connection beyond its slots got %q, want 503 too_many_connections saying %q, or no answer", h.uid, h.refusal, detail)
	}
}

// hoardClosed is the refusal a hoarder reports for a connection closed
// without an answer.
const hoardClosed = "closed without an answer"

// stopPeers ends the hoarders, which close their connections.
func (o *otherUsers) stopPeers(t *testing.T) {
	for _, cmd := range o.peers {
		cmd.Process.Kill()
		cmd.Wait()
	}
	o.peers = nil
}

// TestSocketSlotsPeer is a peer of TestSocketAdminsKeepTheirSlots, run as
// another user; it prints what the test reads on lines starting "peer ".
func TestSocketSlotsPeer(t *testing.T) {
	socket, role := os.Getenv(peerEnv), os.Getenv(peerRole)
	if socket == "" || role == "" {
		t.Skip("run by TestSocketAdminsKeepTheirSlots")
	}
	switch role {
	case "whoami":
		ctx, cancel := context.WithTimeout(context.Background(), answerTimeout)
		defer cancel()
		who, err := (&client.Client{Socket: socket}).WhoAmI(ctx)
		if err != nil {
			fmt.Printf("peer whoami error: %v\n", err)
			return
		}
		fmt.Printf("peer whoami %s admin=%v\n", who.Actor, who.Admin)
	case "reserve":
		var stdout, stderr strings.Builder
		code := cli.Run(context.Background(), []string{"--socket", socket, "--state", filepath.Join(os.Getenv("HOME"), "intent.json"),
			"reserve", "--workshop", "workshop-demo"}, &stdout, &stderr)
		fmt.Printf("peer exit %d\n", code)
		for line := range strings.Lines(stderr.String()) {
			fmt.Print("peer stderr " + line)
		}
	case "hoard":
		hoardSocket(socket)
	default:
		t.Fatalf("unknown role %q", role)
	}
}

// hoardSocket opens connections to socket until one is refused. On each it
// sends requests for the workshop listing, pipelined, without end, and
// reads only the head of the first answer, which says whether the daemon
// admitted it: the answers pile up until the daemon can write no more (the
// listing is too long for the socket's buffer, see growListing), and it
// stays busy with that connection until its write timeout. It prints how
// many of its connections the daemon still holds and the answer to the
// refused one (hoardClosed for none), then holds them until it is killed.
func hoardSocket(socket string) {
	req := []byte(strings.Repeat("GET "+api.PathWorkshops+" HTTP/1.1\r\nHost: reserved\r\n\r\n", 512))
	var held []*net.UnixConn
	refusal := "none of 64 connections was refused"
	for range 64 {
		c, err := net.Dial("unix", socket)
		if err != nil {
			refusal = "dial: " + err.Error()
			break
		}
		go func() {
			for {
				if _, err := c.Write(req); err != nil {
					return
				}
			}
		}()
		c.SetReadDeadline(time.Now().Add(abuseTimeout))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
			refusal = hoardClosed
			break
		}
		if err != nil {
			refusal = "no answer: " + err.Error()
			break
		}
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(resp.Body)
			refusal = fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
			break
		}
		held = append(held, c.(*net.UnixConn))
	}
	open := 0
	for _, c := range held {
		if !closedByPeer(c) {
			open++
		}
	}
	fmt.Printf("peer held %d\npeer refusal %s\n", open, refusal)
	io.Copy(io.Discard, os.Stdin)
}

// closedByPeer reports whether the other end of c has closed it, whatever c
// has not read yet.
func closedByPeer(c *net.UnixConn) bool {
	raw, err := c.SyscallConn()
	if err != nil {
		return true
	}
	closed := false
	raw.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
		if n, err := unix.Poll(fds, 0); err == nil && n > 0 {
			closed = fds[0].Revents&(unix.POLLRDHUP|unix.POLLHUP) != 0
		}
	})
	return closed
}
