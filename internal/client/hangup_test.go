package client_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server/servertest"
)

// TestHangUpBeforeTheRequestIsAConnectError: a daemon that accepted a
// connection (its kernel did) and closed it, or died, before any of the
// request was written never got the request, exactly like one that could
// not be reached at all: the client reports a *ConnectError, which every
// caller treats as "nothing sent, try again" (reservectl exits 75), not an
// unclassified failure. Once the request was written the same breakage is
// a *SentError.
func TestHangUpBeforeTheRequestIsAConnectError(t *testing.T) {
	c := &client.Client{BaseURL: "http://127.0.0.1:9", Token: "t"}
	get := func(err error) error {
		return &url.Error{Op: "Get", URL: "http://127.0.0.1:9/api/v1/whoami", Err: err}
	}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	for _, cause := range []error{io.EOF, io.ErrUnexpectedEOF, reset, &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}} {
		var ce *client.ConnectError
		err := c.SendError("GET", "/api/v1/whoami", get(cause), false)
		const msg = "cannot connect to reserved at http://127.0.0.1:9: it closed the connection before the request was sent (restarting, or at its connection cap?)"
		if !errors.As(err, &ce) || err.Error() != msg {
			t.Errorf("hung up before the request (%v): %v (%T), want a *client.ConnectError saying %q", cause, err, err, msg)
		}
		var se *client.SentError
		if err := c.SendError("GET", "/api/v1/whoami", get(cause), true); !errors.As(err, &se) {
			t.Errorf("hung up after the request (%v): %v (%T), want a *client.SentError", cause, err, err)
		}
	}
	// Other failures before anything was sent stay what they were.
	other := get(errors.New(`unsupported protocol scheme "ftp"`))
	if err := c.SendError("GET", "/api/v1/whoami", other, false); errors.As(err, new(*client.ConnectError)) || errors.As(err, new(*client.SentError)) {
		t.Errorf("unsupported scheme: %v (%T)", err, err)
	}
}

// TestClosedBeforeWrittenIsNotSent: a daemon that closed a connection at
// accept (at its connection cap, say) before the client wrote a byte of
// its request to it never got the request, although the client's
// transport had put the request's headers in its buffer: writing them
// fails (broken pipe), and the client says that the request was not sent,
// a *ConnectError, never that it may have arrived.
func TestClosedBeforeWrittenIsNotSent(t *testing.T) {
	socket := filepath.Join(servertest.ShortTempDir(t), "r.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	closed := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			err = c.Close()
		}
		closed <- err
	}()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "unix", socket)
		if err != nil {
			return nil, err
		}
		// The daemon closes the connection before the client writes.
		if err := <-closed; err != nil {
			return nil, err
		}
		return client.CountingConn(c), nil
	}}}
	c := &client.Client{Socket: socket, HTTPClient: hc}
	_, err = c.Send(context.Background(), engine.OperationKey(uuid.NewString()), client.Reserving(engine.Request{Workshop: "w1", Quantity: 1}))
	var ce *client.ConnectError
	const msg = "it closed the connection before the request was sent (restarting, or at its connection cap?)"
	if !errors.As(err, &ce) || errors.As(err, new(*client.SentError)) || !strings.Contains(err.Error(), msg) {
		t.Fatalf("err = %v (%T), want a *client.ConnectError saying %q", err, err, msg)
	}
}
