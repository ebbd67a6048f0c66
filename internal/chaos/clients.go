package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
)

// intentTimeout bounds how long one intent may stay without an
// authoritative answer, across restarts and faults; an intent still open
// then is a violation (unsettled).
const intentTimeout = 90 * time.Second

// sendTimeout bounds one send of a Go client.
const sendTimeout = 5 * time.Second

// actorClient is one actor of a run: a Go program with the real client and
// its retry rule, or the model of a browser page. It owns the intents it
// made and what they left it to act on.
type actorClient struct {
	r       *run
	id      int
	actor   string
	via     string // "go" or "browser"
	rng     *rand.Rand
	cs      []*client.Client // Direct and proxied clients of every daemon.
	settled []*Op
	active  []*Op // Its reservations not yet cancelled (reserve intents answered reserved).
	holds   []*Op // Its holds not yet confirmed or released.
	// session is the browser model's sessionStorage: the open intent,
	// kept from before its first send until its authoritative answer.
	session map[string]*Op
	// refused are atomic batches refused as a whole, to be sent again.
	refused [][]client.BatchItem
	// answered are the offers from waiting lists the client confirmed or
	// released, and waiting its intents answered "waiting".
	answered map[string]bool
	waiting  []*Op
}

// newKey returns a new operation key drawn from the client's generator, so
// a seed names its keys too.
func (c *actorClient) newKey() engine.OperationKey {
	var b [16]byte
	for i := range b {
		b[i] = byte(c.rng.Uint32())
	}
	u, _ := uuid.FromBytes(b[:])
	u[6] = (u[6] & 0x0f) | 0x40
	u[8] = (u[8] & 0x3f) | 0x80
	return engine.OperationKey(u.String())
}

func (c *actorClient) pick() *client.Client { return c.cs[c.rng.IntN(len(c.cs))] }

// runIntents makes n intents, one after another.
func (c *actorClient) runIntents(n int) {
	for range n {
		c.next()
	}
}

// next makes one intent, chosen by the client's generator.
func (c *actorClient) next() {
	r := c.r
	if len(r.waitlisted) > 0 && c.rng.IntN(5) == 0 {
		c.waitlistStep()
		return
	}
	w := r.workshops[c.rng.IntN(len(r.workshops))]
	q := 1 + c.rng.IntN(r.maxQuantity)
	switch n := c.rng.IntN(100); {
	case n >= 90 && c.via == "go" && len(c.refused) > 0 && c.rng.IntN(3) == 0:
		c.resend()
	case n >= 90 && c.via == "go":
		c.atomicBatch()
	case n < 10 && len(c.active) > 0:
		c.cancel(c.rng.IntN(len(c.active)))
	case n < 22:
		c.intent(engine.OperationHold, client.Holding(engine.HoldRequest{Workshop: w, Quantity: q, TTLSeconds: 600 + c.rng.IntN(3000)}), w, q, "")
	case n < 32 && len(c.holds) > 0:
		i := c.rng.IntN(len(c.holds))
		h := c.holds[i]
		c.holds = append(c.holds[:i], c.holds[i+1:]...)
		a, _ := h.Answer()
		if c.rng.IntN(2) == 0 {
			c.intent(engine.OperationConfirm, client.Confirming(a.HoldID), h.Workshop, h.Quantity, a.HoldID)
		} else {
			c.intent(engine.OperationRelease, client.Releasing(a.HoldID), h.Workshop, h.Quantity, a.HoldID)
		}
	case n < 40 && c.via == "go":
		c.batch()
	case n < 48 && len(c.settled) > 0:
		c.repeat(c.settled[c.rng.IntN(len(c.settled))], Replay)
	case n < 52 && len(c.settled) > 0:
		c.repeat(c.settled[c.rng.IntN(len(c.settled))], Conflict)
	case n < 56 && c.via == "go":
		c.concurrent(w, q)
	case n < 59:
		if k, req, ok := r.borrowKey(c.actor); ok {
			c.intentWithKey(k, engine.OperationReserve, client.Reserving(req), req.Workshop, req.Quantity, "", false)
			return
		}
		fallthrough
	default:
		c.intent(engine.OperationReserve, client.Reserving(engine.Request{Workshop: w, Quantity: q}), w, q, "")
	}
}

