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

// serve runs an HTTP server on a loopback listener bounded to max
// connections and returns its address and the listener.
func serve(t *testing.T, max int) (string, *connlimit.Listener, *atomic.Int64, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var shed, refused atomic.Int64
	l := connlimit.New(ln, max, connlimit.Options{OnShed: func() { shed.Add(1) }, OnRefuse: func() { refused.Add(1) }})
	srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), ConnState: l.ConnState}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), l, &shed, &refused
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
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
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
	addr, l, shed, refused := serve(t, 3)
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
	if shed.Load() != 1 || refused.Load() != 0 {
		t.Errorf("shed %d, refused %d; want 1, 0", shed.Load(), refused.Load())
	}
	waitOpen(t, l, 3)
}

// TestRefusesWithNoneIdle fills the listener with connections that have
// not finished a request: a new one is closed at once, and one is admitted
// again as soon as a connection ends.
func TestRefusesWithNoneIdle(t *testing.T) {
	addr, l, shed, refused := serve(t, 2)
	busy := []*conn{dial(t, addr), dial(t, addr)}
	waitOpen(t, l, 2)
	if c := dial(t, addr); !c.closedByServer() {
		t.Error("a connection beyond the cap was not closed")
	}
	if shed.Load() != 0 || refused.Load() != 1 {
		t.Errorf("shed %d, refused %d; want 0, 1", shed.Load(), refused.Load())
	}
	busy[0].Close()
	waitOpen(t, l, 1)
	if err := dial(t, addr).request(t); err != nil {
		t.Errorf("a connection after one ended: %v", err)
	}
	if err := busy[1].request(t); err != nil {
		t.Errorf("the connection that was busy: %v", err)
	}
}
