package pgtest

import (
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// Proxy is a loopback TCP proxy in front of the test server that a test
// can cut off, stall and restore, so that a store (or a daemon) loses its
// database while the server that other tests share keeps running.
type Proxy struct {
	tb              testing.TB
	network, target string // Where the test server listens.
	addr            string // Where the proxy listens, 127.0.0.1:port.

	mu      sync.Mutex
	ln      net.Listener // Nil while cut off.
	stalled bool         // New connections are held without an answer.
	conns   map[net.Conn]bool
	frozen  map[net.Conn]bool // Connections that Freeze stopped.
	thaw    chan struct{}     // Closed when the proxy closes, to end them.
	counts  *Counts           // Set by Count.
	wg      sync.WaitGroup
}

// NewProxy starts a proxy to the server of dsn and returns it with dsn
// rewritten to reach the server through the proxy (plain TCP on loopback,
// every other parameter kept). The proxy stops when the test ends.
func NewProxy(tb testing.TB, dsn string) (*Proxy, string) {
	tb.Helper()
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		tb.Fatalf("%s: %v", EnvDSN, err)
	}
	p := &Proxy{tb: tb, network: "tcp", target: net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), conns: map[net.Conn]bool{}, frozen: map[net.Conn]bool{}, thaw: make(chan struct{})}
	if strings.HasPrefix(cfg.Host, "/") {
		p.network, p.target = "unix", filepath.Join(cfg.Host, ".s.PGSQL."+strconv.Itoa(int(cfg.Port)))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	tb.Cleanup(p.close)
	_, port, _ := net.SplitHostPort(p.addr)
	return p, WithParams(tb, dsn, map[string]string{"host": "127.0.0.1", "port": port, "sslmode": "disable"})
}

// Cut makes the database unreachable: the proxy stops listening, so new
// connections are refused, and resets every connection it forwards.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	p.dropLocked()
}

// Stall makes the database unresponsive: every forwarded connection is
// reset, and new ones are accepted but never answered until Restore or Cut,
// like a server that hangs.
func (p *Proxy) Stall() {
	p.tb.Helper()
	p.mu.Lock()
	p.stalled = true
	p.dropLocked()
	p.mu.Unlock()
	p.listen()
}

// Freeze makes the server hang for the connections the proxy forwards now:
// they stay open, but nothing passes on them any more in either direction,
// as with a server that is stopped (SIGSTOP) or a network that drops every
// packet without a reset. New connections are forwarded as before.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		p.frozen[c] = true
	}
}

// Restore forwards new connections to the server again, on the same
// address, and ends those that Stall held.
func (p *Proxy) Restore() {
	p.tb.Helper()
	p.mu.Lock()
	if p.stalled {
		p.stalled = false
		p.dropLocked()
	}
	p.mu.Unlock()
	p.listen()
}

// listen accepts connections on the proxy's address again after Cut.
func (p *Proxy) listen() {
	p.tb.Helper()
	p.mu.Lock()
	listening := p.ln != nil
	p.mu.Unlock()
	if listening {
		return
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.tb.Fatalf("proxy: listen on %s again: %v", p.addr, err)
	}
	p.serve(ln)
}

// dropLocked closes every connection the proxy holds.
func (p *Proxy) dropLocked() {
	for c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0) // A reset, as when a server dies.
		}
		c.Close()
	}
	clear(p.conns)
}

func (p *Proxy) close() {
	p.Cut()
	close(p.thaw)
	p.wg.Wait()
}

// serve accepts on ln until it is closed.
func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			if p.ln != ln {
				p.mu.Unlock()
				c.Close()
				return
			}
			p.conns[c] = true
			stalled := p.stalled
			p.mu.Unlock()
			if !stalled {
				p.wg.Go(func() { p.forward(c) })
			}
		}
	})
}

// forward copies between c and a new connection to the server until either
// side ends.
func (p *Proxy) forward(c net.Conn) {
	s, err := net.Dial(p.network, p.target)
	if err != nil {
		p.forget(c)
		c.Close()
		return
	}
	p.mu.Lock()
	if !p.conns[c] { // Dropped meanwhile.
		p.mu.Unlock()
		c.Close()
		s.Close()
		return
	}
	p.conns[s] = true
	var seen func([]byte)
	if p.counts != nil {
		seen = (&messages{counts: p.counts}).feed
	}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { p.copy(s, c, c, seen); done <- struct{}{} }()
	go func() { p.copy(c, s, c, nil); done <- struct{}{} }()
	<-done
	c.Close()
	s.Close()
	<-done
	p.forget(c)
	p.forget(s)
}

// copy copies from src to dst, the two sides of the client connection c,
// until either fails, and shows seen (if not nil) what it copies; once
// Freeze stopped c, it holds what it read until the proxy closes.
func (p *Proxy) copy(dst, src, c net.Conn, seen func([]byte)) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		p.mu.Lock()
		frozen := p.frozen[c]
		p.mu.Unlock()
		if frozen {
			<-p.thaw
			return
		}
		if n > 0 && seen != nil {
			seen(buf[:n])
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *Proxy) forget(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.frozen, c)
	p.mu.Unlock()
}