// cancel cancels the client's active reservation i.
func (c *actorClient) cancel(i int) {
	res := c.active[i]
	c.active = append(c.active[:i], c.active[i+1:]...)
	a, _ := res.Answer()
	c.intent(engine.OperationCancel, client.Cancelling(a.ReservationID), res.Workshop, 0, a.ReservationID)
}

// intent makes one intent of kind under a new key and records it.
func (c *actorClient) intent(kind engine.OperationKind, op client.Operation, workshop string, q int, target string) {
	c.intentWithKey(c.newKey(), kind, op, workshop, q, target, true)
}

// intentWithKey makes one intent under key; lend says whether the key is
// the client's own, which other actors may then send as theirs (a key
// borrowed from another actor is not lent again, so no actor ever sends
// a key it used before as a new intent).
func (c *actorClient) intentWithKey(key engine.OperationKey, kind engine.OperationKind, op client.Operation, workshop string, q int, target string, lend bool) {
	h := c.r.h
	rec := &Op{Client: c.id, Actor: c.actor, Role: Intent, Kind: kind, Key: key, Workshop: workshop, Quantity: q, TTL: op.TTLSeconds,
		Waitlist: op.Request.Waitlist, Target: target, Via: c.via, Call: h.Now(), Epoch: h.Epoch()}
	if c.session != nil {
		c.session[c.actor] = rec // Kept before the first send.
	}
	c.settle(rec, op)
	if c.session != nil && rec.Answered() {
		delete(c.session, c.actor) // Cleared only by an authoritative answer.
	}
	h.Add(rec)
	c.learn(rec, lend)
}

// learn remembers what a settled intent leaves the client to act on, and
// lends its key to other actors if lend.
func (c *actorClient) learn(rec *Op, lend bool) {
	a, ok := rec.Answer()
	if !ok {
		return
	}
	c.settled = append(c.settled, rec)
	switch {
	case a.Status == engine.StatusReserved:
		c.active = append(c.active, rec)
		if lend && rec.Kind == engine.OperationReserve {
			c.r.lendKey(c.actor, rec.Key, engine.Request{Workshop: rec.Workshop, Quantity: rec.Quantity})
		}
	case a.Status == engine.StatusHeld:
		c.holds = append(c.holds, rec)
	case a.Status == engine.StatusWaiting:
		c.waiting = append(c.waiting, rec)
	}
}

