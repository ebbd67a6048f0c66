package connlimit_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/connlimit"
)

// timeout bounds every wait; it only ends a hung test clearly.
const timeout = 10 * time.Second

// server is an HTTP server on a loopback listener bounded to a number of
// connections. Its handler answers at once, except GET /hold, which
// answers once release is closed, and GET /hijack, which takes the
// connection over and keeps it open.
type server struct {
	addr              string
	l                 *connlimit.Listener
	shed, shedWaiting atomic.Int64
	refused           atomic.Int64
	refusedWhy        chan connlimit.Refusal // Receives why, for each connection refused.
	holding           chan struct{}          // Receives when a GET /hold request reaches the handler.
	release           chan struct{}
}

func serve(t *testing.T, max int) *server { return newServer(t, max, connlimit.Options{}) }

// serveOwned serves with owners: a connection's owner is named by the
// client's loopback address (dialFrom), 127.0.0.1 privileged and every
// other address an unprivileged owner of its own.
func serveOwned(t *testing.T, max, reserved, share int) *server {
	return newServer(t, max, connlimit.Options{Reserved: reserved, Share: share, Owner: func(c net.Conn) connlimit.Owner {
		ip := c.RemoteAddr().(*net.TCPAddr).IP.String()
		return connlimit.Owner{Key: ip, Privileged: ip == "127.0.0.1"}
	}})
}

// newServer serves with opts, their callbacks set to the server's.
func newServer(t *testing.T, max int, opts connlimit.Options) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{addr: ln.Addr().String(), refusedWhy: make(chan connlimit.Refusal, 100),
		holding: make(chan struct{}, max), release: make(chan struct{})}
	opts.OnShed = func() { s.shed.Add(1) }
	opts.OnShedWaiting = func() { s.shedWaiting.Add(1) }
	opts.OnRefuse = func(_ net.Conn, why connlimit.Refusal) {
		s.refused.Add(1)
		s.refusedWhy <- why
	}
	s.l = connlimit.New(ln, max, opts)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hold":
			s.holding <- struct{}{}
			<-s.release
		case "/hijack":
			c, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Errorf("hijack: %v", err)
				return
			}
			t.Cleanup(func() { c.Close() })
			s.holding <- struct{}{}
		}
	}), ConnState: s.l.ConnState}
	go srv.Serve(s.l)
	t.Cleanup(func() { srv.Close() })
	return s
}

// hold sends GET /hold on c and waits until its handler runs: from then
// on until release is closed, the server is busy with c's request.
func (s *server) hold(t *testing.T, c *conn) {
	t.Helper()
	if _, err := io.WriteString(c, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.holding:
	case <-time.After(timeout):
		t.Fatal("the GET /hold request did not reach the handler")
	}
}

// answered reads the answer to a request sent before.
func (c *conn) answered() error {
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// conn is a raw client connection.
type conn struct {
	net.Conn
	br *bufio.Reader
}

func dial(t *testing.T, addr string) *conn { return dialFrom(t, "127.0.0.1", addr) }

// dialFrom connects from the loopback address from, which names the
// connection's owner on a server from serveOwned.
func dialFrom(t *testing.T, from, addr string) *conn {
	t.Helper()
	d := net.Dialer{Timeout: timeout, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(timeout))
	return &conn{Conn: c, br: bufio.NewReader(c)}
}

// request sends one request and reads its answer; afterwards the server
// holds the connection idle.
func (c *conn) request(t *testing.T) error {
	t.Helper()
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return err
	}
	return c.answered()
}

