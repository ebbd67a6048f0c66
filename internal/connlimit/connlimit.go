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
//
// Connections that stay busy cannot be closed to make room: a client that
// pipelines requests and never reads the answers keeps its connections
// busy until the server's write timeout. So that such a client cannot take
// every slot, a listener can tell the owners of its connections apart
// (Options.Owner, say by the uid of a Unix socket peer): privileged owners
// have slots of their own that no other owner can take (Options.Reserved),
// and each other owner holds at most its share (Options.Share). A
// connection counts against its owner from its acceptance to its close,
// busy or not, and at a bound it is the owner's own idle or waiting
// connections, or another unprivileged owner's, that make room.
//
// It imports nothing of the server it bounds.
package connlimit

import (
	"container/list"
	"net"
	"net/http"
	"sync"
)

// Owner is who holds a connection, as Options.Owner names it.
type Owner struct {
	// Key tells owners apart, e.g. the uid of a Unix socket peer.
	Key string
	// Privileged owners may take the reserved slots and have no share:
	// they are bounded only by the listener's max.
	Privileged bool
}

// Refusal says why a new connection was closed at once.
type Refusal int

const (
	// RefusedBusy means every connection held was busy with a request.
	RefusedBusy Refusal = iota
	// RefusedUnreserved means unprivileged owners held every slot that is
	// not reserved, each busy with a request.
	RefusedUnreserved
	// RefusedShare means the new connection's owner held its whole share,
	// each connection busy with a request.
	RefusedShare
)

// Listener admits at most Max connections at a time. Its ConnState method
// must be the http.Server's ConnState hook: that is how it learns which
// connections are idle, which are busy and which are gone.
type Listener struct {
	net.Listener
	max           int
	unreserved    int // Slots unprivileged owners may hold together.
	share         int // Slots one unprivileged owner may hold.
	owner         func(net.Conn) Owner
	onShed        func()
	onShedWaiting func()
	onRefuse      func(net.Conn, Refusal)

	mu    sync.Mutex
	conns map[net.Conn]held // Every admitted connection.
	// Of net.Conn, the connections that may be closed at the bound, the
	// longest held in the queue first: idle ones, and those that have
	// not yet finished their first request header.
	idle, waiting list.List
	held          map[string]int // Connections held by each unprivileged owner.
	unprivileged  int            // Connections held by unprivileged owners.
}

// held is who holds an admitted connection and where it is queued: in
// idle or waiting, or nowhere (queue nil) while it is busy with a request.
type held struct {
	owner Owner
	queue *list.List
	e     *list.Element
}

// Options tune a Listener.
type Options struct {
	// OnShed is called when an idle connection is closed to admit a new
	// one, OnShedWaiting when a connection that had not finished its
	// first request header is. Each is called just before the close, so
	// that whoever sees the connection closed also sees what the call
	// counted. Either may be nil.
	OnShed, OnShedWaiting func()
	// OnRefuse, if set, is called with a new connection that is closed at
	// once and why, just before the close. It may write a short answer to
	// it (the connection is fresh, so a small write does not wait for
	// the client), but it runs in the accept loop and must not block.
	OnRefuse func(c net.Conn, why Refusal)
	// Owner, if set, names who holds each new connection. It is called
	// once per connection, in the accept loop. Without it every
	// connection has the same unprivileged owner.
	Owner func(net.Conn) Owner
	// Reserved is how many of the slots only privileged owners may take;
	// it must be less than max.
	Reserved int
	// Share is the most slots one unprivileged owner may hold; zero (or
	// more than the slots that are not reserved) means every one of them.
	Share int
}

// New bounds the connections accepted from ln to max, which must be at
// least 1.
func New(ln net.Listener, max int, opts Options) *Listener {
	if max < 1 {
		panic("connlimit: max must be at least 1")
	}
	if opts.Reserved < 0 || opts.Reserved >= max {
		panic("connlimit: Reserved must be at least 0 and less than max")
	}
	l := &Listener{Listener: ln, max: max, unreserved: max - opts.Reserved, owner: opts.Owner,
		onShed: opts.OnShed, onShedWaiting: opts.OnShedWaiting, onRefuse: opts.OnRefuse,
		conns: map[net.Conn]held{}, held: map[string]int{}}
	l.share = l.unreserved
	if opts.Share > 0 && opts.Share < l.unreserved {
		l.share = opts.Share
	}
	return l
}

// Accept waits for the next connection it can admit. Connections it cannot
// admit are closed as soon as they are accepted.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		var o Owner
		if l.owner != nil {
			o = l.owner(c)
		}
		refused, why, shed, onShed := l.admit(c, o)
		if shed != nil {
			call(onShed)
			shed.Close()
		}
		if !refused {
			return c, nil
		}
		if l.onRefuse != nil {
			l.onRefuse(c, why)
		}
		c.Close()
	}
}

func call(f func()) {
	if f != nil {
		f()
	}
}

// admit counts c, held by o, in if there is room. At a bound it makes room
// by giving up the longest idle connection that frees a slot under that
// bound, or else the one waiting longest for its first header, which the
// caller must close after it called onShed; the bounds are o's share, the
// slots that are not reserved (for an unprivileged o) and max. Admitted, c
// waits for its first header.
func (l *Listener) admit(c net.Conn, o Owner) (refused bool, why Refusal, shed net.Conn, onShed func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// frees says whether closing a connection held by h makes room.
	var frees func(h Owner) bool
	switch {
	case !o.Privileged && l.held[o.Key] >= l.share && l.share < l.unreserved:
		why, frees = RefusedShare, func(h Owner) bool { return h == o }
	case !o.Privileged && l.unprivileged >= l.unreserved && l.unreserved < l.max:
		why, frees = RefusedUnreserved, func(h Owner) bool { return !h.Privileged }
	case len(l.conns) >= l.max:
		why, frees = RefusedBusy, func(Owner) bool { return true }
	}
	if frees != nil {
		if shed, onShed = l.first(&l.idle, frees), l.onShed; shed == nil {
			if shed, onShed = l.first(&l.waiting, frees), l.onShedWaiting; shed == nil {
				return true, why, nil, nil
			}
		}
		l.forget(shed)
	}
	l.conns[c] = held{owner: o, queue: &l.waiting, e: l.waiting.PushBack(c)}
	if !o.Privileged {
		l.held[o.Key]++
		l.unprivileged++
	}
	return false, 0, shed, onShed
}

// first returns the connection queued longest in q whose owner frees
// accepts, or nil.
func (l *Listener) first(q *list.List, frees func(Owner) bool) net.Conn {
	for e := q.Front(); e != nil; e = e.Next() {
		c := e.Value.(net.Conn)
		if frees(l.conns[c].owner) {
			return c
		}
	}
	return nil
}

// forget stops counting c, dequeuing it.
func (l *Listener) forget(c net.Conn) {
	h := l.conns[c]
	if h.queue != nil {
		h.queue.Remove(h.e)
	}
	delete(l.conns, c)
	if !h.owner.Privileged {
		l.unprivileged--
		if l.held[h.owner.Key]--; l.held[h.owner.Key] == 0 {
			delete(l.held, h.owner.Key)
		}
	}
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
	switch s {
	case http.StateClosed, http.StateHijacked:
		l.forget(c)
		return
	}
	if h.queue != nil {
		h.queue.Remove(h.e)
	}
	h.queue, h.e = nil, nil
	if s == http.StateIdle {
		h.queue, h.e = &l.idle, l.idle.PushBack(c)
	}
	l.conns[c] = h
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