// settle sends op under rec's key until it gets an authoritative answer,
// by the rule of every Go client (client.Classify): an undecided answer
// or none is sent again with the same key after a small random pause, or
// after the answer's Retry-After when that is longer. The browser model
// also abandons a send now and then, as a reload of the page does, and
// resends the intent it kept.
func (c *actorClient) settle(rec *Op, op client.Operation) {
	h := c.r.h
	deadline := time.Now().Add(intentTimeout)
	for {
		timeout := sendTimeout
		if c.via == "browser" && c.rng.IntN(6) == 0 {
			timeout = time.Duration(1+c.rng.IntN(20)) * time.Millisecond // A reload.
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		res, err := c.pick().Send(ctx, rec.Key, op)
		cancel()
		c.r.sends.Add(1)
		if err == nil && res.Decided {
			rec.answered(h.Now(), res)
			c.r.answers.Add(1)
			return
		}
		rec.Unclear++
		if time.Now().After(deadline) {
			rec.Return = -1
			return
		}
		wait := time.Duration(1+c.rng.IntN(20)) * time.Millisecond
		if err == nil && res.RetryAfter > wait {
			wait = res.RetryAfter
		}
		time.Sleep(wait)
	}
}

// repeat sends a settled intent's key again: with its own payload (a
// replay, which must get the first answer byte for byte) or with another
// quantity (which must be refused as a conflict).
func (c *actorClient) repeat(first *Op, role Role) {
	op := operationOf(first)
	if role == Conflict {
		if first.Kind != engine.OperationReserve && first.Kind != engine.OperationHold {
			return
		}
		op.Request.Workshop, op.Request.Quantity = c.r.conflictingPayload(first)
	}
	h := c.r.h
	rec := &Op{Client: c.id, Actor: c.actor, Role: role, Kind: first.Kind, Key: first.Key, Workshop: first.Workshop, Quantity: op.Request.Quantity,
		Waitlist: first.Waitlist, Target: first.Target, Via: c.via, Call: h.Now(), Epoch: h.Epoch()}
	c.settle(rec, op)
	h.Add(rec)
}

// conflictingPayload is a payload other than first's: one more place
// (after the maximum, one), and with a maximum of one another workshop.
func (r *run) conflictingPayload(first *Op) (workshop string, quantity int) {
	quantity = first.Quantity%r.maxQuantity + 1
	if quantity == first.Quantity {
		return otherWorkshop(r.workshops, first.Workshop), quantity
	}
	return first.Workshop, quantity
}

// operationOf is the client operation that sends rec's intent.
func operationOf(rec *Op) client.Operation {
	switch rec.Kind {
	case engine.OperationCancel:
		return client.Cancelling(rec.Target)
	case engine.OperationConfirm:
		return client.Confirming(rec.Target)
	case engine.OperationRelease:
		return client.Releasing(rec.Target)
	case engine.OperationLeaveWaitlist:
		return client.LeavingWaitlist(rec.Target)
	case engine.OperationHold:
		return client.Holding(engine.HoldRequest{Workshop: rec.Workshop, Quantity: rec.Quantity, TTLSeconds: rec.TTL})
	}
	return client.Reserving(engine.Request{Workshop: rec.Workshop, Quantity: rec.Quantity, Waitlist: rec.Waitlist})
}

func otherWorkshop(ws []string, w string) string {
	for _, o := range ws {
		if o != w {
			return o
		}
	}
	return w
}

// concurrent sends one new reservation intent three times at once, as a
// double-clicking user or a retrying proxy does: all three must get the
// same answer and make one reservation.
func (c *actorClient) concurrent(w string, q int) {
	h := c.r.h
	key := c.newKey()
	op := client.Reserving(engine.Request{Workshop: w, Quantity: q})
	recs := make([]*Op, 3)
	var wg sync.WaitGroup
	for i := range recs {
		recs[i] = &Op{Client: c.id, Actor: c.actor, Role: Intent, Kind: engine.OperationReserve, Key: key, Workshop: w, Quantity: q, Via: c.via, Call: h.Now(), Epoch: h.Epoch()}
		sub := &actorClient{r: c.r, id: c.id, actor: c.actor, via: c.via, rng: rand.New(rand.NewPCG(c.rng.Uint64(), uint64(i))), cs: c.cs}
		wg.Go(func() { sub.settle(recs[i], op) })
	}
	wg.Wait()
	merged := recs[0]
	for _, o := range recs[1:] {
		merged.Call = min(merged.Call, o.Call)
		merged.Unclear += o.Unclear
		if !o.Answered() || !merged.Answered() {
			merged.Return = -1
			continue
		}
		merged.Return = max(merged.Return, o.Return)
		merged.Others = append(merged.Others, o.Body)
	}
	h.Add(merged)
	c.learn(merged, true)
}

// batch sends two to five new reservations as one batch that is not
// atomic, resent as the same batch until every item is decided.
func (c *actorClient) batch() {
	r, h := c.r, c.r.h
	items := make([]client.BatchItem, 2+c.rng.IntN(4))
	recs := make([]*Op, len(items))
	call := h.Now()
	for i := range items {
		w := r.workshops[c.rng.IntN(len(r.workshops))]
		q := 1 + c.rng.IntN(r.maxQuantity)
		items[i] = client.BatchItem{Key: c.newKey(), Request: engine.Request{Workshop: w, Quantity: q}}
		recs[i] = &Op{Client: c.id, Actor: c.actor, Role: Intent, Kind: engine.OperationReserve, Key: items[i].Key, Workshop: w, Quantity: q, Via: "batch", Call: call, Epoch: h.Epoch(), Return: -1}
	}
	reply, ret, unclear, decided := c.sendBatch(items, false)
	for i, rec := range recs {
		rec.Unclear = unclear
		if decided {
			rec.answered(ret, reply.Items[i])
		}
		h.Add(rec)
		c.learn(rec, true)
	}
}

// sendBatch sends items as one batch, atomic or not, until it is decided,
// by the rule of every Go client: an undecided answer (or none, or an
// answer that leaves an item of a batch that is not atomic undecided) is
// sent again as the same batch, the same items under the same keys, after
// a small random pause or the answer's Retry-After when that is longer.
// An atomic batch refused as a whole is decided: its items that the
// refusal left open are decided afresh only by another send of the batch,
// which is another decision. It returns the deciding answer and when it
// came, the sends that decided nothing, and whether the batch was decided
// before intentTimeout.
func (c *actorClient) sendBatch(items []client.BatchItem, atomic bool) (reply client.BatchReply, ret time.Duration, unclear int, decided bool) {
	r := c.r
	deadline := time.Now().Add(intentTimeout)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
		reply, err := c.pick().ReserveBatch(ctx, items, atomic)
		cancel()
		r.sends.Add(1)
		decided := err == nil && reply.Decided && len(reply.Items) == len(items)
		for _, it := range reply.Items {
			decided = decided && (it.Decided || reply.Refused)
		}
		if decided {
			r.answers.Add(1)
			return reply, r.h.Now(), unclear, true
		}
		unclear++
		wait := time.Duration(1+c.rng.IntN(20)) * time.Millisecond
		if err == nil && reply.RetryAfter > wait {
			wait = reply.RetryAfter
		}
		time.Sleep(wait)
	}
	return client.BatchReply{}, 0, unclear, false
}

