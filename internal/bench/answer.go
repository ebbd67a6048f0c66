package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/reserve/reserve/internal/api"
)

// answer is what the bench needs of an HTTP/1.1 response.
type answer struct {
	status    int
	mediaType string // Content-Type without parameters, in lower case.
	replayed  bool   // Idempotent-Replayed: true.
	close     bool   // The server closes the connection after it.
	// retryAfter is a Retry-After in seconds, at most maxRetryAfter; zero
	// when the answer has none (or one in the HTTP-date form).
	retryAfter time.Duration
	body       []byte
}

// readAnswer reads one HTTP/1.1 response to a POST from br: the status
// line, the headers the bench looks at, and a body of Content-Length bytes
// (at most limit). It keeps no header map and copies little more
// than the body, unlike http.ReadResponse, because the load generator shares the
// machine's CPUs with the daemon it measures. A response it does not
// understand (chunked, without a length, informational) is an error, which
// the bench counts as an unclear answer; the daemon sends none of them.
func readAnswer(br *bufio.Reader, limit int) (answer, error) {
	var a answer
	line, err := readLine(br)
	if err != nil {
		return a, err
	}
	proto, rest, _ := bytes.Cut(line, []byte(" "))
	code, _, _ := bytes.Cut(rest, []byte(" "))
	if !bytes.HasPrefix(proto, []byte("HTTP/1.")) || len(code) != 3 {
		return a, fmt.Errorf("malformed status line %q", line)
	}
	if a.status, err = strconv.Atoi(string(code)); err != nil || a.status < 200 {
		return a, fmt.Errorf("status line %q: not a final status", line)
	}
	a.close = string(proto) == "HTTP/1.0"
	length := -1
	for {
		if line, err = readLine(br); err != nil {
			return a, err
		}
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return a, fmt.Errorf("malformed header line %q", line)
		}
		value = bytes.TrimSpace(value)
		switch {
		case headerIs(name, "Content-Length"):
			n, err := strconv.Atoi(string(value))
			if err != nil || n < 0 || value[0] == '+' || (length >= 0 && n != length) {
				return a, fmt.Errorf("bad Content-Length %q", value)
			}
			length = n
		case headerIs(name, "Content-Type"):
			mt, _, _ := bytes.Cut(value, []byte(";"))
			a.mediaType = string(bytes.ToLower(bytes.TrimSpace(mt)))
		case headerIs(name, api.HeaderReplayed):
			a.replayed = string(value) == "true"
		case headerIs(name, "Retry-After"):
			if n, err := strconv.Atoi(string(value)); err == nil && n > 0 && value[0] != '+' {
				a.retryAfter = min(time.Duration(n)*time.Second, maxRetryAfter)
			}
		case headerIs(name, "Connection"):
			a.close = a.close || bytes.EqualFold(value, []byte("close"))
		case headerIs(name, "Transfer-Encoding"):
			return a, fmt.Errorf("unsupported Transfer-Encoding %q", value)
		}
	}
	if length < 0 {
		return a, errors.New("answer without Content-Length")
	}
	if length > limit {
		return a, fmt.Errorf("answer of %d bytes, more than %d", length, limit)
	}
	a.body = make([]byte, length)
	if _, err := io.ReadFull(br, a.body); err != nil {
		return a, fmt.Errorf("answer body: %w", err)
	}
	return a, nil
}

// readLine reads one header or status line without its line break.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return nil, errors.New("answer line too long")
	}
	if err != nil {
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// headerIs reports whether the header name is want, ignoring case.
func headerIs(name []byte, want string) bool {
	return bytes.EqualFold(name, []byte(want))
}
