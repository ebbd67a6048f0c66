package framing

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

const testMax = 16 << 10

// verdicts feeds stream to a parser in pieces of split bytes and takes the
// verdicts on the given request lines in order.
func verdicts(stream string, split int, lines ...string) []error {
	p := parser{max: testMax}
	for b := []byte(stream); len(b) > 0; {
		n := min(split, len(b))
		p.feed(b[:n])
		b = b[n:]
	}
	var errs []error
	for _, l := range lines {
		method, rest, _ := strings.Cut(l, " ")
		target, proto, _ := strings.Cut(rest, " ")
		errs = append(errs, p.take(method, target, proto))
	}
	return errs
}

func TestVerdicts(t *testing.T) {
	long := strings.Repeat("a", testMax-len("GET / HTTP/1.1\r\nX: \r\n\r\n"))
	tests := []struct {
		name   string
		stream string
		lines  []string
		want   []error // nil, or the sentinel each verdict must wrap
	}{
		{"bodies of every kind, pipelined",
			"GET /a HTTP/1.1\r\nHost: x\r\n\r\n" +
				"POST /b HTTP/1.1\r\ncontent-length: 5\r\n\r\nGET /" +
				"POST /c HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n3;ext=1\r\nabc\r\n2 \r\nde\r\n0\r\n\r\n" +
				"\r\nPUT /d HTTP/1.0\nContent-Length: 0\n\n" +
				"GET /e HTTP/1.1\r\nX-Folded: a\r\n b\r\n\r\n",
			[]string{"GET /a HTTP/1.1", "POST /b HTTP/1.1", "POST /c HTTP/1.1", "PUT /d HTTP/1.0", "GET /e HTTP/1.1"},
			[]error{nil, nil, nil, nil, nil}},
		{"Content-Length and Transfer-Encoding",
			"POST /a HTTP/1.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\n\r\n",
			[]string{"POST /a HTTP/1.1", "GET /smuggled HTTP/1.1"},
			[]error{ErrBadFraming, ErrBadFraming}},
		{"Transfer-Encoding before Content-Length",
			"POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n",
			[]string{"POST /a HTTP/1.1"}, []error{ErrBadFraming}},
		{"Transfer-Encoding in HTTP/1.0",
			"POST /a HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
			[]string{"POST /a HTTP/1.0"}, []error{ErrBadFraming}},
		{"folded Content-Length",
			"POST /a HTTP/1.1\r\nContent-Length:\r\n 4\r\n\r\nabcd",
			[]string{"POST /a HTTP/1.1"}, []error{ErrBadFraming}},
		{"header block at the limit", "GET / HTTP/1.1\r\nX: " + long + "\r\n\r\n",
			[]string{"GET / HTTP/1.1"}, []error{nil}},
		{"header block over the limit", "GET / HTTP/1.1\r\nX: " + long + "a\r\n\r\n",
			[]string{"GET / HTTP/1.1"}, []error{ErrHeaderTooLarge}},
		{"malformed chunk before the next request",
			"POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXX0\r\n\r\nGET /b HTTP/1.1\r\n\r\n",
			[]string{"POST /a HTTP/1.1", "GET /b HTTP/1.1"}, []error{nil, ErrBadFraming}},
		{"trailer section",
			"POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-Trailer: 1\r\n\r\nGET /b HTTP/1.1\r\n\r\n",
			[]string{"POST /a HTTP/1.1", "GET /b HTTP/1.1"}, []error{nil, ErrBadFraming}},
		{"chunk-size line with a bare LF",
			"POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\n\r\nGET /b HTTP/1.1\r\n\r\n",
			[]string{"POST /a HTTP/1.1", "GET /b HTTP/1.1"}, []error{nil, ErrBadFraming}},
		{"another request line than net/http read", "GET /a HTTP/1.1\r\n\r\n",
			[]string{"GET /b HTTP/1.1"}, []error{ErrUntracked}},
		{"a request net/http read before its header block ended", "GET /a HTTP/1.1\r\n",
			[]string{"GET /a HTTP/1.1"}, []error{ErrUntracked}},
	}
	for _, tt := range tests {
		for _, split := range []int{1, 3, len(tt.stream)} {
			got := verdicts(tt.stream, split, tt.lines...)
			for i, err := range got {
				if tt.want[i] == nil && err != nil || tt.want[i] != nil && !errors.Is(err, tt.want[i]) {
					t.Errorf("%s, fed %d bytes at a time: verdict %d = %v, want %v", tt.name, split, i, err, tt.want[i])
				}
			}
		}
	}
}

// FuzzAgreesWithNetHTTP reads a stream of pipelined requests the way
// net/http's server does and checks that the parser, fed the same bytes in
// pieces, finds every request net/http finds: its verdict on each is nil
// or a refusal, never ErrUntracked, until the first refusal, after which
// the server closes the connection.
func FuzzAgreesWithNetHTTP(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc\r\nGET / HTTP/1.0\r\n\r\n",
		"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1;a=b\r\nx\r\n0\r\nT: 1\r\n\r\nGET / HTTP/1.1\r\n\r\n",
		"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\nGET / HTTP/1.1\r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\nx",
		"GET / HTTP/1.1\nX: a\n  b\nContent-Length: 1\n\nxGET / HTTP/1.1\n\n",
		"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\nPOST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nz",
	} {
		f.Add([]byte(s), uint8(7))
	}
	f.Fuzz(func(t *testing.T, stream []byte, split uint8) {
		p := parser{max: testMax}
		for b := stream; len(b) > 0; {
			n := min(int(split)%32+1, len(b))
			p.feed(b[:n])
			b = b[n:]
		}
		br := bufio.NewReader(bytes.NewReader(stream))
		lastMethod := ""
		for i := 0; ; i++ {
			if lastMethod == http.MethodPost {
				// net/http's server skips up to four CR or LF after a POST.
				peek, _ := br.Peek(4)
				n := 0
				for n < len(peek) && (peek[n] == '\r' || peek[n] == '\n') {
					n++
				}
				br.Discard(n)
			}
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			lastMethod = req.Method
			verdict := p.take(req.Method, req.RequestURI, req.Proto)
			if errors.Is(verdict, ErrUntracked) {
				t.Fatalf("request %d, %s %s %s: %v", i, req.Method, req.RequestURI, req.Proto, verdict)
			}
			if verdict != nil {
				return
			}
			// Like the server, read the body to its end; after a body
			// that fails, the server goes on reading the next request
			// where the body's reader stopped.
			io.Copy(io.Discard, req.Body)
		}
	})
}