// answered records an item's result as rec's answer, which came at ret.
func (rec *Op) answered(ret time.Duration, it client.Result) {
	rec.Return, rec.Status, rec.Body = ret, it.Status, it.Body
	if it.Problem != nil {
		rec.Code = it.Problem.Code
	}
}

// atomicBatch sends two to five new reservations as one atomic batch. Its
// items share one or two workshops, so that they compete for places, each
// mostly one of the atomic batches' own workshops (atomicWorkshops) and
// now and then one that all clients share; a quarter of the batches ask
// for the most places in every item, so that they often cannot fit; one
// batch in five has an item that no places make reservable: a quantity
// of 0 (refused as the batch is read), one above the workshops' maximum, a
// workshop that does not exist, or the key of one of the client's settled
// reservation intents with another payload; and one in ten has an item
// twice, under the same key: with the same payload (one operation, the
// later item replays the earlier one's answer) or with another (the later
// item is a conflict).
func (c *actorClient) atomicBatch() {
	r := c.r
	var ws [2]string
	for i := range ws {
		ws[i] = atomicWorkshops[c.rng.IntN(len(atomicWorkshops))]
		if c.rng.IntN(4) == 0 {
			ws[i] = r.workshops[c.rng.IntN(len(r.workshops))]
		}
	}
	full := c.rng.IntN(4) == 0
	items := make([]client.BatchItem, 2+c.rng.IntN(4))
	for i := range items {
		q := r.maxQuantity
		if !full {
			q = 1 + c.rng.IntN(r.maxQuantity)
		}
		items[i] = client.BatchItem{Key: c.newKey(), Request: engine.Request{Workshop: ws[c.rng.IntN(2)], Quantity: q}}
	}
	i := c.rng.IntN(len(items))
	bad, other := &items[i], &items[(i+1+c.rng.IntN(len(items)-1))%len(items)]
	switch c.rng.IntN(20) {
	case 0:
		bad.Request.Quantity = 0
	case 1:
		bad.Request.Quantity = r.maxQuantity + 1
	case 2:
		bad.Request.Workshop = fmt.Sprintf("gone-%d", c.rng.IntN(3))
	case 3:
		if first := c.settledReservation(); first != nil {
			w, q := r.conflictingPayload(first)
			*bad = client.BatchItem{Key: first.Key, Request: engine.Request{Workshop: w, Quantity: q}}
		}
	case 4:
		*other = *bad
	case 5:
		other.Key = bad.Key
		if other.Request == bad.Request {
			other.Request.Quantity = bad.Request.Quantity%r.maxQuantity + 1
		}
	}
	c.atomic(items)
}

