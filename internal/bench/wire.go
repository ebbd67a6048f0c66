package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
)

// maxAnswerBytes bounds how much of an answer the bench reads.
const maxAnswerBytes = 64 << 10

// wire is one bench client's own keep-alive HTTP/1.1 connection. It writes
// a reservation request from preformatted bytes and reads the answer with
// readAnswer, without the goroutines and channels of http.Client,
// so that the load generator, which shares the machine with the daemon,
// spends as little CPU per request as it can. A broken connection is
// redialled on the next request.
type wire struct {
	dial   func(ctx context.Context) (net.Conn, error)
	prefix []byte // Request line and the headers before Idempotency-Key.
	body   []byte // The JSON payload, the same for every request.
	op     client.Operation

	conn net.Conn
	br   *bufio.Reader
	buf  []byte
	// retryAfter is the Retry-After of the last answer, zero without one.
	retryAfter time.Duration
}

func newWire(dial func(ctx context.Context) (net.Conn, error), host, token string, req engine.Request) *wire {
	body, _ := json.Marshal(req) // A string and an int always encode.
	prefix := "POST " + api.PathReservations + " HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: " + api.MediaJSON + "\r\n"
	if token != "" {
		prefix += "Authorization: Bearer " + token + "\r\n"
	}
	prefix += "Content-Length: " + strconv.Itoa(len(body)) + "\r\n"
	return &wire{dial: dial, prefix: []byte(prefix), body: body, op: client.Reserving(req)}
}

// reserve sends the reservation for key and returns like client.Send: the
// classified answer, or the error of no answer at all (transport failure,
// an answer it cannot read). After an answer that is neither the
// operation's answer nor a problem the connection is closed.
func (w *wire) reserve(ctx context.Context, key engine.OperationKey, timeout time.Duration) (res client.Result, err error) {
	w.retryAfter = 0
	if w.conn == nil {
		dctx, cancel := context.WithTimeout(ctx, timeout)
		w.conn, err = w.dial(dctx)
		cancel()
		if err != nil {
			return res, fmt.Errorf("connect: %w", err)
		}
		w.br = bufio.NewReader(w.conn)
	}
	defer func() {
		if (err != nil || (res.Answer.Status == "" && res.Problem == nil)) && w.conn != nil {
			w.conn.Close()
			w.conn = nil
		}
	}()
	w.conn.SetDeadline(time.Now().Add(timeout))
	w.buf = append(append(append(append(w.buf[:0], w.prefix...), api.HeaderIdempotencyKey+": "...), key...), "\r\n\r\n"...)
	w.buf = append(w.buf, w.body...)
	if _, err := w.conn.Write(w.buf); err != nil {
		return res, fmt.Errorf("send: %w", err)
	}
	a, err := readAnswer(w.br)
	w.retryAfter = a.retryAfter
	if err != nil {
		return res, fmt.Errorf("read answer: %w", err)
	}
	if a.close {
		w.conn.Close()
		w.conn = nil
	}
	return client.Classify(w.op, client.Reply{Status: a.status, ContentType: a.mediaType, Replayed: a.replayed, Body: a.body}), nil
}
