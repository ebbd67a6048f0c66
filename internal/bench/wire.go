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

// maxAnswerBytes bounds how much of an answer to a reservation the bench
// reads, maxBatchAnswerBytes of an answer to a batch (up to
// engine.MaxBatchItems results).
const (
	maxAnswerBytes      = 64 << 10
	maxBatchAnswerBytes = 1 << 20
)

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
	// batchPrefix is the request line and the headers of a batch before
	// its Content-Length.
	batchPrefix []byte
	op          client.Operation

	conn net.Conn
	br   *bufio.Reader
	buf  []byte
	// retryAfter is the Retry-After of the last answer, zero without one.
	retryAfter time.Duration
	// rateLimited says that the last answer was 429 rate_limited.
	rateLimited bool
}

func newWire(dial func(ctx context.Context) (net.Conn, error), host, token string, req engine.Request) *wire {
	body, _ := json.Marshal(req) // A string and an int always encode.
	headers := " HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: " + api.MediaJSON + "\r\n"
	if token != "" {
		headers += "Authorization: Bearer " + token + "\r\n"
	}
	prefix := "POST " + api.PathReservations + headers + "Content-Length: " + strconv.Itoa(len(body)) + "\r\n"
	return &wire{dial: dial, prefix: []byte(prefix), body: body, op: client.Reserving(req), batchPrefix: []byte("POST " + api.PathBatches + headers)}
}

// reserve sends the reservation for key and returns like client.Send: the
// classified answer, or the error of no answer at all (transport failure,
// an answer it cannot read). After an answer that is neither the
// operation's answer nor a problem the connection is closed.
func (w *wire) reserve(ctx context.Context, key engine.OperationKey, timeout time.Duration) (client.Result, error) {
	w.buf = append(append(append(append(w.buf[:0], w.prefix...), api.HeaderIdempotencyKey+": "...), key...), "\r\n\r\n"...)
	w.buf = append(w.buf, w.body...)
	a, err := w.roundTrip(ctx, timeout, maxAnswerBytes)
	if err != nil {
		return client.Result{}, err
	}
	res := client.Classify(w.op, client.Reply{Status: a.status, ContentType: a.mediaType, Replayed: a.replayed, Body: a.body})
	if res.Answer.Status == "" && res.Problem == nil {
		w.hangUp()
	}
	w.rateLimited = isRateLimited(res.Problem)
	return res, nil
}

// batch sends items as one non-atomic batch and returns like
// client.ReserveBatch. After an answer that is neither the batch's answer
// nor a problem the connection is closed.
func (w *wire) batch(ctx context.Context, items []client.BatchItem, timeout time.Duration) (client.BatchReply, error) {
	payload, err := client.EncodeBatch(items, false)
	if err != nil {
		return client.BatchReply{}, err
	}
	w.buf = append(append(w.buf[:0], w.batchPrefix...), "Content-Length: "...)
	w.buf = append(strconv.AppendInt(w.buf, int64(len(payload)), 10), "\r\n\r\n"...)
	w.buf = append(w.buf, payload...)
	a, err := w.roundTrip(ctx, timeout, maxBatchAnswerBytes)
	if err != nil {
		return client.BatchReply{}, err
	}
	reply := client.ClassifyBatch(items, client.Reply{Status: a.status, ContentType: a.mediaType, Replayed: a.replayed, Body: a.body})
	if reply.Items == nil && reply.Problem == nil {
		w.hangUp()
	}
	w.rateLimited = isRateLimited(reply.Problem)
	return reply, nil
}

// roundTrip writes the request in w.buf on the connection, dialled first if
// there is none, and reads its answer of at most limit bytes. A failure
// closes the connection.
func (w *wire) roundTrip(ctx context.Context, timeout time.Duration, limit int) (answer, error) {
	w.retryAfter, w.rateLimited = 0, false
	if w.conn == nil {
		dctx, cancel := context.WithTimeout(ctx, timeout)
		conn, err := w.dial(dctx)
		cancel()
		if err != nil {
			return answer{}, fmt.Errorf("connect: %w", err)
		}
		w.conn, w.br = conn, bufio.NewReader(conn)
	}
	w.conn.SetDeadline(time.Now().Add(timeout))
	if _, err := w.conn.Write(w.buf); err != nil {
		w.hangUp()
		return answer{}, fmt.Errorf("send: %w", err)
	}
	a, err := readAnswer(w.br, limit)
	w.retryAfter = a.retryAfter
	if err != nil {
		w.hangUp()
		return a, fmt.Errorf("read answer: %w", err)
	}
	if a.close {
		w.hangUp()
	}
	return a, nil
}

// isRateLimited reports whether p is the problem 429 rate_limited.
func isRateLimited(p *engine.Error) bool { return p != nil && p.Code == api.CodeRateLimited }

// hangUp closes the connection; the next request dials a new one.
func (w *wire) hangUp() {
	if w.conn != nil {
		w.conn.Close()
		w.conn = nil
	}
}
