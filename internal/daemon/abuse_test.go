package daemon_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server"
	"github.com/reserve/reserve/internal/server/servertest"
)

// abuseTimeout bounds each wait of the abuse tests; it only ends a hung
// test clearly.
const abuseTimeout = 30 * time.Second

// startAbused starts a daemon on TCP and the socket and returns it with a
// token of actor "alice" and the path of its database. Its rate limit is
// off: these tests abuse connections, bodies and credentials many times a
// second, and each checks the daemon's answer to its own abuse, which the
// rate limit would refuse first (it has tests of its own).
func startAbused(t *testing.T, extra ...string) (p *proc, token, db string) {
	t.Helper()
	dir := t.TempDir()
	p = start(t, dir, filepath.Join(servertest.ShortTempDir(t), "a.sock"), append([]string{"--rate-limit", "0"}, extra...)...)
	token, err := p.socketClient().CreateToken(context.Background(), "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	return p, token, filepath.Join(dir, "reserved.db")
}

// dialDaemon opens a raw TCP connection to the daemon.
func dialDaemon(t *testing.T, p *proc) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(p.url, "http://"), abuseTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// mustReserve makes one new reservation of the demo workshop over TCP.
func mustReserve(t *testing.T, p *proc, token string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), abuseTimeout)
	defer cancel()
	status, body, _, err := p.tcpClient(token).Reserve(ctx, engine.OperationKey(uuid.NewString()), demo)
	if err != nil || status != http.StatusCreated {
		t.Fatalf("normal reservation = %d %s %v", status, body, err)
	}
}

// openFiles counts the file descriptors of a process.
func openFiles(pid int) int {
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(fds)
}

// TestIdleConnectionsDoNotBlockOthers holds 1,000 TCP connections open that
// never send a byte, waits until the daemon has accepted all of them, and
// then reserves as a normal client.
func TestIdleConnectionsDoNotBlockOthers(t *testing.T) {
	const idle = 1000
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	// Go raises the soft limit to the hard one at start, in this test and
	// in the daemon alike; both need room for the idle connections, and
	// the daemon's cap of TCP connections, which must fit in its limit
	// with room for its other files, must hold them all.
	if lim.Cur < idle+400 {
		t.Fatalf("RLIMIT_NOFILE is %d (hard %d): this test needs %d", lim.Cur, lim.Max, idle+400)
	}
	p, token, _ := startAbused(t, "--max-tcp-connections", strconv.Itoa(idle+100), "--max-socket-connections", "16")
	before := openFiles(p.cmd.Process.Pid)
	conns := make([]net.Conn, idle)
	for i := range conns {
		conns[i] = dialDaemon(t, p)
	}
	servertest.Eventually(t, abuseTimeout, "the daemon accepting the idle connections", func() bool {
		return openFiles(p.cmd.Process.Pid) >= before+idle
	})
	mustReserve(t, p, token)
	if n := openFiles(p.cmd.Process.Pid); n < before+idle {
		t.Errorf("the daemon holds %d files, fewer than the %d idle connections: they were not held during the reservation", n, idle)
	}
	// Closed here, so the daemon's shutdown need not wait for them.
	for _, c := range conns {
		c.Close()
	}
	if code := p.stop(t); code != 0 {
		t.Errorf("exit code = %d", code)
	}
}

// TestHugeBodyRefusedUnread announces (or streams) a 10 MB reservation body
// but sends only its first 64 KiB: the daemon must answer 413 before the
// rest exists, so it cannot have read it, and then close the connection, so
// that sending the rest fails.
func TestHugeBodyRefusedUnread(t *testing.T) {
	const total, prefix = 10 << 20, 64 << 10
	p, token, _ := startAbused(t)
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			key := uuid.NewString()
			c := dialDaemon(t, p)
			c.SetDeadline(time.Now().Add(abuseTimeout))
			var head strings.Builder
			fmt.Fprintf(&head, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n%s: %s\r\nContent-Type: application/json\r\n",
				api.PathReservations, c.RemoteAddr(), token, api.HeaderIdempotencyKey, key)
			if chunked {
				head.WriteString("Transfer-Encoding: chunked\r\n\r\n")
			} else {
				fmt.Fprintf(&head, "Content-Length: %d\r\n\r\n", total)
			}
			chunk := func(n int) []byte {
				data := bytes.Repeat([]byte{' '}, n)
				if chunked {
					data = append(append([]byte(strconv.FormatInt(int64(n), 16)+"\r\n"), data...), "\r\n"...)
				}
				return data
			}
			if _, err := io.WriteString(c, head.String()); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Write(chunk(prefix)); err != nil {
				t.Fatal(err)
			}

			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("no answer after %d of %d bytes: %v", prefix, total, err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusRequestEntityTooLarge || !bytes.Contains(body, []byte(api.CodeBodyTooLarge)) {
				t.Fatalf("answer = %d %s", resp.StatusCode, body)
			}
			if !resp.Close {
				t.Errorf("the 413 does not close the connection: %v", resp.Header)
			}

			sent := prefix
			var werr error
			for sent < total {
				size := min(prefix, total-sent)
				if _, werr = c.Write(chunk(size)); werr != nil {
					break
				}
				sent += size
			}
			if werr == nil {
				t.Fatalf("all %d bytes were sent after the 413: the daemon kept reading", total)
			}
			t.Logf("413 after %d bytes; sending the rest failed after %d of %d bytes: %v", prefix, sent, total, werr)
			if _, err := p.tcpClient(token).Operation(context.Background(), engine.OperationKey(key)); engine.ErrorCode(err) != engine.CodeUnknownOperation {
				t.Errorf("receipt of the refused request: %v", err)
			}
		})
	}
}

