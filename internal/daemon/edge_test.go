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
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server"
)

// The listeners a raw exchange goes to.
const (
	viaTCP    = "tcp"
	viaSocket = "socket"
)

// rawConn is a raw connection to one of the daemon's listeners.
type rawConn struct {
	net.Conn
	br   *bufio.Reader
	auth string // The header lines every request on it needs: Host, and on TCP Authorization.
}

// dialRaw opens a raw connection to the daemon on via; token authenticates
// requests on TCP. Every read and write must end within abuseTimeout.
func dialRaw(t *testing.T, p *proc, via, token string) *rawConn {
	t.Helper()
	var c net.Conn
	auth := "Host: local\r\n"
	if via == viaTCP {
		c = dialDaemon(t, p)
		auth = "Host: 127.0.0.1\r\nAuthorization: Bearer " + token + "\r\n"
	} else {
		var err error
		if c, err = net.DialTimeout("unix", p.socket, abuseTimeout); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	}
	c.SetDeadline(time.Now().Add(abuseTimeout))
	return &rawConn{Conn: c, br: bufio.NewReader(c), auth: auth}
}

// answer reads the next answer and its body.
func (c *rawConn) answer(t *testing.T) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("answer %d: reading its body: %v", resp.StatusCode, err)
	}
	return resp, body
}

// mustBeClosed wants the daemon to have closed the connection: nothing but
// the end of the stream follows.
func (c *rawConn) mustBeClosed(t *testing.T) {
	t.Helper()
	rest, err := io.ReadAll(c.br)
	if len(rest) > 0 || err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("after the last answer: %q, %v; want the connection closed", rest, err)
	}
}

// headerBlock returns a GET /healthz whose header block (request line,
// header fields and the empty line, with their line ends) is exactly size
// bytes.
func headerBlock(t *testing.T, c *rawConn, size int) string {
	t.Helper()
	head := "GET /healthz HTTP/1.1\r\n" + c.auth + "X-Pad: "
	pad := size - len(head) - len("\r\n\r\n")
	if pad < 0 {
		t.Fatalf("a header block of %d bytes cannot hold %q", size, head)
	}
	return head + strings.Repeat("p", pad) + "\r\n\r\n"
}

// TestHeaderLimitIsExact sends header blocks of exactly the documented
// limit and one byte more, alone on a connection and pipelined behind
// another request, on TCP and on the socket: the limit passes, one byte
// more gets 431 and the connection closed.
func TestHeaderLimitIsExact(t *testing.T) {
	p, token, _ := startAbused(t)
	for _, via := range []string{viaTCP, viaSocket} {
		for _, pipelined := range []bool{false, true} {
			for _, size := range []int{server.MaxHeaderBytes, server.MaxHeaderBytes + 1} {
				t.Run(fmt.Sprintf("%s/pipelined=%v/%d", via, pipelined, size), func(t *testing.T) {
					c := dialRaw(t, p, via, token)
					send := headerBlock(t, c, size)
					if pipelined {
						send = headerBlock(t, c, 200) + send
					}
					if _, err := io.WriteString(c, send); err != nil {
						t.Fatal(err)
					}
					if pipelined {
						if resp, body := c.answer(t); resp.StatusCode != http.StatusOK {
							t.Fatalf("the small request in front = %d %s", resp.StatusCode, body)
						}
					}
					resp, body := c.answer(t)
					if size <= server.MaxHeaderBytes {
						if resp.StatusCode != http.StatusOK {
							t.Errorf("header block of %d bytes = %d %s, want 200", size, resp.StatusCode, body)
						}
						return
					}
					if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || !resp.Close {
						t.Errorf("header block of %d bytes = %d %s (close %v), want 431 and the connection closed", size, resp.StatusCode, body, resp.Close)
					}
					c.mustBeClosed(t)
				})
			}
		}
	}
}

// TestBadFramingRefused sends, on TCP and on the socket, a reservation
// whose length is framed two ways, with a second reservation pipelined
// behind it: exactly one answer comes back, 400 bad_framing, and the
// connection is closed; neither reservation is made.
func TestBadFramingRefused(t *testing.T) {
	p, token, _ := startAbused(t)
	body := `{"workshop":"workshop-demo","quantity":1}`
	chunked := strconv.FormatInt(int64(len(body)), 16) + "\r\n" + body + "\r\n0\r\n\r\n"
	for _, tc := range []struct {
		name, proto, framing, body string
	}{
		{"Content-Length then Transfer-Encoding", "HTTP/1.1", "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", chunked},
		{"Transfer-Encoding then Content-Length", "HTTP/1.1", "Transfer-Encoding: chunked\r\nContent-Length: " + strconv.Itoa(len(chunked)) + "\r\n", chunked},
		{"Transfer-Encoding in HTTP/1.0", "HTTP/1.0", "Connection: keep-alive\r\nTransfer-Encoding: chunked\r\n", chunked},
		{"folded Content-Length", "HTTP/1.1", "Content-Length:\r\n " + strconv.Itoa(len(body)) + "\r\n", body},
	} {
		for _, via := range []string{viaTCP, viaSocket} {
			t.Run(via+"/"+tc.name, func(t *testing.T) {
				c := dialRaw(t, p, via, token)
				first, second := uuid.NewString(), uuid.NewString()
				reservation := func(key, proto, framing, body string) string {
					return fmt.Sprintf("POST %s %s\r\n%s%s: %s\r\nContent-Type: %s\r\n%s\r\n%s",
						api.PathReservations, proto, c.auth, api.HeaderIdempotencyKey, key, api.MediaJSON, framing, body)
				}
				send := reservation(first, tc.proto, tc.framing, tc.body) +
					reservation(second, "HTTP/1.1", "Content-Length: "+strconv.Itoa(len(body))+"\r\n", body)
				if _, err := io.WriteString(c, send); err != nil {
					t.Fatal(err)
				}
				resp, answer := c.answer(t)
				var problem api.Problem
				if err := json.Unmarshal(answer, &problem); err != nil || resp.StatusCode != http.StatusBadRequest ||
					problem.Code != engine.CodeBadFraming || resp.Header.Get("Content-Type") != api.MediaProblem || !resp.Close {
					t.Errorf("answer = %d %s %s (close %v), want 400 %s and the connection closed", resp.StatusCode, resp.Header.Get("Content-Type"), answer, resp.Close, engine.CodeBadFraming)
				}
				c.mustBeClosed(t)
				owner := p.tcpClient(token)
				if via == viaSocket {
					owner = p.socketClient()
				}
				for _, key := range []string{first, second} {
					ctx, cancel := context.WithTimeout(context.Background(), abuseTimeout)
					_, err := owner.Operation(ctx, engine.OperationKey(key))
					cancel()
					if engine.ErrorCode(err) != engine.CodeUnknownOperation {
						t.Errorf("receipt of %s: %v, want %s", key, err, engine.CodeUnknownOperation)
					}
				}
			})
		}
	}
	mustReserve(t, p, token)
}
