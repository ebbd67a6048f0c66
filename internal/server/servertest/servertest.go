// Package servertest starts a real reserve HTTP server for tests: an engine
// on a fresh bbolt file, served on a short Unix socket path and on a
// loopback TCP port, with tokens for an admin and two actors.
//
// Only tests may import it.
package servertest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/faults"
	"github.com/reserve/reserve/internal/logs"
	"github.com/reserve/reserve/internal/server"
	"github.com/reserve/reserve/internal/tracing"
)

// The workshop every harness starts with.
const (
	Workshop            = "workshop-demo"
	WorkshopCapacity    = 3
	WorkshopMaxQuantity = 2
)

// Options configure Start.
type Options struct {
	FaultInjection bool
	AllowedHosts   []string
	// Clock, if set, is the engine's clock (engine.WithClock).
	Clock func() time.Time
	// CheckOpenAPI makes the clients of SocketClient and TCPClient check
	// every exchange against docs/openapi.yaml (see OpenAPI.Check) and
	// fail the test, naming the request, the status and the validator's
	// findings, at each one that departs from it.
	CheckOpenAPI bool
	// LookupUsername, if set, names socket peers' uids instead of the
	// system's user database (server.Config.LookupUsername).
	LookupUsername func(uid uint32) (string, error)
	// EmailSignIn, if set, is the server's sign-in by email
	// (server.Config.EmailSignIn).
	EmailSignIn *server.EmailSignIn
	// RateLimit is the server's rate limit (server.Config.RateLimit);
	// the zero value limits nothing.
	RateLimit server.RateLimit
	// Tracer, if set, traces the server, the engine and the store as the
	// daemon does with an OTLP endpoint.
	Tracer *tracing.Tracer
}

// Harness is a running server and its parts.
type Harness struct {
	Engine  *engine.Engine
	Store   *boltstore.Store
	Server  *server.Server
	Socket  string // The Unix socket path.
	URL     string // The TCP base URL, http://127.0.0.1:port.
	Logs    *LogBuffer
	Admin   string // Bearer token of actor "root-admin", an admin.
	Alice   string // Bearer token of actor "alice".
	Bob     string // Bearer token of actor "bob".
	tcpAddr string
	// The HTTP clients of SocketClient and TCPClient; nil means the
	// client's own.
	socketHTTP, tcpHTTP *http.Client
}

// Start serves a fresh store until the test ends.
func Start(tb testing.TB, opts Options) *Harness {
	tb.Helper()
	ctx := context.Background()
	metrics := server.NewMetrics()
	store, err := boltstore.Open(filepath.Join(tb.TempDir(), "reserved.db"), boltstore.Options{OnCommit: metrics.ObserveCommit, Tracer: opts.Tracer})
	if err != nil {
		tb.Fatal(err)
	}
	h := &Harness{Store: store, Logs: &LogBuffer{}}
	// The daemon's own JSON lines, every level.
	logger, err := logs.New(h.Logs, "json", slog.LevelDebug)
	if err != nil {
		tb.Fatal(err)
	}
	cfg := server.Config{
		Logger:       logger,
		Metrics:      metrics,
		DaemonUID:    os.Getuid(),
		AllowedHosts: opts.AllowedHosts,
		Backup:       store.Backup,

		LookupUsername: opts.LookupUsername,
		EmailSignIn:    opts.EmailSignIn,
		RateLimit:      opts.RateLimit,
		Tracer:         opts.Tracer,
	}
	var engStore engine.Store = store
	if opts.FaultInjection {
		injector := faults.New(logger)
		cfg.Faults, engStore = injector, injector.Store(store)
	}
	engOpts := []engine.Option{engine.WithTracer(opts.Tracer)}
	if opts.Clock != nil {
		engOpts = append(engOpts, engine.WithClock(opts.Clock))
	}
	h.Engine = engine.New(engStore, engOpts...)
	cfg.Engine = h.Engine
	h.Socket = filepath.Join(ShortTempDir(tb), "s.sock")
	if _, _, err := h.Engine.PutWorkshop(ctx, Workshop, engine.WorkshopSpec{Capacity: WorkshopCapacity, MaxQuantity: WorkshopMaxQuantity, Title: "Demo"}, nil); err != nil {
		tb.Fatal(err)
	}
	for _, t := range []struct {
		dst   *string
		actor string
		admin bool
	}{{&h.Admin, "root-admin", true}, {&h.Alice, "alice", false}, {&h.Bob, "bob", false}} {
		if *t.dst, err = h.Engine.CreateToken(ctx, t.actor, t.admin); err != nil {
			tb.Fatal(err)
		}
	}
	h.Server = server.New(cfg)
	sock, err := net.Listen("unix", h.Socket)
	if err != nil {
		tb.Fatal(err)
	}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	h.tcpAddr = tcp.Addr().String()
	h.URL = "http://" + h.tcpAddr
	if opts.CheckOpenAPI {
		h.checkOpenAPI(tb)
	}
	var wg sync.WaitGroup
	for _, serve := range []func() error{func() error { return h.Server.ServeUnix(sock) }, func() error { return h.Server.ServeTCP(tcp) }} {
		wg.Go(func() {
			if err := serve(); err != nil {
				tb.Errorf("serve: %v", err)
			}
		})
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// Connections a client dialled but never used would hold Shutdown
		// for five seconds (net/http's grace for new connections).
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		for _, c := range []*http.Client{h.socketHTTP, h.tcpHTTP} {
			if c != nil {
				c.CloseIdleConnections()
			}
		}
		if err := h.Server.Shutdown(ctx); err != nil {
			tb.Errorf("shutdown: %v", err)
		}
		wg.Wait()
		if err := store.Close(); err != nil {
			tb.Errorf("close store: %v", err)
		}
	})
	h.waitTCPServed(tb)
	return h
}