// resend sends the oldest atomic batch the client kept after its refusal
// again, as the same batch, once it has cancelled as many of its own
// reservations in the batch's workshops as the batch asks places there
// (or all it has), as a person who makes room for a booking does.
func (c *actorClient) resend() {
	items := c.refused[0]
	c.refused = c.refused[1:]
	need := map[string]int{}
	for _, it := range items {
		need[it.Request.Workshop] += it.Request.Quantity
	}
	for i := 0; i < len(c.active); {
		if res := c.active[i]; need[res.Workshop] > 0 {
			need[res.Workshop] -= res.effectQuantity()
			c.cancel(i)
			continue
		}
		i++
	}
	c.atomic(items)
}

// settledReservation returns one of the client's settled reservation
// intents, or nil.
func (c *actorClient) settledReservation() *Op {
	var rs []*Op
	for _, op := range c.settled {
		if op.Kind == engine.OperationReserve {
			rs = append(rs, op)
		}
	}
	if len(rs) == 0 {
		return nil
	}
	return rs[c.rng.IntN(len(rs))]
}

// atomic sends items as one atomic batch until it is decided and records
// the decision, one operation per item: answered 200, every item is an
// intent; refused, every item is refused (or a replay, for an item whose
// answer came from an earlier receipt). An item under the key of an
// earlier item of the batch is the same operation: the client learns
// nothing more from it. Half of the batches refused for places only
// (every item batch_refused, none for a problem of its own) are kept, to
// be sent again later as the same batch, which the service decides
// afresh.
func (c *actorClient) atomic(items []client.BatchItem) {
	h := c.r.h
	call, epoch := h.Now(), h.Epoch()
	reply, ret, unclear, decided := c.sendBatch(items, true)
	batch := h.NextBatch()
	forPlaces := decided && reply.Refused
	seen := map[engine.OperationKey]bool{}
	for i, it := range items {
		rec := &Op{Client: c.id, Actor: c.actor, Role: Intent, Kind: engine.OperationReserve, Key: it.Key, Workshop: it.Request.Workshop, Quantity: it.Request.Quantity,
			Via: "atomic", Call: call, Epoch: epoch, Return: -1, Unclear: unclear, Batch: batch, Item: i}
		if decided {
			res := reply.Items[i]
			rec.answered(ret, res)
			switch {
			case reply.Refused && res.Problem == nil:
				rec.Role = Replay
			case reply.Refused:
				rec.Role = Refused
				forPlaces = forPlaces && rec.Code == engine.CodeBatchRefused
			}
		}
		h.Add(rec)
		if rec.Role == Intent && !seen[it.Key] {
			c.learn(rec, true)
		}
		seen[it.Key] = true
	}
	if forPlaces && c.rng.IntN(2) == 0 {
		c.refused = append(c.refused, items)
	}
}

// cliClient is an actor that reserves through real reservectl processes,
// each intent journaled in its state file before it is sent; a share of
// the processes is killed with SIGKILL mid-flight, and the intent is then
// resumed with `reservectl reserve --retry`.
type cliClient struct {
	r     *run
	id    int
	actor string
	rng   *rand.Rand
	env   []string // reservectl's environment: server, token, state file.
	state string
	last  *Op
}

// cliOutput is what reservectl --json prints for an outcome.
type cliOutput struct {
	Operation  engine.OperationKey `json:"operation"`
	HTTPStatus int                 `json:"http_status"`
	Response   json.RawMessage     `json:"response"`
	Recorded   bool                `json:"recorded"`
}

func (c *cliClient) runIntents(n int) {
	for range n {
		c.next()
	}
}

