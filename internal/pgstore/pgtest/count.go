package pgtest

import (
	"encoding/binary"
	"sync/atomic"
)

// Counts tallies what the clients of a Proxy ask the server: the
// statements they run (simple queries, and executions of prepared or
// unnamed statements) and the round trips they wait for (simple queries,
// and Syncs, which end a pipeline of extended-protocol messages).
type Counts struct {
	statements, roundTrips atomic.Int64
}

// Count makes p tally the messages of the connections it forwards from
// now on, and returns the tally.
func (p *Proxy) Count() *Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.counts == nil {
		p.counts = &Counts{}
	}
	return p.counts
}

// Statements returns the statements counted so far.
func (c *Counts) Statements() int64 { return c.statements.Load() }

// RoundTrips returns the round trips counted so far.
func (c *Counts) RoundTrips() int64 { return c.roundTrips.Load() }

// messages follows the messages a client sends on one connection: first
// the startup message (a length, then its body), then messages of a type
// byte and a length, the length counting itself but not the type.
type messages struct {
	counts  *Counts
	started bool
	head    []byte // The part of the next header read so far.
	skip    int    // What is left of the current message's body.
}

// feed reads the next bytes the client sent.
func (m *messages) feed(p []byte) {
	for len(p) > 0 {
		if m.skip > 0 {
			n := min(m.skip, len(p))
			m.skip, p = m.skip-n, p[n:]
			continue
		}
		size := 5
		if !m.started {
			size = 4
		}
		n := min(size-len(m.head), len(p))
		m.head, p = append(m.head, p[:n]...), p[n:]
		if len(m.head) < size {
			return
		}
		m.skip = int(binary.BigEndian.Uint32(m.head[size-4:])) - 4
		if m.started {
			switch m.head[0] {
			case 'Q':
				m.counts.statements.Add(1)
				m.counts.roundTrips.Add(1)
			case 'E':
				m.counts.statements.Add(1)
			case 'S':
				m.counts.roundTrips.Add(1)
			}
		}
		m.started, m.head = true, m.head[:0]
	}
}