// waitTCPServed returns once the TCP listener answers a request. ServeTCP
// records the listener's address, the base of login links, in its own
// goroutine before it serves; without this wait a login link asked for on
// the socket right after Start could find no TCP listener yet (not_found).
// An answer on TCP proves that the address is recorded.
func (h *Harness) waitTCPServed(tb testing.TB) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // Only ends a hang.
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.URL+"/healthz", nil)
	if err != nil {
		tb.Fatal(err)
	}
	// A connection of its own, closed after the answer, so that no idle
	// connection is left behind.
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		tb.Fatalf("the TCP listener does not answer: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("GET /healthz on the TCP listener = %d, want 200", resp.StatusCode)
	}
}

// TCPAddr returns the TCP listener's host:port.
func (h *Harness) TCPAddr() string { return h.tcpAddr }

// SocketClient returns a client on the Unix socket.
func (h *Harness) SocketClient() *client.Client {
	return &client.Client{Socket: h.Socket, HTTPClient: h.socketHTTP}
}

// TCPClient returns a client on TCP with a bearer token ("" sends none).
func (h *Harness) TCPClient(token string) *client.Client {
	return &client.Client{BaseURL: h.URL, Token: token, HTTPClient: h.tcpHTTP}
}

// checkOpenAPI gives SocketClient and TCPClient HTTP clients that check
// every exchange against docs/openapi.yaml.
func (h *Harness) checkOpenAPI(tb testing.TB) {
	tb.Helper()
	o := LoadOpenAPI(tb)
	var d net.Dialer
	socket := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return d.DialContext(ctx, "unix", h.Socket)
	}}
	h.socketHTTP = &http.Client{Transport: &checkingTransport{next: socket, openAPI: o, tb: tb, via: "Unix socket"}}
	tcp := http.DefaultTransport.(*http.Transport).Clone()
	h.tcpHTTP = &http.Client{Transport: &checkingTransport{next: tcp, openAPI: o, tb: tb, via: "TCP listener"}}
}

// Counts returns how many reservations and receipts the store holds.
func (h *Harness) Counts(tb testing.TB) (reservations, receipts int) {
	tb.Helper()
	err := h.Store.View(context.Background(), func(tx engine.Tx) error {
		if err := tx.ForEachReservation(func(engine.Reservation) error { reservations++; return nil }); err != nil {
			return err
		}
		return tx.ForEachReceipt(func(engine.Receipt) error { receipts++; return nil })
	})
	if err != nil {
		tb.Fatal(err)
	}
	return reservations, receipts
}

// MustCheckClean fails the test if the store breaks an invariant.
func (h *Harness) MustCheckClean(tb testing.TB) {
	tb.Helper()
	findings, err := h.Store.Check(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range findings {
		tb.Errorf("finding: %s", f)
	}
}

// ShortTempDir returns a new directory under /tmp, removed when the test
// ends. Unix socket paths must stay below 108 bytes, which t.TempDir() paths
// of long test names exceed.
func ShortTempDir(tb testing.TB) string {
	tb.Helper()
	dir, err := os.MkdirTemp("/tmp", "rsv")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// LogBuffer collects JSON log lines; it is safe for concurrent use.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything logged so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Records returns every log line decoded as a JSON object.
func (b *LogBuffer) Records() ([]map[string]any, error) {
	var recs []map[string]any
	sc := bufio.NewScanner(bytes.NewReader([]byte(b.String())))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return nil, errors.Join(errors.New("log line is not JSON: "+sc.Text()), err)
		}
		recs = append(recs, m)
	}
	return recs, sc.Err()
}

// RequestLines returns the lines of the request log so far (msg
// "request"), decoded.
func (b *LogBuffer) RequestLines(tb testing.TB) []map[string]any {
	tb.Helper()
	recs, err := b.Records()
	if err != nil {
		tb.Fatal(err)
	}
	var lines []map[string]any
	for _, r := range recs {
		if r["msg"] == "request" {
			lines = append(lines, r)
		}
	}
	return lines
}

// Eventually calls cond every few milliseconds until it returns true, and
// fails the test if that takes longer than timeout. The timeout only ends a
// hung test clearly; no test relies on how long anything takes.
func Eventually(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not within %v", what, timeout)
		}
		<-tick.C
	}
}

// Find returns the first log record with msg whose attributes include the
// given key, value pairs, or nil.
func (b *LogBuffer) Find(msg string, keyValues ...string) map[string]any {
	recs, _ := b.Records()
next:
	for _, r := range recs {
		if r["msg"] != msg {
			continue
		}
		for i := 0; i+1 < len(keyValues); i += 2 {
			if r[keyValues[i]] != keyValues[i+1] {
				continue next
			}
		}
		return r
	}
	return nil
}
