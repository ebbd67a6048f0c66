package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/paths/pathstest"
	"github.com/reserve/reserve/internal/server/servertest"
)

func TestZeroClientUsesTheDefaultSocket(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	t.Setenv("RESERVED_SOCKET", h.Socket)
	var c client.Client
	if c.Where() != h.Socket {
		t.Errorf("Where() = %q, want %q", c.Where(), h.Socket)
	}
	if err := c.Health(context.Background()); err != nil {
		t.Fatal(err)
	}
	if who, err := c.WhoAmI(context.Background()); err != nil || !who.Admin {
		t.Errorf("whoami = %+v %v", who, err)
	}
}

func TestConnectError(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "nobody.sock")
	t.Setenv("RESERVED_SOCKET", socket)
	_, err := new(client.Client).Workshops(context.Background(), false)
	var ce *client.ConnectError
	if !errors.As(err, &ce) || err.Error() != "cannot connect to reserved at "+socket+": is it running?" || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err = %v", err)
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	_, err = (&client.Client{BaseURL: url + "/"}).WhoAmI(context.Background())
	if err == nil || err.Error() != fmt.Sprintf("cannot connect to reserved at %s: is it running?", url) {
		t.Errorf("err over TCP = %v", err)
	}
}

func TestTypedCalls(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	ctx := context.Background()
	admin := h.TCPClient(h.Admin)
	w, created, err := admin.PutWorkshop(ctx, "go-basics", engine.WorkshopSpec{Capacity: 4, MaxQuantity: 2}, nil)
	if err != nil || !created || w.Version != 1 {
		t.Fatalf("create = %+v %v %v", w, created, err)
	}
	v := w.Version
	if w, created, err = admin.PutWorkshop(ctx, "go-basics", engine.WorkshopSpec{Capacity: 5}, &v); err != nil || created || w.Capacity != 5 {
		t.Errorf("update = %+v %v %v", w, created, err)
	}
	if _, _, err = admin.PutWorkshop(ctx, "go-basics", engine.WorkshopSpec{Capacity: 6}, &v); engine.ErrorCode(err) != engine.CodeVersionMismatch {
		t.Errorf("stale update: %v", err)
	}

	alice := h.TCPClient(h.Alice)
	_, _, err = alice.PutWorkshop(ctx, "go-basics", engine.WorkshopSpec{Capacity: 6}, nil)
	var e *engine.Error
	if !errors.As(err, &e) || e.Code != engine.CodeForbidden || e.Message != "alice is not an admin" {
		t.Errorf("non-admin put: %#v", err)
	}
	key := engine.OperationKey(uuid.NewString())
	status, body, replayed, err := alice.Reserve(ctx, key, engine.Request{Workshop: "go-basics", Quantity: 2})
	if err != nil || status != http.StatusCreated || replayed {
		t.Fatalf("reserve = %d %s %v %v", status, body, replayed, err)
	}
	if _, _, _, err := alice.Reserve(ctx, key, engine.Request{Workshop: "go-basics", Quantity: 1}); engine.ErrorCode(err) != engine.CodeOperationConflict {
		t.Errorf("conflict: %v", err)
	}
	op, err := alice.Operation(ctx, key)
	if err != nil || string(op.Response) != string(body) {
		t.Errorf("operation = %+v %v", op, err)
	}
	res, err := alice.Reservation(ctx, reservationID(t, body))
	if err != nil || res.Quantity != 2 || res.OperationKey != key {
		t.Errorf("reservation = %+v %v", res, err)
	}
	if ws, err := alice.Workshops(ctx, false); err != nil || len(ws) != 2 {
		t.Errorf("workshops = %v %v", ws, err)
	}
	if w, err := alice.Workshop(ctx, "go-basics"); err != nil || w.Reserved != 2 {
		t.Errorf("workshop = %+v %v", w, err)
	}
	if tok, err := admin.CreateToken(ctx, "carol", false); err != nil || tok == "" {
		t.Errorf("token = %q %v", tok, err)
	}
	if err := admin.ArmFault(ctx, api.Fault{Fault: api.FaultGarbleResponse}); engine.ErrorCode(err) != api.CodeNotFound {
		t.Errorf("fault without fault injection: %v", err)
	}
	if _, err := h.TCPClient("").WhoAmI(ctx); engine.ErrorCode(err) != engine.CodeUnauthenticated {
		t.Errorf("no token: %v", err)
	}
}

func TestUnexpectedAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad gateway", http.StatusBadGateway)
	}))
	defer srv.Close()
	c := &client.Client{BaseURL: srv.URL}
	status, body, _, err := c.Reserve(context.Background(), engine.OperationKey(uuid.NewString()), engine.Request{Workshop: "w-1", Quantity: 1})
	var ue *client.UnexpectedResponseError
	if !errors.As(err, &ue) || status != http.StatusBadGateway || string(body) != "bad gateway\n" || ue.Status != http.StatusBadGateway {
		t.Errorf("proxy error = %d %q %v", status, body, err)
	}
	if _, err := c.WhoAmI(context.Background()); !errors.As(err, &ue) {
		t.Errorf("whoami through a broken proxy: %v", err)
	}
}

func reservationID(t *testing.T, body []byte) string {
	t.Helper()
	var a engine.Answer
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatal(err)
	}
	return a.ReservationID
}

// TestSocketOfAnotherUser: a socket in a world-writable directory (where the
// default /tmp/reserved-<uid>.sock lives) that belongs to another user is
// refused before the client connects, with the reason.
func TestSocketOfAnotherUser(t *testing.T) {
	socket, ln := pathstest.ForeignSocket(t, 0o777|os.ModeSticky, "reserved.sock")
	// The listener never answers: a client that connected would wait for
	// the deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := (&client.Client{Socket: socket}).WhoAmI(ctx)
	var ce *client.ConnectError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), fmt.Sprintf("belongs to uid %d, not to you", pathstest.ForeignUID)) {
		t.Errorf("err = %v, want a ConnectError naming the socket's owner", err)
	}
	// Nothing connected: Accept finds no pending connection (one that is
	// pending returns at once; an expired deadline would not even look).
	ln.(*net.UnixListener).SetDeadline(time.Now().Add(100 * time.Millisecond))
	if conn, err := ln.Accept(); err == nil {
		conn.Close()
		t.Error("the client connected to another user's socket")
	}
}

// TestUndecided runs the one classifier over real answers: what the daemon
// decided (an answer, a refusal) against what leaves a request undecided
// (no answer, a garbled one, a problem whose code or status decides
// nothing), so that every client retries a 503 store_unavailable with the
// same key instead of giving the intent up.
func TestUndecided(t *testing.T) {
	var answer struct {
		status int
		code   string
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if answer.code == "" {
			http.Error(w, "<html>bad gateway</html>", answer.status)
			return
		}
		w.Header().Set("Content-Type", api.MediaProblem)
		w.WriteHeader(answer.status)
		json.NewEncoder(w).Encode(api.Problem{Type: "about:blank", Status: answer.status, Code: answer.code})
	}))
	defer srv.Close()
	c := &client.Client{BaseURL: srv.URL}
	for _, tc := range []struct {
		status    int
		code      string
		undecided bool
	}{
		{http.StatusServiceUnavailable, engine.CodeStoreUnavailable, true},
		{http.StatusServiceUnavailable, engine.CodeIdentityUnavailable, true},
		{http.StatusInternalServerError, engine.CodeInternal, true},
		{http.StatusRequestTimeout, api.CodeBodyIncomplete, true},
		{http.StatusServiceUnavailable, "a_code_of_a_newer_daemon", true},
		{http.StatusTooManyRequests, "a_code_of_a_newer_daemon", true},
		{http.StatusBadGateway, "", true}, // A proxy's page, not a problem.
		{http.StatusConflict, engine.CodeOperationConflict, false},
		{http.StatusUnprocessableEntity, engine.CodeRequestContract, false},
		{http.StatusNotFound, engine.CodeUnknownWorkshop, false},
		{http.StatusUnauthorized, engine.CodeUnauthenticated, false},
		{http.StatusGone, engine.CodeOperationExpired, false},
	} {
		answer.status, answer.code = tc.status, tc.code
		status, _, _, err := c.Reserve(context.Background(), engine.OperationKey(uuid.NewString()), engine.Request{Workshop: "w-1", Quantity: 1})
		if got := client.Undecided(status, err); got != tc.undecided || status != tc.status {
			t.Errorf("%d %q: Undecided(%d, %v) = %v, want %v", tc.status, tc.code, status, err, got, tc.undecided)
		}
		// Without the status only the code decides, as after WhoAmI.
		_, err = c.WhoAmI(context.Background())
		if got, want := client.Undecided(0, err), api.Undecided(tc.code) || tc.code == ""; got != want {
			t.Errorf("%d %q: Undecided(0, %v) = %v, want %v", tc.status, tc.code, err, got, want)
		}
	}
	if client.Undecided(http.StatusCreated, nil) {
		t.Error("an answer without an error is undecided")
	}
	srv.Close()
	if _, _, _, err := c.Reserve(context.Background(), engine.OperationKey(uuid.NewString()), engine.Request{Workshop: "w-1", Quantity: 1}); !client.Undecided(0, err) {
		t.Errorf("no answer at all (%v) is not undecided", err)
	}
}

