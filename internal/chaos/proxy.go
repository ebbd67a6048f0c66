package chaos

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// proxy is a loopback HTTP proxy in front of one daemon that loses and
// repeats requests the way networks and proxies do: it passes most
// requests on, delays some, drops the connection of some after the
// request reached the daemon (so its answer is lost), and sends some
// twice (returning the second answer).
type proxy struct {
	upstream string
	srv      *http.Server
	addr     string
	tr       *http.Transport
	mu       sync.Mutex
	rng      *rand.Rand
	// Counts of what it did.
	dropped, duplicated, delayed atomic.Int64
}

func newProxy(seed uint64, upstream string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{upstream: upstream, rng: rand.New(rand.NewPCG(seed, 0x9e0)), addr: ln.Addr().String(),
		tr: &http.Transport{MaxIdleConnsPerHost: 16, ResponseHeaderTimeout: 30 * time.Second}}
	p.srv = &http.Server{Handler: p}
	go p.srv.Serve(ln)
	return p, nil
}

// The proxy's actions.
const (
	proxyPass = iota
	proxyDelay
	proxyDrop
	proxyDuplicate
)

func (p *proxy) action() (int, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch n := p.rng.IntN(100); {
	case n < 8:
		return proxyDrop, 0
	case n < 14:
		return proxyDuplicate, 0
	case n < 22:
		return proxyDelay, time.Duration(1+p.rng.IntN(80)) * time.Millisecond
	}
	return proxyPass, 0
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	act, delay := p.action()
	send := func() (*http.Response, []byte, error) {
		out, err := http.NewRequestWithContext(context.WithoutCancel(r.Context()), r.Method, "http://"+p.upstream+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			return nil, nil, err
		}
		out.Header = r.Header.Clone()
		out.Header.Del("Connection")
		resp, err := p.tr.RoundTrip(out)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		return resp, data, err
	}
	if act == proxyDelay {
		p.delayed.Add(1)
		time.Sleep(delay)
	}
	resp, data, err := send()
	if act == proxyDuplicate && err == nil {
		p.duplicated.Add(1)
		resp, data, err = send()
	}
	if act == proxyDrop || err != nil {
		if act == proxyDrop {
			p.dropped.Add(1)
		}
		if c, _, herr := http.NewResponseController(w).Hijack(); herr == nil {
			c.Close()
		}
		return
	}
	for k, vs := range resp.Header {
		if k != "Connection" && k != "Content-Length" {
			w.Header()[k] = vs
		}
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(data)
}

func (p *proxy) close() {
	p.srv.Close()
	p.tr.CloseIdleConnections()
}