// next makes one reservation intent with reservectl, or now and then
// repeats the last one with --retry (a replay).
func (c *cliClient) next() {
	r, h := c.r, c.r.h
	if c.last != nil && c.rng.IntN(5) == 0 {
		rec := &Op{Client: c.id, Actor: c.actor, Role: Replay, Kind: engine.OperationReserve, Key: c.last.Key, Workshop: c.last.Workshop, Quantity: c.last.Quantity, Via: "cli", Call: h.Now(), Epoch: h.Epoch(), Return: -1}
		if out, code, err := c.run(0, "reserve", "--retry"); err == nil && authoritative(code) && !out.Recorded {
			rec.Return, rec.Status, rec.Body, rec.Code = h.Now(), out.HTTPStatus, out.Response, problemCode(out.Response)
			h.Add(rec)
		}
		return
	}
	if c.last != nil {
		if _, code, err := c.run(0, "new-intent"); err != nil || code != 0 {
			r.fail(fmt.Errorf("%s: reservectl new-intent after a settled intent exited %d: %v", c.actor, code, err))
			return
		}
	}
	w := r.workshops[c.rng.IntN(len(r.workshops))]
	q := 1 + c.rng.IntN(r.maxQuantity)
	rec := &Op{Client: c.id, Actor: c.actor, Role: Intent, Kind: engine.OperationReserve, Workshop: w, Quantity: q, Via: "cli", Call: h.Now(), Epoch: h.Epoch(), Return: -1}
	killAfter := time.Duration(0)
	if c.rng.IntN(3) == 0 {
		killAfter = time.Duration(1+c.rng.IntN(40)) * time.Millisecond
	}
	out, code, err := c.run(killAfter, "reserve", "--workshop", w, "--quantity", fmt.Sprint(q))
	deadline := time.Now().Add(intentTimeout)
	for err != nil || !authoritative(code) {
		if err == nil && code != exitUnknown {
			r.fail(fmt.Errorf("%s: reservectl reserve exited %d", c.actor, code))
			return
		}
		key, started := c.openKey()
		if !started {
			return // Killed before the intent was journaled: nothing was sent.
		}
		rec.Key = key
		rec.Unclear++
		if time.Now().After(deadline) {
			h.Add(rec)
			return
		}
		killAfter = 0
		if c.rng.IntN(4) == 0 {
			killAfter = time.Duration(1+c.rng.IntN(40)) * time.Millisecond
		}
		out, code, err = c.run(killAfter, "reserve", "--retry")
	}
	rec.Key, rec.Return, rec.Status, rec.Body, rec.Code = out.Operation, h.Now(), out.HTTPStatus, out.Response, problemCode(out.Response)
	h.Add(rec)
	c.last = rec
	if a, ok := rec.Answer(); ok && a.Status == engine.StatusReserved {
		r.lendKey(c.actor, rec.Key, engine.Request{Workshop: w, Quantity: q})
	}
}

// reservectl's exit codes that matter here.
const (
	exitReserved    = 0
	exitUnavailable = 3
	exitRejected    = 4
	// exitAnswerExpired is a retry refused with operation_expired: decided
	// earlier, its answer no longer kept (after a clock jump past the
	// receipts' retention).
	exitAnswerExpired = 5
	exitUnknown       = 75
)

func authoritative(code int) bool {
	return code == exitReserved || code == exitUnavailable || code == exitRejected || code == exitAnswerExpired
}

func problemCode(body []byte) string {
	var p struct {
		Code string `json:"code"`
	}
	json.Unmarshal(body, &p)
	return p.Code
}

// openKey reads the key of the intent in the state file, and whether it
// is a new one (not the last settled intent's).
func (c *cliClient) openKey() (engine.OperationKey, bool) {
	data, err := os.ReadFile(c.state)
	if err != nil {
		return "", false
	}
	var in struct {
		Key engine.OperationKey `json:"operation"`
	}
	if json.Unmarshal(data, &in) != nil || in.Key == "" || (c.last != nil && in.Key == c.last.Key) {
		return "", false
	}
	return in.Key, true
}

