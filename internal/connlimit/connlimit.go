// Package connlimit bounds the connections an HTTP server holds on one
// listener, so that no client can make it run out of file descriptors. At
// the bound a new connection is admitted by closing the connection that has
// been idle longest (one that finished a request and waits for the next);
// with none idle, by closing the one that has waited longest for its first
// request header; only when every connection is busy with a request is the
// new connection closed at once, so the accept loop never stalls.
//
// A client that connects to send a request sends its header at once, so it
// is the youngest waiting connection and the last one closed: to keep it
// out, connections that hold their slots without finishing a header must
// be opened faster than it sends its header, not merely held.
package connlimit

import (
	"container/list"
	"net"
	"net/http"
	"sync"
)

// Listener admits at most Max connections at a time. Its ConnState method
// must be the http.Server's ConnState hook: that is how it learns which
// connections are idle, which are busy and which are gone.
type Listener struct {
	net.Listener
	max           int
	onShed        func()
	onShedWaiting func()
	onRefuse      func()

	mu    sync.Mutex
	conns map[net.Conn]held // Every admitted connection.
	// Of net.Conn, the connections that may be closed at the bound, the
	// longest held in the queue first: idle ones, and those that have
	// not yet finished their first request header.
	idle, waiting list.List
}

// held is where an admitted connection is queued: in idle or waiting, or
// nowhere (queue nil) while it is busy with a request.
type held struct {
	queue *list.List
	e     *list.Element
}

// Options tune a Listener.
type Options struct {
	// OnShed is called when an idle connection is closed to admit a new
	// one, OnShedWaiting when a connection that had not finished its
	// first request header is, and OnRefuse when a new connection is
	// closed because every connection was busy with a request. Each is
	// called just before the close, so that whoever sees the connection
	// closed also sees what the call counted. Any may be nil.
	OnShed, OnShedWaiting, OnRefuse func()
}

// New bounds the connections accepted from ln to max, which must be at
// least 1.
func New(ln net.Listener, max int, opts Options) *Listener {
	if max < 1 {
		panic("connlimit: max must be at least 1")
	}
	return &Listener{Listener: ln, max: max, onShed: opts.OnShed, onShedWaiting: opts.OnShedWaiting, onRefuse: opts.OnRefuse, conns: map[net.Conn]held{}}
}

// Accept waits for the next connection it can admit. Connections it cannot
// admit are closed as soon as they are accepted.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		admitted, shed, onShed := l.admit(c)
		if shed != nil {
			call(onShed)
			shed.Close()
		}
		if admitted {
			return c, nil
		}
		call(l.onRefuse)
		c.Close()
	}
}

func call(f func()) {
	if f != nil {
		f()
	}
}

// admit counts c in if there is room, making room by giving up the longest
// idle connection or else the one waiting longest for its first header,
// which the caller must close after it called onShed. Admitted, c waits for
// its first header.
func (l *Listener) admit(c net.Conn) (admitted bool, shed net.Conn, onShed func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.conns) >= l.max {
		switch {
		case l.idle.Len() > 0:
			shed, onShed = l.idle.Remove(l.idle.Front()).(net.Conn), l.onShed
		case l.waiting.Len() > 0:
			shed, onShed = l.waiting.Remove(l.waiting.Front()).(net.Conn), l.onShedWaiting
		default:
			return false, nil, nil
		}
		delete(l.conns, shed)
	}
	l.conns[c] = held{queue: &l.waiting, e: l.waiting.PushBack(c)}
	return true, shed, onShed
}

// ConnState follows the state of the server's connections; set it as the
// http.Server's ConnState. A connection waits from its acceptance until
// the server has read its first request header (StateNew); once busy with
// a request (StateActive) it is queued again only when idle.
func (l *Listener) ConnState(c net.Conn, s http.ConnState) {
	if s == http.StateNew {
		return // Queued as waiting when admitted.
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	h, ok := l.conns[c]
	if !ok {
		return // Shed already, or never admitted.
	}
	if h.queue != nil {
		h.queue.Remove(h.e)
	}
	switch s {
	case http.StateIdle:
		l.conns[c] = held{queue: &l.idle, e: l.idle.PushBack(c)}
	case http.StateClosed, http.StateHijacked:
		delete(l.conns, c)
	default:
		l.conns[c] = held{}
	}
}

// Idle returns the number of admitted connections that wait for their next
// request: those a new connection at the bound closes first.
func (l *Listener) Idle() int { return l.count(&l.idle) }

// Waiting returns the number of admitted connections that have not yet
// finished their first request header: those a new connection at the bound
// closes when none is idle.
func (l *Listener) Waiting() int { return l.count(&l.waiting) }

func (l *Listener) count(q *list.List) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return q.Len()
}

// Open returns the number of connections admitted and not yet closed.
func (l *Listener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}