// closedByServer reports whether the server closed the connection.
func (c *conn) closedByServer() bool {
	_, err := c.br.ReadByte()
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

// waitOpen waits until the listener holds n connections.
func waitOpen(t *testing.T, l *connlimit.Listener, n int) { waitCount(t, "connections", l.Open, n) }

// waitIdle waits until the listener holds n idle connections. The server
// marks a connection idle only after its answer has gone out, so a test
// that depends on which connection is idle longest waits for it.
func waitIdle(t *testing.T, l *connlimit.Listener, n int) {
	waitCount(t, "idle connections", l.Idle, n)
}

// waitWaiting waits until the listener holds n connections that have not
// finished their first request header.
func waitWaiting(t *testing.T, l *connlimit.Listener, n int) {
	waitCount(t, "waiting connections", l.Waiting, n)
}

func waitCount(t *testing.T, what string, count func() int, n int) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for count() != n {
		if time.Now().After(deadline) {
			t.Fatalf("the listener holds %d %s, want %d", count(), what, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestShedsLongestIdle fills the listener with idle connections: a new one
// is admitted by closing the one idle longest, and the others stay.
func TestShedsLongestIdle(t *testing.T) {
	s := serve(t, 3)
	addr, l := s.addr, s.l
	var idle []*conn
	for i := range 3 {
		c := dial(t, addr)
		if err := c.request(t); err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
		waitIdle(t, l, i+1)
	}
	// The first connection becomes the newest idle one again.
	if err := idle[0].request(t); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, l, 3)
	fresh := dial(t, addr)
	if err := fresh.request(t); err != nil {
		t.Fatalf("the new connection at the cap: %v", err)
	}
	if !idle[1].closedByServer() {
		t.Error("the connection idle longest was not closed")
	}
	for _, c := range []*conn{idle[0], idle[2]} {
		if err := c.request(t); err != nil {
			t.Errorf("a connection idle for less time was closed: %v", err)
		}
	}
	s.wantCounts(t, 1, 0, 0)
	waitOpen(t, l, 3)
}

// wantCounts wants the listener to have shed so many idle and waiting
// connections and refused so many new ones.
func (s *server) wantCounts(t *testing.T, shed, shedWaiting, refused int64) {
	t.Helper()
	if s.shed.Load() != shed || s.shedWaiting.Load() != shedWaiting || s.refused.Load() != refused {
		t.Errorf("shed idle %d, shed waiting %d, refused %d; want %d, %d, %d",
			s.shed.Load(), s.shedWaiting.Load(), s.refused.Load(), shed, shedWaiting, refused)
	}
}

// TestShedsLongestWaiting fills the listener with a connection busy with a
// request and connections that sent only part of a header, none idle: a
// new client is answered, the connection waiting longest for its header is
// closed to admit it, and the busy one and the other waiting one are not.
func TestShedsLongestWaiting(t *testing.T) {
	s := serve(t, 3)
	busy := dial(t, s.addr)
	s.hold(t, busy)
	var waiting []*conn
	for i := range 2 {
		c := dial(t, s.addr)
		if _, err := io.WriteString(c, "G"); err != nil {
			t.Fatal(err)
		}
		waiting = append(waiting, c)
		waitWaiting(t, s.l, i+1)
	}
	waitOpen(t, s.l, 3)
	if err := dial(t, s.addr).request(t); err != nil {
		t.Fatalf("a new client at the cap with none idle: %v", err)
	}
	if !waiting[0].closedByServer() {
		t.Error("the connection waiting longest for its header was not closed")
	}
	if _, err := io.WriteString(waiting[1], "ET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if err := waiting[1].answered(); err != nil {
		t.Errorf("a connection waiting for less time was closed: %v", err)
	}
	close(s.release)
	if err := busy.answered(); err != nil {
		t.Errorf("the connection busy with a request was closed: %v", err)
	}
	s.wantCounts(t, 0, 1, 0)
}

// TestRefusesWithAllBusy fills the listener with connections busy with a
// request, one of them with its second: a new one is closed at once, the
// busy ones get their answers, and one is admitted again as soon as a
// connection ends.
func TestRefusesWithAllBusy(t *testing.T) {
	s := serve(t, 2)
	again := dial(t, s.addr)
	if err := again.request(t); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, s.l, 1)
	busy := []*conn{again, dial(t, s.addr)}
	for _, c := range busy {
		s.hold(t, c)
	}
	waitIdle(t, s.l, 0)
	waitWaiting(t, s.l, 0)
	if c := dial(t, s.addr); !c.closedByServer() {
		t.Error("a connection beyond the cap was not closed")
	}
	s.wantCounts(t, 0, 0, 1)
	close(s.release)
	for _, c := range busy {
		if err := c.answered(); err != nil {
			t.Errorf("a connection busy with a request was closed: %v", err)
		}
	}
	busy[0].Close()
	waitOpen(t, s.l, 1)
	if err := dial(t, s.addr).request(t); err != nil {
		t.Errorf("a connection after one ended: %v", err)
	}
}

// TestHijackedLeaves hands a connection over to its handler: the listener
// no longer counts it, so it admits another at a cap of one.
func TestHijackedLeaves(t *testing.T) {
	s := serve(t, 1)
	hijacked := dial(t, s.addr)
	if _, err := io.WriteString(hijacked, "GET /hijack HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.holding:
	case <-time.After(timeout):
		t.Fatal("the GET /hijack request did not take its connection")
	}
	waitOpen(t, s.l, 0)
	if err := dial(t, s.addr).request(t); err != nil {
		t.Errorf("a connection after one was hijacked: %v", err)
	}
	s.wantCounts(t, 0, 0, 0)
}

// wantRefused wants the next connection refused to have been refused for
// why.
func (s *server) wantRefused(t *testing.T, why connlimit.Refusal) {
	t.Helper()
	select {
	case got := <-s.refusedWhy:
		if got != why {
			t.Errorf("refused for %d, want %d", got, why)
		}
	default:
		t.Errorf("no connection was refused, want one refused for %d", why)
	}
}

// The loopback addresses of the owners of serveOwned.
const (
	privileged = "127.0.0.1"
	ownerA     = "127.0.0.2"
	ownerB     = "127.0.0.3"
	ownerC     = "127.0.0.4"
)

// TestReservedSlotsStayFree fills every slot that is not reserved with
// connections of two unprivileged owners, each busy with a request: a
// third owner's new connection is closed at once, also while a privileged
// connection idles in a reserved slot, and privileged connections are
// served until they fill the listener too.
func TestReservedSlotsStayFree(t *testing.T) {
	s := serveOwned(t, 5, 2, 0)
	for _, from := range []string{ownerA, ownerB, ownerA} {
		s.hold(t, dialFrom(t, from, s.addr))
	}
	waitWaiting(t, s.l, 0)
	if c := dialFrom(t, ownerC, s.addr); !c.closedByServer() {
		t.Fatal("an unprivileged connection took a reserved slot")
	}
	s.wantRefused(t, connlimit.RefusedUnreserved)

	admin := dialFrom(t, privileged, s.addr)
	if err := admin.request(t); err != nil {
		t.Fatalf("a privileged connection with the unreserved slots full: %v", err)
	}
	waitIdle(t, s.l, 1)
	if c := dialFrom(t, ownerC, s.addr); !c.closedByServer() {
		t.Fatal("an unprivileged connection took the place of an idle privileged one")
	}
	s.wantRefused(t, connlimit.RefusedUnreserved)
	if err := admin.request(t); err != nil {
		t.Errorf("the idle privileged connection was closed: %v", err)
	}

	s.hold(t, admin)
	s.hold(t, dialFrom(t, privileged, s.addr))
	waitIdle(t, s.l, 0)
	if c := dialFrom(t, privileged, s.addr); !c.closedByServer() {
		t.Fatal("a connection beyond the cap was not closed")
	}
	s.wantRefused(t, connlimit.RefusedBusy)
	s.wantCounts(t, 0, 0, 3)
	close(s.release)
}

// TestShareOfOwner lets one unprivileged owner fill its share with
// connections busy with a request: its next connection is closed at once,
// and another owner's is served.
func TestShareOfOwner(t *testing.T) {
	s := serveOwned(t, 8, 1, 2)
	for range 2 {
		s.hold(t, dialFrom(t, ownerA, s.addr))
	}
	waitWaiting(t, s.l, 0)
	if c := dialFrom(t, ownerA, s.addr); !c.closedByServer() {
		t.Fatal("an owner held more than its share")
	}
	s.wantRefused(t, connlimit.RefusedShare)
	if err := dialFrom(t, ownerB, s.addr).request(t); err != nil {
		t.Errorf("another owner with the first one at its share: %v", err)
	}
	s.wantCounts(t, 0, 0, 1)
	close(s.release)
}

// TestOwnerMakesRoomFromItsOwn: an owner at its share gets a new
// connection by giving up its own idle one (or, with none idle, its own
// one waiting longest for a header), never another owner's, even one
// idle or waiting for longer.
func TestOwnerMakesRoomFromItsOwn(t *testing.T) {
	t.Run("idle", func(t *testing.T) {
		s := serveOwned(t, 8, 1, 2)
		other := dialFrom(t, ownerB, s.addr)
		if err := other.request(t); err != nil {
			t.Fatal(err)
		}
		waitIdle(t, s.l, 1)
		s.hold(t, dialFrom(t, ownerA, s.addr))
		own := dialFrom(t, ownerA, s.addr)
		if err := own.request(t); err != nil {
			t.Fatal(err)
		}
		waitIdle(t, s.l, 2)
		if err := dialFrom(t, ownerA, s.addr).request(t); err != nil {
			t.Fatalf("a new connection of an owner at its share: %v", err)
		}
		if !own.closedByServer() {
			t.Error("the owner's own idle connection was not closed")
		}
		if err := other.request(t); err != nil {
			t.Errorf("another owner's idle connection was closed: %v", err)
		}
		s.wantCounts(t, 1, 0, 0)
		close(s.release)
	})
	t.Run("waiting", func(t *testing.T) {
		s := serveOwned(t, 8, 1, 2)
		var waiting []*conn
		for i, from := range []string{ownerB, ownerA, ownerA} {
			c := dialFrom(t, from, s.addr)
			if _, err := io.WriteString(c, "G"); err != nil {
				t.Fatal(err)
			}
			waiting = append(waiting, c)
			waitWaiting(t, s.l, i+1)
		}
		if err := dialFrom(t, ownerA, s.addr).request(t); err != nil {
			t.Fatalf("a new connection of an owner at its share: %v", err)
		}
		if !waiting[1].closedByServer() {
			t.Error("the owner's connection waiting longest was not closed")
		}
		for _, c := range []*conn{waiting[0], waiting[2]} {
			if _, err := io.WriteString(c, "ET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			if err := c.answered(); err != nil {
				t.Errorf("a connection that was not the owner's longest waiting one was closed: %v", err)
			}
		}
		s.wantCounts(t, 0, 1, 0)
	})
}
