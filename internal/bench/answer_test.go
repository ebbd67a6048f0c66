package bench

import (
	"bufio"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestReadAnswer(t *testing.T) {
	const created = `{"status":"reserved","reservation_id":"r1","workshop":"w","quantity":1}`
	// Two answers on one keep-alive connection, the first as net/http
	// writes it, the second with the liberties HTTP allows.
	br := bufio.NewReader(strings.NewReader("HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nIdempotent-Replayed: false\r\n" +
		"Date: Mon, 30 Nov 2026 04:00:00 GMT\r\nContent-Length: " + strconv.Itoa(len(created)) + "\r\n\r\n" + created +
		"HTTP/1.1 409 Conflict\ncontent-type:  Application/Problem+JSON; charset=utf-8\nidempotent-replayed: true\n" +
		"connection: Close\ncontent-length: 2\n\n{}"))
	a, err := readAnswer(br, maxAnswerBytes)
	if err != nil || a.status != 201 || a.mediaType != "application/json" || a.replayed || a.close || string(a.body) != created {
		t.Fatalf("first answer = %+v, %v", a, err)
	}
	a, err = readAnswer(br, maxAnswerBytes)
	if err != nil || a.status != 409 || a.mediaType != "application/problem+json" || !a.replayed || !a.close || string(a.body) != "{}" {
		t.Fatalf("second answer = %+v, %v", a, err)
	}
	for value, want := range map[string]time.Duration{
		"1": time.Second, "3600": maxRetryAfter, "0": 0, "-1": 0, "+1": 0, "Wed, 21 Oct 2026 07:28:00 GMT": 0,
	} {
		a, err = readAnswer(bufio.NewReader(strings.NewReader("HTTP/1.1 503 Service Unavailable\r\nRetry-After: "+value+"\r\nContent-Length: 0\r\n\r\n")), maxAnswerBytes)
		if err != nil || a.status != 503 || a.retryAfter != want {
			t.Errorf("Retry-After: %s read as %+v, %v; want %v", value, a, err, want)
		}
	}
	a, err = readAnswer(bufio.NewReader(strings.NewReader("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n")), maxAnswerBytes)
	if err != nil || !a.close {
		t.Fatalf("HTTP/1.0 answer = %+v, %v; want one that closes the connection", a, err)
	}

	for name, raw := range map[string]string{
		"empty":             "",
		"status line only":  "HTTP/1.1 201 Created\r\n",
		"not HTTP":          "SSH-2.0-OpenSSH\r\n\r\n",
		"short status":      "HTTP/1.1 20 Created\r\nContent-Length: 0\r\n\r\n",
		"informational":     "HTTP/1.1 100 Continue\r\n\r\n",
		"chunked":           "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
		"no length":         "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n\r\n{}",
		"bad length":        "HTTP/1.1 201 Created\r\nContent-Length: two\r\n\r\n{}",
		"negative length":   "HTTP/1.1 201 Created\r\nContent-Length: -2\r\n\r\n{}",
		"signed length":     "HTTP/1.1 201 Created\r\nContent-Length: +2\r\n\r\n{}",
		"two lengths":       "HTTP/1.1 201 Created\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}x",
		"too long":          "HTTP/1.1 201 Created\r\nContent-Length: 65537\r\n\r\n{}",
		"short body":        "HTTP/1.1 201 Created\r\nContent-Length: 10\r\n\r\n{}",
		"header sans colon": "HTTP/1.1 201 Created\r\nContent-Length 2\r\n\r\n{}",
		"huge header":       "HTTP/1.1 201 Created\r\nX: " + strings.Repeat("x", 5000) + "\r\nContent-Length: 2\r\n\r\n{}",
	} {
		if a, err := readAnswer(bufio.NewReader(strings.NewReader(raw)), maxAnswerBytes); err == nil {
			t.Errorf("%s: read as %+v, want an error", name, a)
		}
	}
}
