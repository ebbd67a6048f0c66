// Package framing follows the framing of the HTTP/1.x requests a server reads
// from a connection, so that a handler can learn what net/http hides from it:
// net/http accepts a request with both Content-Length and Transfer-Encoding
// and drops the Content-Length before the handler runs, ignores
// Transfer-Encoding in HTTP/1.0, joins header lines folded onto the next
// line, and goes on reading after a malformed chunked body. A message framed
// two ways can be read as two different requests by two parsers (request
// smuggling), so RFC 9112 section 6.1 wants such a request refused or its
// connection closed.
//
// A Conn sees every byte net/http reads, in order, before net/http does. It
// finds each request's header block, decides how the body that follows is
// framed (by Content-Length or chunked, the way net/http does), skips over
// it, and queues a verdict per header block. The handler takes the verdicts
// in order, one per request, with Conn.Take.
package framing

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Why a request is refused.
var (
	// ErrBadFraming means the request's length is framed ambiguously, or
	// an earlier request's body on the connection was malformed, so where
	// this request begins is uncertain.
	ErrBadFraming = errors.New("bad request framing")
	// ErrHeaderTooLarge means the request line and header fields exceed
	// the header limit.
	ErrHeaderTooLarge = errors.New("request header too large")
	// ErrUntracked means the connection's framing was not followed this
	// far: net/http accepted a request that Conn did not find. It is a
	// failure of ours, never the client's.
	ErrUntracked = errors.New("request framing not followed")
)

// Error is a verdict that refuses a request.
type Error struct {
	Kind   error  // ErrBadFraming, ErrHeaderTooLarge or ErrUntracked.
	Reason string // Why, in words for the client (or, for ErrUntracked, the log).
}

func (e *Error) Error() string { return e.Kind.Error() + ": " + e.Reason }

// Unwrap returns the kind of refusal.
func (e *Error) Unwrap() error { return e.Kind }

// refusal returns an *Error of kind.
func refusal(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Reason: fmt.Sprintf(format, args...)}
}

// malformedBody is the refusal of the requests after a malformed chunked
// body, which net/http goes on reading after.
func malformedBody(what string) error {
	return refusal(ErrBadFraming, "the chunked body of an earlier request on this connection was malformed (%s), so where this request begins is uncertain: send it on a new connection", what)
}

// maxChunkLine bounds a chunk-size line like net/http's chunked reader and
// its 4 KiB read buffer do.
const maxChunkLine = 4096

// Conn is a server-side connection whose reads are followed. It is safe for
// concurrent use; net/http reads from it on more than one goroutine.
type Conn struct {
	net.Conn
	mu sync.Mutex
	p  parser
}

// NewConn follows the requests read from c; a header block (request line,
// header fields and the empty line that ends them, with their line ends)
// longer than maxHeaderBytes is refused with ErrHeaderTooLarge.
func NewConn(c net.Conn, maxHeaderBytes int) *Conn {
	return &Conn{Conn: c, p: parser{max: maxHeaderBytes}}
}

// Read reads from the connection and follows what it read.
func (c *Conn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.mu.Lock()
		c.p.feed(b[:n])
		c.mu.Unlock()
	}
	return n, err
}

// NetConn returns the connection Conn wraps.
func (c *Conn) NetConn() net.Conn { return c.Conn }

