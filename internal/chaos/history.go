// Package chaos is reserve's reliability campaign: seeded runs of real
// reserved and reservectl processes under faults (SIGKILL at random moments
// and at named failpoints, a lossy proxy, a full disk, clock jumps, killed
// PostgreSQL backends), each followed by checks of the recorded history and
// of the store against what the service promises. cmd/reservechaos is its
// command; docs/reliability.md describes it.
//
// It drives the daemon only from outside, through its binaries, its HTTP
// API and its stores opened read-only after the daemons stopped; it must
// not import the server or the command trees.
package chaos

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// Role says what an operation of the history is for.
type Role string

// The roles of operations.
const (
	// Intent is one business intent under its own key, from its first
	// send to its authoritative answer, however often it was sent.
	Intent Role = "intent"
	// Replay repeats a settled intent's key and payload: its answer must
	// be the intent's first answer, byte for byte.
	Replay Role = "replay"
	// Conflict sends a settled intent's key with another payload: its
	// answer must be 409 operation_conflict, and nothing may change.
	Conflict Role = "conflict"
	// Refused is an item of an atomic batch refused as a whole: nothing
	// was stored for it, and its answer (Code, Body) says why: its own
	// problem, or batch_refused with a detail that says whether it had
	// too few places, could have been reserved, or was not decided.
	Refused Role = "refused"
)

// Op is one operation of a history.
type Op struct {
	// Client numbers the client that sent it (for porcupine).
	Client int
	Actor  string
	Role   Role
	Kind   engine.OperationKind
	Key    engine.OperationKey
	// Workshop is the workshop the operation is about: the request's, or
	// for a cancel, confirm or release, that of the reservation or hold
	// it names (Target).
	Workshop string
	Quantity int
	TTL      int
	// Waitlist marks a reservation request that joins the waiting list
	// when it cannot be reserved.
	Waitlist bool
	Target   string
	// Via names the front end that sent it: go, browser, cli, batch,
	// atomic, import.
	Via string
	// Batch numbers, from 1, the decision of an atomic batch the
	// operation is an item of (0 for none), and Item is its place in the
	// batch: the items of one decision share Batch, and a refused batch
	// sent again later is another decision with another number.
	Batch, Item int
	// Call and Return are the moments of the first send and of the
	// authoritative answer, since the run began; Return is negative for
	// an operation that never got one.
	Call, Return time.Duration
	// Epoch numbers the clock jumps before the operation: no operation
	// is in flight across a jump.
	Epoch int
	// Status and Body are the authoritative answer as it came; Code is
	// the problem's code when the answer was a decided problem.
	Status int
	Body   []byte
	Code   string
	// Unclear counts the sends of the operation that got no
	// authoritative answer and were sent again.
	Unclear int
	// Others are the bodies of further authoritative answers to the same
	// sends (concurrent identical sends, duplicated requests), each of
	// which must equal Body.
	Others [][]byte
}

// Answered reports whether the operation got an authoritative answer.
func (op *Op) Answered() bool { return op.Return >= 0 }

// Answer decodes the operation's authoritative answer; ok is false when it
// was no answer of the operation's kind (a problem, or nothing).
func (op *Op) Answer() (a engine.Answer, ok bool) {
	if !op.Answered() || op.Code != "" {
		return engine.Answer{}, false
	}
	a, err := engine.DecodeAnswer(op.Kind, op.Body)
	return a, err == nil
}

// History records the operations of one run; it is safe for concurrent
// use.
type History struct {
	mu    sync.Mutex
	start time.Time
	ops   []*Op
	epoch int
	batch int
}

// NewHistory starts a history now.
func NewHistory() *History { return &History{start: time.Now()} }

// Now is the moment since the history began.
func (h *History) Now() time.Duration { return time.Since(h.start) }

// Epoch returns the current clock epoch.
func (h *History) Epoch() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.epoch
}

// Jump starts the next clock epoch; the caller ensures that no operation
// is in flight.
func (h *History) Jump() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.epoch++
}

// NextBatch returns the number of the next decision of an atomic batch.
func (h *History) NextBatch() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.batch++
	return h.batch
}

// Add records op, which its caller no longer changes.
func (h *History) Add(op *Op) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, op)
}

// Ops returns the operations recorded so far.
func (h *History) Ops() []*Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*Op(nil), h.ops...)
}

// newRand returns the generator of stream of a seed.
func newRand(seed, stream uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, stream)) }
