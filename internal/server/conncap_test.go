package server_test

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
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/peercred"
	"github.com/reserve/reserve/internal/server"
	"github.com/reserve/reserve/internal/server/servertest"
)

// TestSocketSlots pins how the socket's cap is divided: an eighth of it
// (at least one slot, but never all) kept for admins, and a quarter of the
// rest for each other uid.
func TestSocketSlots(t *testing.T) {
	for _, tt := range []struct{ max, reserved, share int }{
		{256, 32, 56},
		{16, 2, 4},
		{4, 1, 1},
		{2, 1, 1},
		{1, 0, 1},
	} {
		if reserved, share := server.SocketSlots(tt.max); reserved != tt.reserved || share != tt.share {
			t.Errorf("SocketSlots(%d) = %d, %d; want %d, %d", tt.max, reserved, share, tt.reserved, tt.share)
		}
	}
}

// TestSocketAdmin: root, the daemon's own uid and the members of an admin
// group are the socket's admins, and no one else.
func TestSocketAdmin(t *testing.T) {
	const daemonUID = 999
	for _, tt := range []struct {
		cred peercred.Cred
		want bool
	}{
		{peercred.Cred{UID: 0, GID: 0}, true},
		{peercred.Cred{UID: daemonUID, GID: daemonUID}, true},
		{peercred.Cred{UID: 1000, GID: 1000, Groups: []uint32{50}}, true},
		{peercred.Cred{UID: 1000, GID: 50}, true},
		{peercred.Cred{UID: 1000, GID: 1000, Groups: []uint32{27}}, false},
	} {
		if got := server.SocketAdmin(tt.cred, daemonUID, []uint32{50}); got != tt.want {
			t.Errorf("SocketAdmin(%+v) = %v, want %v", tt.cred, got, tt.want)
		}
	}
}

// gatedListener accepts a connection only when its gate lets one through,
// so that a test decides what a client has sent before the server sees
// the connection.
type gatedListener struct {
	net.Listener
	gate chan struct{}
}

func (l gatedListener) Accept() (net.Conn, error) {
	<-l.gate
	return l.Listener.Accept()
}

// TestRefusedConnectionIsNotRead holds the one connection of a socket
// capped at one busy with a request whose body never comes: a connection
// whose request has arrived when the server accepts it is answered 503
// too_many_connections, saying that nothing was read, and closed; one on
// which nothing has been sent is closed without an answer, so that
// writing a request to it fails: the client learns that its request was
// not sent, and never sees an answer before it sent one.
func TestRefusedConnectionIsNotRead(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	srv := server.New(server.Config{Engine: h.Engine, DaemonUID: os.Getuid(), MaxSocketConns: 1})
	socket := filepath.Join(servertest.ShortTempDir(t), "capped.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	go srv.ServeUnix(gatedListener{Listener: ln, gate: gate})
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.ServeTCP(tcp)
	t.Cleanup(func() {
		close(gate)
		srv.Shutdown(context.Background())
	})
	dial := func() net.Conn {
		c, err := net.Dial("unix", socket)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(10 * time.Second)) // Only ends a hang.
		return c
	}

	busy := dial()
	fmt.Fprintf(busy, "POST %s HTTP/1.1\r\nHost: x\r\n%s: %s\r\nContent-Type: %s\r\nContent-Length: 100\r\n\r\n{",
		api.PathReservations, api.HeaderIdempotencyKey, "5c1e8a4e-3b4e-4b8e-9f3e-8d1c2b3a4f5e", api.MediaJSON)
	gate <- struct{}{}
	metrics := &http.Client{}
	servertest.Eventually(t, 10*time.Second, "the socket's connection busy with its request", func() bool {
		req, _ := http.NewRequest(http.MethodGet, "http://"+tcp.Addr().String()+api.PathMetrics, nil)
		req.Header.Set("Authorization", "Bearer "+h.Admin)
		resp, err := metrics.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(body), `reserved_connections{listener="socket",state="open"} 1`+"\n") &&
			strings.Contains(string(body), `reserved_connections{listener="socket",state="waiting"} 0`+"\n")
	})

	arrived := dial()
	if _, err := io.WriteString(arrived, "GET "+api.PathWhoAmI+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	gate <- struct{}{}
	resp, err := http.ReadResponse(bufio.NewReader(arrived), nil)
	if err != nil {
		t.Fatalf("a refused connection whose request had arrived got no answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	var problem api.Problem
	const detail = "all 1 socket connections are held, each busy with a request: reserved closed this connection without reading a request from it, so nothing was done; retry"
	if err := json.Unmarshal(body, &problem); err != nil || resp.StatusCode != http.StatusServiceUnavailable || !resp.Close ||
		resp.Header.Get("Retry-After") != "1" || resp.Header.Get("Content-Type") != api.MediaProblem ||
		problem.Code != api.CodeTooManyConnections || problem.Detail != detail {
		t.Errorf("the refused connection was answered %d %v %s; want 503 %s saying %q", resp.StatusCode, resp.Header, body, api.CodeTooManyConnections, detail)
	}

	silent := dial()
	gate <- struct{}{}
	if n, err := silent.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("a refused connection that had sent nothing: read %d bytes, %v; want the end of the stream and no answer", n, err)
	}
	if _, err := io.WriteString(silent, "GET "+api.PathWhoAmI+" HTTP/1.1\r\nHost: x\r\n\r\n"); !errors.Is(err, syscall.EPIPE) {
		t.Errorf("writing a request to a refused connection: %v, want a broken pipe", err)
	}
}
