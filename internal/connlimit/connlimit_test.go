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
	holding           chan struct{} // Receives when a GET /hold request reaches the handler.
	release           chan struct{}
}

func serve(t *testing.T, max int) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{addr: ln.Addr().String(), holding: make(chan struct{}, max), release: make(chan struct{})}
	s.l = connlimit.New(ln, max, connlimit.Options{
		OnShed:        func() { s.shed.Add(1) },
		OnShedWaiting: func() { s.shedWaiting.Add(1) },
		OnRefuse:      func() { s.refused.Add(1) },
	})
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

func dial(t *testing.T, addr string) *conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, timeout)
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