// TestConcurrentSendersReuseConnections: eight goroutines sending through
// one Client reuse their connections instead of opening a new one for most
// requests (net/http may open a few more than eight when a request starts
// before the previous answer's connection is back in the pool).
func TestConcurrentSendersReuseConnections(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok"))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c := &client.Client{BaseURL: srv.URL}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 250 {
				if err := c.Health(t.Context()); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := conns.Load(); n > 16 {
		t.Errorf("8 senders × 250 requests opened %d connections, want at most 16", n)
	}
}

// TestBrokenAfterSending: the daemon takes the request on a kept-alive
// connection and dies before it answers, so the transport's retry of the
// request (it carries an Idempotency-Key) cannot connect. The request may
// have arrived: the error says so (a *SentError), not that the daemon
// could not be reached.
func TestBrokenAfterSending(t *testing.T) {
	socket := filepath.Join(servertest.ShortTempDir(t), "r.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	var requests atomic.Int32
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) == 1 {
			w.Header().Set("Content-Type", api.MediaJSON)
			fmt.Fprint(w, `{"actor":"alice","admin":false}`)
			return
		}
		ln.Close() // The daemon is gone: nothing accepts a new connection.
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	})}
	go srv.Serve(ln)
	defer srv.Close()
	c := &client.Client{Socket: socket}
	ctx := context.Background()
	if _, err := c.WhoAmI(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = c.Send(ctx, engine.OperationKey(uuid.NewString()), client.Reserving(engine.Request{Workshop: "w1", Quantity: 1}))
	var se *client.SentError
	var ce *client.ConnectError
	if !errors.As(err, &se) || errors.As(err, &ce) || !strings.Contains(err.Error(), "broke after POST /api/v1/reservations was sent, so it may have arrived") {
		t.Fatalf("err = %v (%T), want a SentError", err, err)
	}
	// A daemon that is not there at all is still a ConnectError.
	if _, err := (&client.Client{Socket: socket}).WhoAmI(ctx); !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a ConnectError", err)
	}
}

// TestPermissionDeniedOnTCP: a connect that the system refuses over TCP (a
// firewall, a security module) is not a local refusal of the socket: it is
// not Denied, and its message names the URL without looking for it on
// disk.
func TestPermissionDeniedOnTCP(t *testing.T) {
	tcp := &client.ConnectError{Where: "http://127.0.0.1:8080", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrPermission}}
	if tcp.Denied() || strings.Contains(tcp.Error(), "directory") || !strings.Contains(tcp.Error(), "cannot connect to reserved at http://127.0.0.1:8080: dial tcp: permission denied") {
		t.Errorf("TCP permission error: Denied=%v, %q", tcp.Denied(), tcp.Error())
	}
	sock := &client.ConnectError{Where: "/nonexistent/r.sock", Err: os.ErrPermission, Socket: true}
	if !sock.Denied() || !strings.Contains(sock.Error(), "permission denied: you may not look into /nonexistent") {
		t.Errorf("socket permission error: Denied=%v, %q", sock.Denied(), sock.Error())
	}
}