// run runs reservectl --json with args; a non-zero killAfter kills it with
// SIGKILL after that long (a killed process reports err errKilled).
func (c *cliClient) run(killAfter time.Duration, args ...string) (cliOutput, int, error) {
	cmd := exec.Command(c.r.cfg.Bin.Reservectl, append([]string{"--json", "--timeout", "3s"}, args...)...)
	cmd.Env = c.env
	var out logBuffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		return cliOutput{}, 0, err
	}
	c.r.sends.Add(1)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	if killAfter > 0 {
		t := time.NewTimer(killAfter)
		select {
		case err = <-done:
			t.Stop()
		case <-t.C:
			cmd.Process.Signal(syscall.SIGKILL)
			<-done
			c.r.cliKills.Add(1)
			return cliOutput{}, 0, errKilled
		}
	} else {
		err = <-done
	}
	code := cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		return cliOutput{}, 0, err
	}
	var o cliOutput
	json.Unmarshal([]byte(out.String()), &o)
	if authoritative(code) {
		c.r.answers.Add(1)
	}
	return o, code, nil
}

var errKilled = fmt.Errorf("reservectl killed")

// cliEnv is reservectl's environment for an actor.
func cliEnv(dir, url, token string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "RESERVECTL_SERVER=" + url, "RESERVECTL_TOKEN=" + token,
		"RESERVECTL_STATE=" + filepath.Join(dir, "intent.json"), "XDG_STATE_HOME=" + dir}
}

// waitlistStep makes one intent about a workshop with a waiting list: a
// request that joins the list when it cannot be reserved, one that does
// not (a walk-in, refused while people wait), or the answer to an offer
// the list made the client (a hold it never asked for, which it finds in
// its open holds): a confirmation or a release. Offers are made by the
// decisions that free places (cancellations, releases, expiries), so
// the campaign's crashes, failpoints and clock jumps land between
// freeing a place and everything after it.
func (c *actorClient) waitlistStep() {
	r := c.r
	if c.answered == nil {
		c.answered = map[string]bool{}
	}
	w := r.waitlisted[c.rng.IntN(len(r.waitlisted))]
	q := 1 + c.rng.IntN(min(2, r.maxQuantity))
	switch n := c.rng.IntN(10); {
	case n < 4:
		c.intent(engine.OperationReserve, client.Reserving(engine.Request{Workshop: w, Quantity: q, Waitlist: true}), w, q, "")
	case n < 5:
		c.intent(engine.OperationReserve, client.Reserving(engine.Request{Workshop: w, Quantity: q}), w, q, "")
	case n < 6 && len(c.waiting) > 0:
		// Leaving: the entry may be waiting, offered (which declines the
		// offer), or settled already.
		i := c.rng.IntN(len(c.waiting))
		rec := c.waiting[i]
		c.waiting = append(c.waiting[:i], c.waiting[i+1:]...)
		a, _ := rec.Answer()
		c.intent(engine.OperationLeaveWaitlist, client.LeavingWaitlist(a.EntryID), rec.Workshop, rec.Quantity, a.EntryID)
	case n < 7:
		// One of the client's reservations there cancelled: places freed
		// while people wait.
		for i, res := range c.active {
			if res.Workshop == w {
				c.cancel(i)
				return
			}
		}
	default:
		ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
		page, err := c.pick().Holds(ctx, engine.ListFilter{Status: string(engine.HoldHeld), Limit: engine.MaxListLimit})
		cancel()
		if err != nil {
			return // A read that failed decides nothing; the next step reads again.
		}
		for _, h := range page.Holds {
			if h.WaitEntry == "" || c.answered[h.ID] {
				continue
			}
			c.answered[h.ID] = true
			if c.rng.IntN(4) == 0 {
				c.intent(engine.OperationRelease, client.Releasing(h.ID), h.Workshop, h.Quantity, h.ID)
			} else {
				c.intent(engine.OperationConfirm, client.Confirming(h.ID), h.Workshop, h.Quantity, h.ID)
			}
			return
		}
	}
}
