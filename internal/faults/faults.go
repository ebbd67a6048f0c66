// Package faults is the daemon's fault injection, for tests only: a store
// decorator that makes receipt writes fail inside their transaction and an
// HTTP middleware that garbles or holds the committed answers of idempotent
// operations. The daemon installs both only when started with
// --enable-fault-injection; without it, no code of this package runs.
package faults

import (
	"context"
	"log/slog"
	"mime"
	"net/http"
	"sync"
	"time"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// HoldingMessage is logged, with the operation key, when a delay_response
// fault starts to hold a committed answer.
const HoldingMessage = "fault injection: holding a committed answer"

// ErrReceiptWrite is the error an armed fail_receipt_write fault raises
// inside the transaction.
var ErrReceiptWrite = engine.Errorf(engine.CodeInternal, "injected fault: receipt write failed")

// Injector holds the armed faults. It is safe for concurrent use.
type Injector struct {
	log      *slog.Logger
	release  chan struct{}
	released sync.Once

	mu       sync.Mutex
	receipts int // Write transactions whose receipt writes fail.
	garble   int
	delays   int
	delay    time.Duration
}

// New returns an Injector with nothing armed that logs to log.
func New(log *slog.Logger) *Injector {
	return &Injector{log: log, release: make(chan struct{})}
}

// Arm arms f, which api.DecodeFault accepted.
func (in *Injector) Arm(f api.Fault) {
	in.mu.Lock()
	defer in.mu.Unlock()
	switch f.Fault {
	case api.FaultFailReceiptWrite:
		in.receipts += f.Count
	case api.FaultGarbleResponse:
		in.garble += f.Count
	case api.FaultDelayResponse:
		in.delays += f.Count
		in.delay = time.Duration(f.DelayMS) * time.Millisecond
	}
}

// Release lets every held answer go now and makes later delays end at once
// (the server calls it when it shuts down).
func (in *Injector) Release() { in.released.Do(func() { close(in.release) }) }

// take consumes one armed fault of *n.
func (in *Injector) take(n *int) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if *n <= 0 {
		return false
	}
	*n--
	return true
}

// Store returns s with the receipt-write fault: every write transaction
// (one Update call) that stores a receipt while the fault is armed consumes
// one count and fails at its receipt write, so it rolls back. The decision
// is made at the first receipt write of the call and kept when the store
// runs the transaction again, so a fault armed with count n fails exactly
// n operations.
func (in *Injector) Store(s engine.Store) engine.Store { return &store{Store: s, in: in} }

type store struct {
	engine.Store
	in *Injector
}

func (s *store) Update(ctx context.Context, fn func(engine.Tx) error) error {
	decided, fail := false, false
	failNow := func() bool {
		if !decided {
			fail, decided = s.in.take(&s.in.receipts), true
		}
		return fail
	}
	return s.Store.Update(ctx, func(tx engine.Tx) error { return fn(failingTx{Tx: tx, fail: failNow}) })
}

type failingTx struct {
	engine.Tx
	fail func() bool
}

func (t failingTx) PutReceipt(r engine.Receipt) error {
	if t.fail() {
		return ErrReceiptWrite
	}
	return t.Tx.PutReceipt(r)
}

// Answers returns next with the answer faults. They shape only the answers
// of idempotent operations that decided something, the responses that carry
// the Idempotent-Replayed header with a JSON body (refusals are problem
// details), and the JSON answers of batches (also the 409 of a refused
// atomic batch, which stored nothing): a delay holds the answer after the
// decision, until the client gives up or Release; a garble sends a 200
// whose body is half the answer and then not JSON.
func (in *Injector) Answers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&answerWriter{ResponseWriter: w, r: r, in: in}, r)
	})
}

// answerWriter applies the answer faults when the answer's header is
// written.
type answerWriter struct {
	http.ResponseWriter
	r       *http.Request
	in      *Injector
	decided bool
	garble  bool // Write the body garbled.
	drop    bool // Write nothing: the client gave up on a held answer.
}

func (w *answerWriter) WriteHeader(status int) {
	if w.decided {
		w.ResponseWriter.WriteHeader(status)
		return
	}
	w.decided = true
	h := w.Header()
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	idempotent := h.Get(api.HeaderReplayed) != "" || (w.r.Method == http.MethodPost && w.r.URL.Path == api.PathBatches)
	if !idempotent || mt != api.MediaJSON {
		w.ResponseWriter.WriteHeader(status)
		return
	}
	key, _ := api.ParseOperationKey(w.r.Header.Get(api.HeaderIdempotencyKey))
	if w.in.take(&w.in.delays) {
		w.in.mu.Lock()
		delay := w.in.delay
		w.in.mu.Unlock()
		w.in.log.Warn(HoldingMessage, slog.String("operation", string(key)), slog.Duration("delay", delay))
		// The held answer may take longer than the listener's write
		// timeout allows an answer.
		http.NewResponseController(w.ResponseWriter).SetWriteDeadline(time.Now().Add(delay + time.Minute))
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-w.r.Context().Done():
			w.drop = true
			return
		case <-w.in.release:
		}
	}
	if w.in.take(&w.in.garble) {
		w.in.log.Warn("fault injection: garbling a committed answer", slog.String("operation", string(key)))
		w.garble = true
		h.Del("Content-Length")
		status = http.StatusOK
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *answerWriter) Write(b []byte) (int, error) {
	if !w.decided {
		w.WriteHeader(http.StatusOK)
	}
	switch {
	case w.drop:
		return len(b), nil
	case w.garble:
		w.garble, w.drop = false, true
		if _, err := w.ResponseWriter.Write(append(b[:len(b)/2:len(b)/2], "<garbled by fault injection>"...)); err != nil {
			return 0, err
		}
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *answerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
