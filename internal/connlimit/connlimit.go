// Package connlimit bounds the connections an HTTP server holds on one
// listener, so that no client can make it run out of file descriptors. At
// the bound a new connection is admitted by closing the connection that has
// been idle longest (one that finished a request and waits for the next);
// with none idle, the new connection is closed at once, so the accept loop
// never stalls.
package connlimit

import (
	"container/list"
	"net"
	"net/http"
	"sync"
)

// Listener admits at most Max connections at a time. Its ConnState method
// must be the http.Server's ConnState hook: that is how it learns which
// connections are idle and which are gone.
type Listener struct {
	net.Listener
	max      int
	onShed   func()
	onRefuse func()

	mu    sync.Mutex
	conns map[net.Conn]*list.Element // Every admitted connection; the element is in idle while it is idle.
	idle  list.List                  // Of net.Conn, the longest idle first.
}

// Options tune a Listener.
type Options struct {
	// OnShed is called after an idle connection was closed to admit a new
	// one, OnRefuse after a new connection was closed because none was
	// idle. Either may be nil.
	OnShed, OnRefuse func()
}

// New bounds the connections accepted from ln to max, which must be at
// least 1.
func New(ln net.Listener, max int, opts Options) *Listener {
	if max < 1 {
		panic("connlimit: max must be at least 1")
	}
	return &Listener{Listener: ln, max: max, onShed: opts.OnShed, onRefuse: opts.OnRefuse, conns: map[net.Conn]*list.Element{}}
}

// Accept waits for the next connection it can admit. Connections it cannot
// admit are closed as soon as they are accepted.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		admitted, shed := l.admit(c)
		if shed != nil {
			shed.Close()
			if l.onShed != nil {
				l.onShed()
			}
		}
		if admitted {
			return c, nil
		}
		c.Close()
		if l.onRefuse != nil {
			l.onRefuse()
		}
	}
}

// admit counts c in if there is room, making room by giving up the longest
// idle connection, which the caller must close.
func (l *Listener) admit(c net.Conn) (admitted bool, shed net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.conns) >= l.max {
		oldest := l.idle.Front()
		if oldest == nil {
			return false, nil
		}
		shed = l.idle.Remove(oldest).(net.Conn)
		delete(l.conns, shed)
	}
	l.conns[c] = nil
	return true, shed
}

// ConnState follows the state of the server's connections; set it as the
// http.Server's ConnState.
func (l *Listener) ConnState(c net.Conn, s http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.conns[c]
	if !ok {
		return // Shed already, or never admitted.
	}
	if e != nil {
		l.idle.Remove(e)
		l.conns[c] = nil
	}
	switch s {
	case http.StateIdle:
		l.conns[c] = l.idle.PushBack(c)
	case http.StateClosed, http.StateHijacked:
		delete(l.conns, c)
	}
}

// Idle returns the number of admitted connections that wait for their next
// request: those a new connection at the bound may close.
func (l *Listener) Idle() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.idle.Len()
}

// Open returns the number of connections admitted and not yet closed.
func (l *Listener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}