// CloseWrite shuts down the writing side, if the wrapped connection can;
// net/http does that before it closes a connection after an error answer.
func (c *Conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// Take returns the verdict on the next request net/http parsed from the
// connection, whose request line is method, target and proto: nil when its
// framing is unambiguous, else an *Error of kind ErrBadFraming,
// ErrHeaderTooLarge or ErrUntracked. Every request a handler sees must be
// taken, in order.
func (c *Conn) Take(method, target, proto string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.p.take(method, target, proto)
}

// Listener wraps every connection it accepts in a Conn.
type Listener struct {
	net.Listener
	MaxHeaderBytes int
}

// Accept waits for the next connection and returns it as a *Conn.
func (l *Listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return NewConn(c, l.MaxHeaderBytes), nil
}

// state is where in the byte stream the parser is.
type state uint8

const (
	stIdle      state = iota // Between messages, skipping CR and LF before a request line.
	stHead                   // In a header block.
	stBody                   // In a body of known length.
	stChunkSize              // In a chunk-size line.
	stChunkData              // In a chunk's data.
	stChunkEnd               // In the CRLF after a chunk's data.
	stTrailer                // In the CRLF after the last chunk.
	stStopped                // No longer following; see parser.stop.
)

// head is the verdict on one header block.
type head struct {
	line string // The request line.
	err  error
}

// parser follows the byte stream of one connection.
type parser struct {
	max   int
	state state
	stop  error // Why the parser stopped, in stStopped.
	heads []head
	taken int // Heads already taken; heads[:taken] are spent.

	// In a header block or a chunk-size line: the current line so far, and
	// the block's size so far.
	line []byte
	size int
	// The facts of the current header block.
	reqLine    string
	haveLine   bool
	lengths    []string // Content-Length values.
	encodings  []string // Transfer-Encoding values.
	folded     bool     // A Content-Length or Transfer-Encoding line was continued on the next line.
	lastFramed bool     // The previous field line was Content-Length or Transfer-Encoding.

	remain uint64 // Bytes left of a body or chunk; in stChunkEnd, of the CRLF.
	excess int64  // A chunked body's overhead beyond what net/http allows for free.
}

// feed follows the next bytes of the stream.
func (p *parser) feed(b []byte) {
	for len(b) > 0 {
		switch p.state {
		case stIdle:
			if b[0] == '\r' || b[0] == '\n' {
				b = b[1:]
				continue
			}
			p.state = stHead
		case stHead:
			b = p.feedHead(b)
		case stBody:
			b = p.skip(b, stIdle)
		case stChunkSize:
			b = p.feedChunkSize(b)
		case stChunkData:
			b = p.skip(b, stChunkEnd)
			if p.state == stChunkEnd {
				p.remain = 2
			}
		case stChunkEnd, stTrailer:
			// A chunk's data must be followed by CRLF. The last chunk
			// must be followed by CRLF at once: net/http reads a
			// trailer section only if it sees where the section ends
			// among the bytes it has buffered, so where it resumes
			// after one depends on how the bytes arrived.
			want := byte('\n')
			if p.remain == 2 {
				want = '\r'
			}
			if b[0] != want {
				if p.state == stTrailer {
					p.stopAt(refusal(ErrBadFraming, "an earlier request on this connection ended its chunked body with a trailer section, after which where this request begins is uncertain: send it on a new connection"))
				} else {
					p.stopAt(malformedBody("a chunk's data was not followed by CRLF"))
				}
				return
			}
			b = b[1:]
			if p.remain--; p.remain > 0 {
				continue
			}
			if p.state == stChunkEnd {
				p.state = stChunkSize
			} else {
				p.state = stIdle
			}
		case stStopped:
			return
		}
	}
}

// skip consumes up to p.remain bytes and moves to next when none remain.
func (p *parser) skip(b []byte, next state) []byte {
	n := uint64(len(b))
	if n > p.remain {
		n = p.remain
	}
	p.remain -= n
	if p.remain == 0 {
		p.state = next
	}
	return b[n:]
}

// feedHead follows a header block: lines end with LF, optionally preceded
// by CR, as net/textproto reads them; the first empty line ends the block.
func (p *parser) feedHead(b []byte) []byte {
	i := bytes.IndexByte(b, '\n')
	chunk := b
	if i >= 0 {
		chunk = b[:i+1]
	}
	p.size += len(chunk)
	if p.size > p.max {
		err := refusal(ErrHeaderTooLarge, "the request line and header fields are longer than %d bytes", p.max)
		p.heads = append(p.heads, head{line: p.reqLine, err: err})
		p.stopAt(err)
		return nil
	}
	p.line = append(p.line, chunk...)
	if i < 0 {
		return nil
	}
	line := bytes.TrimSuffix(p.line[:len(p.line)-1], []byte{'\r'})
	switch {
	case !p.haveLine:
		p.reqLine, p.haveLine = string(line), true
	case len(line) == 0:
		p.endHead()
	case line[0] == ' ' || line[0] == '\t':
		// A continuation of the previous field line (obsolete line
		// folding), which net/textproto joins to it.
		p.folded = p.folded || p.lastFramed
	default:
		name, value, _ := bytes.Cut(line, []byte{':'})
		value = bytes.Trim(value, " \t\r\n") // As net/textproto trims values.
		p.lastFramed = true
		switch {
		case asciiEqualFold(name, "Content-Length"):
			p.lengths = append(p.lengths, string(value))
		case asciiEqualFold(name, "Transfer-Encoding"):
			p.encodings = append(p.encodings, string(value))
		default:
			p.lastFramed = false
		}
	}
	p.line = p.line[:0]
	return b[i+1:]
}

// endHead queues the verdict on a complete header block and moves on to
// the body it announces.
func (p *parser) endHead() {
	line := p.reqLine
	next, n, err := framingOf(line, p.lengths, p.encodings, p.folded)
	p.size, p.reqLine, p.haveLine, p.lengths, p.encodings, p.folded, p.lastFramed = 0, "", false, nil, nil, false, false
	if cap(p.line) > 1024 {
		p.line = nil // Do not keep a long line's buffer for the connection's life.
	}
	p.heads = append(p.heads, head{line: line, err: err})
	if err != nil {
		p.stopAt(err)
		return
	}
	p.state, p.remain, p.excess = next, n, 0
}

// framingOf decides, with net/http's rules, how the body after a header
// block with request line line and the given Content-Length and
// Transfer-Encoding values is framed: the state after the block and the
// body's length, or why the request is refused.
func framingOf(line string, lengths, encodings []string, folded bool) (state, uint64, error) {
	_, rest, ok1 := strings.Cut(line, " ")
	_, proto, ok2 := strings.Cut(rest, " ")
	major, minor, ok := http.ParseHTTPVersion(proto)
	if !ok1 || !ok2 || !ok {
		return 0, 0, refusal(ErrUntracked, "net/http refuses the request line %q", truncate(line))
	}
	http11 := major > 1 || major == 1 && minor >= 1
	switch {
	case folded:
		return 0, 0, refusal(ErrBadFraming, "a Content-Length or Transfer-Encoding field is folded onto a second line: send it on one line")
	case len(encodings) > 0 && len(lengths) > 0:
		return 0, 0, refusal(ErrBadFraming, "the request has both Content-Length and Transfer-Encoding, so its length is ambiguous: send only one of them")
	case len(encodings) > 0 && !http11:
		return 0, 0, refusal(ErrBadFraming, "Transfer-Encoding is not defined in HTTP/1.0, so the request's length is ambiguous: send Content-Length, or use HTTP/1.1")
	case len(encodings) > 0:
		// net/http accepts exactly one Transfer-Encoding, chunked, and
		// answers 501 to anything else.
		if len(encodings) != 1 || !asciiEqualFold([]byte(encodings[0]), "chunked") {
			return 0, 0, refusal(ErrUntracked, "net/http refuses Transfer-Encoding %q", encodings)
		}
		return stChunkSize, 0, nil
	case len(lengths) > 0:
		// net/http accepts repeated Content-Lengths only if they agree,
		// and only decimal digits.
		for _, v := range lengths[1:] {
			if v != lengths[0] {
				return 0, 0, refusal(ErrUntracked, "net/http refuses differing Content-Lengths %q", lengths)
			}
		}
		n, err := strconv.ParseUint(lengths[0], 10, 63)
		if err != nil {
			return 0, 0, refusal(ErrUntracked, "net/http refuses Content-Length %q", truncate(lengths[0]))
		}
		if n > 0 {
			return stBody, n, nil
		}
	}
	return stIdle, 0, nil
}

// feedChunkSize follows a chunk-size line, which net/http wants to end in
// CRLF with no other CR, shorter than maxChunkLine, as hexadecimal digits
// optionally followed by white space or a ";" extension.
func (p *parser) feedChunkSize(b []byte) []byte {
	i := bytes.IndexByte(b, '\n')
	chunk := b
	if i >= 0 {
		chunk = b[:i+1]
	}
	if len(p.line)+len(chunk) > maxChunkLine {
		p.stopAt(malformedBody("a chunk-size line was too long"))
		return nil
	}
	p.line = append(p.line, chunk...)
	if i < 0 {
		return nil
	}
	line := p.line
	p.line = p.line[:0]
	if len(line) < 2 || bytes.IndexByte(line, '\r') != len(line)-2 {
		p.stopAt(malformedBody("a chunk-size line did not end in CRLF"))
		return nil
	}
	size := bytes.TrimRight(line[:len(line)-2], " \t")
	size, _, _ = bytes.Cut(size, []byte{';'})
	n, ok := parseHex(size)
	if !ok {
		p.stopAt(malformedBody(fmt.Sprintf("the chunk size %q is not a hexadecimal number", truncate(string(size)))))
		return nil
	}
	// net/http allows 16 bytes of chunk-size line per chunk plus twice the
	// chunk's data, and fails a body whose excess grows beyond 16 KiB.
	p.excess += int64(len(line)) - 16 - 2*int64(n) // With net/http's arithmetic, overflow and all.
	p.excess = max(p.excess, 0)
	if p.excess > 16<<10 {
		p.stopAt(malformedBody("it had too much besides data"))
		return nil
	}
	if n == 0 {
		p.state, p.remain = stTrailer, 2
	} else {
		p.state, p.remain = stChunkData, n
	}
	return b[i+1:]
}

// parseHex parses a chunk size as net/http does: 1 to 16 hexadecimal digits.
func parseHex(v []byte) (uint64, bool) {
	if len(v) == 0 || len(v) > 16 {
		return 0, false
	}
	var n uint64
	for _, c := range v {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		n = n<<4 | uint64(c)
	}
	return n, true
}

// stopAt stops following the stream: after a refused header block the
// connection ends, and after a malformed body nobody knows where the next
// request begins. Requests after the queued verdicts are refused with err.
func (p *parser) stopAt(err error) {
	p.state, p.stop, p.line = stStopped, err, nil
}

func (p *parser) take(method, target, proto string) error {
	if p.taken == len(p.heads) {
		if p.stop != nil {
			return p.stop
		}
		return refusal(ErrUntracked, "net/http read request %q before its header block ended", truncate(method+" "+target+" "+proto))
	}
	h := p.heads[p.taken]
	p.heads[p.taken] = head{}
	if p.taken++; p.taken == len(p.heads) {
		p.heads, p.taken = p.heads[:0], 0
	}
	if h.err != nil {
		return h.err // The request line of a refused block may be cut short.
	}
	// net/http splits the request line at its first two spaces.
	m, rest, _ := strings.Cut(h.line, " ")
	t, pr, _ := strings.Cut(rest, " ")
	if m != method || t != target || pr != proto {
		return refusal(ErrUntracked, "net/http read request %q where %q was followed", truncate(method+" "+target+" "+proto), truncate(h.line))
	}
	return nil
}

// asciiEqualFold reports whether b equals s, ignoring ASCII case only, as
// net/textproto canonicalizes header names.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c, d := b[i], s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if 'A' <= d && d <= 'Z' {
			d += 'a' - 'A'
		}
		if c != d {
			return false
		}
	}
	return true
}

// truncate shortens s for an error message.
func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