// TestBadTokensChangeNothing sends 10,000 requests with bad credentials to
// every route that needs them: each is answered 401 unauthenticated, and
// the database file is byte for byte what it was.
func TestBadTokensChangeNothing(t *testing.T) {
	const requests, senders = 10_000, 8
	p, token, db := startAbused(t)
	before := fileHash(t, db)

	authHeaders := []string{
		"Bearer " + token[:len(token)-1] + "x",      // A real token, one character off.
		"Bearer " + strings.Repeat("A", len(token)), // The right shape.
		"Bearer ", "Bearer", "Basic YWxpY2U6c2VjcmV0", "bearer" + token, token,
		"Bearer " + token + " " + token,
	}
	type call struct{ method, path, body string }
	calls := []call{
		{http.MethodPost, api.PathReservations, `{"workshop":"workshop-demo","quantity":1}`},
		{http.MethodPut, api.WorkshopPath("workshop-demo"), `{"capacity":1000}`},
		{http.MethodPut, api.WorkshopPath("new-workshop"), `{"capacity":5}`},
		{http.MethodPost, api.PathTokens, `{"actor":"mallory","admin":true}`},
		{http.MethodGet, api.PathWhoAmI, ""},
		{http.MethodGet, api.PathWorkshops, ""},
		{http.MethodGet, api.PathMetrics, ""},
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: senders}}
	var next, unauthorized atomic.Int64
	errs := make(chan error, senders)
	var wg sync.WaitGroup
	for range senders {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < requests; i = next.Add(1) - 1 {
				c := calls[i%int64(len(calls))]
				auth := authHeaders[(i/int64(len(calls)))%int64(len(authHeaders))]
				if err := sendBadToken(hc, p.url, c.method, c.path, c.body, auth); err != nil {
					errs <- fmt.Errorf("request %d (%s %s, Authorization %q): %w", i, c.method, c.path, auth, err)
					return
				}
				unauthorized.Add(1)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := unauthorized.Load(); n != requests {
		t.Fatalf("%d of %d requests were answered 401", n, requests)
	}
	if after := fileHash(t, db); after != before {
		t.Error("the database file changed")
	}
	ws, err := p.socketClient().Workshops(context.Background(), false)
	if err != nil || len(ws) != 1 || ws[0].Reserved != 0 || ws[0].Capacity != 3 {
		t.Errorf("workshops after the bad tokens = %+v, %v", ws, err)
	}
	mustReserve(t, p, token)
}

// sendBadToken sends one request and wants 401 unauthenticated back.
func sendBadToken(hc *http.Client, base, method, path, body, auth string) error {
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", auth)
	req.Header.Set("Content-Type", api.MediaJSON)
	req.Header.Set(api.HeaderIdempotencyKey, uuid.NewString())
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusUnauthorized || !bytes.Contains(data, []byte(`"code":"`+engine.CodeUnauthenticated+`"`)) || resp.Header.Get("WWW-Authenticate") == "" {
		return fmt.Errorf("answer %d %s", resp.StatusCode, data)
	}
	return nil
}

func fileHash(t *testing.T, path string) [sha256.Size]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(data)
}

// TestSlowHeadersAreCutOff sends a request's header one byte at a time and
// never finishes it: the daemon, started with a short
// --read-header-timeout, closes the connection (net/http says "400 Bad
// Request" first) long before the header could reach the size limit, and
// still serves others.
func TestSlowHeadersAreCutOff(t *testing.T) {
	p, token, _ := startAbused(t, "--read-header-timeout", "300ms")
	c := dialDaemon(t, p)
	c.SetDeadline(time.Now().Add(abuseTimeout))

	closed := make(chan error, 1)
	var answer bytes.Buffer
	go func() {
		_, err := io.Copy(&answer, c) // Ends when the daemon closes the connection.
		closed <- err
	}()
	header := []byte("POST " + api.PathReservations + " HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	sent := 0
	var readErr error
send:
	for {
		b := byte('a')
		if sent < len(header) {
			b = header[sent]
		}
		if _, err := c.Write([]byte{b}); err != nil {
			readErr = <-closed
			break
		}
		sent++
		if sent >= server.MaxHeaderBytes {
			t.Fatalf("sent %d header bytes without being cut off", sent)
		}
		select {
		case readErr = <-closed:
			break send
		case <-tick.C:
		}
	}
	if readErr != nil && !errors.Is(readErr, syscall.ECONNRESET) {
		t.Fatalf("reading from the slow connection: %v", readErr)
	}
	if a := answer.String(); a != "" && !strings.HasPrefix(a, "HTTP/1.1 400 ") {
		t.Errorf("the daemon answered the unfinished header with %q", a)
	}
	t.Logf("cut off after %d header bytes sent one at a time", sent)
	mustReserve(t, p, token)
}
