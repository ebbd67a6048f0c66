package pgstore

// Group commit: concurrent Updates of one Store share one PostgreSQL
// transaction and so one COMMIT, one WAL flush.
//
// An Update that finds a free slot (there is groupSlots) runs at once,
// alone, exactly like a transaction of its own. An Update that finds every
// slot busy queues; when a slot's transaction ends, the slot takes every
// queued Update (up to maxGroupCalls) as one group. So a group forms only
// while the database is busy, and its size follows the load. A queued
// call waits for its group, or leaves the queue when its context is done
// before a group takes it; one queued while no transaction of its kind
// ended for stallAfter runs alone in a slot of its own, as long as fewer
// transactions of its kind run than the pool has connections.
//
// A group of several decisions runs in one READ COMMITTED transaction:
//
//   - First every function runs once against a probe (engine.Tx that finds
//     nothing), which names the rows each decision looks up first. Those
//     rows are read in one round trip, the rows that a write transaction
//     locks (deliveries, events, workshops, reservations, holds, waiting
//     list entries, tokens) with SELECT … ORDER BY key FOR UPDATE, so that two daemons' groups
//     take the locks they share in the same order and cannot deadlock on
//     them. A hot workshop is then locked once for the whole group.
//   - Then the functions run one after another, for real. A read of a row
//     that the group has read or written is answered from memory; any other
//     read goes to the server in a savepoint of its own. Writes are kept in
//     memory, where the next decisions see them, and sent later.
//   - Each decision's writes are sent under a SAVEPOINT of their own and
//     released after them, and the writes of all decisions go to the server
//     in one pgx batch before the COMMIT. A scan first sends what is pending,
//     so the server sees every earlier write.
//   - A decision whose function fails stores nothing: its writes are never
//     sent (or rolled back to its savepoint). A decision whose statement
//     fails is rolled back to its savepoint and returns the statement's
//     error; the decisions after it, which saw its writes, run again. A
//     collision (unique violation, serialization failure, deadlock) is
//     returned to the decision's Update, which runs it again, after a
//     backoff, in a later transaction.
//   - If the COMMIT fails, every decision of the group gets the error: none
//     is reported decided unless the COMMIT succeeded.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/tracing"
)

// maxGroupCalls bounds the Updates of one group. Every decision that writes
// is a subtransaction, and PostgreSQL keeps the subtransactions of a
// transaction in its snapshots only up to 64; beyond that every snapshot of
// every session has to look them up on disk.
const maxGroupCalls = 48

// groupSlots is how many transactions of one kind (write, or read-only) of
// one Store run at once while none stalls. One: concurrent decisions then
// share a transaction rather than queue for a workshop's row lock in
// transactions of their own, and every round trip and COMMIT serves as
// many decisions as possible. (Two, tried on the hot-workshop benchmark,
// gave smaller groups and fewer reservations per second.)
const groupSlots = 1

// stallAfter is how long a queued call waits, while no transaction of its
// kind ends, before it takes a slot of its own. Without it, functions that
// wait for each other (a View's function runs for as long as its caller
// reads: an export streams a whole table) would hold up every queued call
// for good, and a group stuck behind one workshop's row lock would hold up
// the decisions of every other workshop; a busy store, whose transactions
// end, keeps its queue for the next group.
const stallAfter = 50 * time.Millisecond

// maxGroupItems bounds the batch items (engine.BatchItems) of one group: a
// group takes a batch whatever its size, but no more Updates once its
// batches hold this many items.
const maxGroupItems = 2000

// call is one Update waiting for its group.
type call struct {
	ctx   context.Context
	fn    func(engine.Tx) error
	items int
	err   chan error
	// attempt counts the runs of fn by its Update, this one included.
	attempt int
	// caller is the span of ctx, when tracing is on.
	caller tracing.Caller
}

// grouper hands the calls of one kind (Updates, or Views) to transactions.
type grouper struct {
	opts    pgx.TxOptions // For a transaction of one call.
	begin   string        // Starts a group's transaction with those options.
	write   bool
	mu      sync.Mutex
	slots   int // Transactions that run at once while none stalls.
	max     int // Transactions that may run at once: the pool's connections.
	running int
	queue   []*call
	// finished counts the transactions that ended, so that a queued call
	// can tell a busy store from a stalled one.
	finished int
}

// take removes the next group from the queue, after first if it is not nil.
func (g *grouper) take(first *call) []*call {
	var group []*call
	items := 0
	if first != nil {
		group, items = append(group, first), first.items
	}
	n := 0
	for n < len(g.queue) && len(group) < maxGroupCalls && (len(group) == 0 || items < maxGroupItems) {
		group, items = append(group, g.queue[n]), items+g.queue[n].items
		n++
	}
	g.queue = slices.Delete(g.queue, 0, n)
	return group
}

// grouped runs fn once, alone or in a group of g, and returns its error;
// attempt counts fn's runs by its Update, this one included.
func (s *Store) grouped(g *grouper, ctx context.Context, fn func(engine.Tx) error, attempt int) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c := &call{ctx: ctx, fn: fn, items: engine.BatchItems(ctx), err: make(chan error, 1), attempt: attempt}
	if s.tracer != nil && g.write {
		c.caller = s.tracer.CallerOf(ctx)
	}
	g.mu.Lock()
	if g.running < g.slots {
		g.running++
		group := g.take(c)
		g.mu.Unlock()
		s.lead(g, group)
		return <-c.err
	}
	g.queue = append(g.queue, c)
	seen := g.finished
	g.mu.Unlock()
	stalled := time.NewTicker(stallAfter)
	defer stalled.Stop()
	for {
		select {
		case err := <-c.err:
			return err
		case <-ctx.Done():
			// Still queued, the call has not begun and can go; taken into
			// a group, it waits for the group's outcome, which may be a
			// commit.
			g.mu.Lock()
			if i := slices.Index(g.queue, c); i >= 0 {
				g.queue = slices.Delete(g.queue, i, i+1)
				g.mu.Unlock()
				return ctx.Err()
			}
			g.mu.Unlock()
			return <-c.err
		case <-stalled.C:
		}
		g.mu.Lock()
		if g.finished != seen {
			seen = g.finished
			g.mu.Unlock()
			continue
		}
		// Stalled: no transaction ended for stallAfter. With a connection
		// to spare the call runs alone; else it stays queued, and still
		// leaves when its context is done.
		if i := slices.Index(g.queue, c); i >= 0 && g.running < g.max {
			g.queue = slices.Delete(g.queue, i, i+1)
			g.running++
			g.mu.Unlock()
			s.lead(g, []*call{c})
			return <-c.err
		}
		g.mu.Unlock()
	}
}

// lead runs group and then, if calls queued meanwhile, hands the slot to a
// goroutine that runs them as the next group.
func (s *Store) lead(g *grouper, group []*call) {
	s.decide(g, group)
	g.mu.Lock()
	g.finished++
	if len(g.queue) == 0 {
		g.running--
		g.mu.Unlock()
		return
	}
	next := g.take(nil)
	g.mu.Unlock()
	go s.lead(g, next)
}

// decide runs the calls of one group and answers each.
func (s *Store) decide(g *grouper, calls []*call) {
	if len(calls) == 1 {
		c := calls[0]
		var span tracing.Span
		if s.tracer != nil && g.write {
			span = s.commitSpan(calls)
		}
		err := s.runTx(c.ctx, g.opts, g.write, safe(c.fn))
		if err == nil && g.write {
			s.committed(calls)
		}
		if s.tracer != nil {
			traceCollision(span, c, err)
		}
		// Ended before the answer, so that a request's trace is whole
		// once its answer is sent.
		span.EndCommit(err)
		c.err <- err
		return
	}
	s.runGroup(g, calls)
}

// committed tells OnCommit of a successful commit of calls.
func (s *Store) committed(calls []*call) {
	if s.onCommit == nil {
		return
	}
	batches := 0
	for _, c := range calls {
		if c.items > 0 {
			batches++
		}
	}
	s.onCommit(len(calls), batches)
}

// storeName names this store in the spans of its commits.
const storeName = "postgres"

// commitSpan starts the span of the transaction of calls, as they are when
// it starts (a call whose decision fails stays counted).
func (s *Store) commitSpan(calls []*call) tracing.Span {
	callers := make([]tracing.Caller, len(calls))
	attempt := 1
	for i, c := range calls {
		callers[i] = c.caller
		attempt = max(attempt, c.attempt)
	}
	span := s.tracer.Commit(storeName, callers)
	span.Attempt(attempt)
	return span
}

// traceCollision records on span that c collided in its transaction, when
// err, c's answer, is a collision.
func traceCollision(span tracing.Span, c *call, err error) {
	if code, ok := collision(err); ok {
		span.Collision(c.attempt, code)
	}
}

// safe returns fn with a panic turned into an error, so that one bad
// function cannot take down the goroutine that runs a whole group.
func safe(fn func(engine.Tx) error) func(engine.Tx) error {
	return func(t engine.Tx) (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("panic in transaction: %v", p)
			}
		}()
		return fn(t)
	}
}

// errRerun ends a decision whose earlier neighbour's write failed: it saw
// that write, so it runs again.
var errRerun = errors.New("pgstore: an earlier decision of the group failed; deciding again")

// entry is what a group knows of one row: its record, or that it is absent.
type entry struct {
	val    any
	exists bool
}

// stmt is one write statement waiting to be sent.
type stmt struct {
	sql   string
	args  []any
	what  string  // For the error message.
	owner *member // The decision it belongs to; nil for the group's own.
	guess bool    // It checks that a row guessed absent is.
	row   rowID   // The row it checks, for a guess.
}

// member is one decision of a group.
type member struct {
	c       *call
	g       *group
	t       *tx
	overlay map[rowID]entry // What this decision read and wrote.
	writes  []stmt          // Its writes, not yet queued.
	guesses []stmt          // Checks of the rows it guessed absent, not yet queued.
	noGuess bool            // A guess of it was wrong: read every row.
	// savepoint is the name of its savepoint once that has been sent.
	savepoint string
	doomed    bool // An earlier decision's write failed: run again.
	ok        bool // Decided; its writes are sent or pending.
	err       error
	// afterWrites is set when it ran after a decision of the group that
	// wrote: what it read may rest on writes that are not committed.
	afterWrites bool
}

// group is the shared transaction of several decisions.
type group struct {
	s   *Store
	ctx context.Context // Done once every call's context is done.
	// sendCtx is the context statements are sent on: ctx, or for the
	// COMMIT one that is never done.
	sendCtx   context.Context
	conn      *pgxpool.Conn
	tx        txConn // conn
	write     bool
	committed bool
	base      map[rowID]entry // Rows as the server has them in this transaction.
	sent      []*member       // Decided, with writes in pending.
	reruns    []*member
	// pending are the statements to send before the next direct one.
	pending []stmt
	broken  error // The transaction cannot go on.
	// wrote is set once a decision of the group succeeded with writes.
	wrote bool
}

// allDone returns a context that is done once every call's context is
// done, with the last one's cause.
func allDone(calls []*call) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	var left atomic.Int32
	left.Store(int32(len(calls)))
	stops := make([]func() bool, len(calls))
	for i, c := range calls {
		stops[i] = context.AfterFunc(c.ctx, func() {
			if left.Add(-1) == 0 {
				cancel(context.Cause(c.ctx))
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel(nil)
	}
}

// runGroup decides calls in one transaction and answers each.
func (s *Store) runGroup(gr *grouper, calls []*call) {
	ctx, stop := allDone(calls)
	defer stop()
	var span tracing.Span
	if s.tracer != nil && gr.write {
		span = s.commitSpan(calls)
	}
	members := make([]*member, len(calls))
	want := &wanted{}
	for i, c := range calls {
		members[i] = &member{c: c}
		_ = safe(c.fn)(&probeTx{want})
	}
	// answer answers every call, err telling why the group did not commit
	// (nil once it did). A decision that failed keeps its own error unless
	// the group did not commit and the decision ran after one that wrote:
	// then its error (an atomic batch refused for too few places, say) may
	// rest on writes that never committed, and it is as undecided as they
	// are. The group's span ends first, so that a request's trace is whole
	// once its answer is sent.
	answerOf := func(m *member, err error) error {
		if m.err != nil && (err == nil || !m.afterWrites) {
			return m.err
		}
		return err
	}
	answer := func(err error) {
		if s.tracer != nil {
			for _, m := range members {
				traceCollision(span, m.c, answerOf(m, err))
			}
		}
		span.EndCommit(err)
		for _, m := range members {
			m.c.err <- answerOf(m, err)
		}
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		answer(fmt.Errorf("pgstore: begin: %w", s.cause(ctx, err)))
		return
	}
	g := &group{s: s, ctx: ctx, sendCtx: ctx, conn: conn, tx: conn, write: gr.write, base: map[rowID]entry{}}
	defer func() {
		if !g.committed {
			// The rollback must reach the server even when ctx is done,
			// within finishTimeout. A connection it cannot reach is closed
			// by Release, which drops a connection left in a transaction.
			fctx, cancel := finishing(ctx)
			_, _ = conn.Exec(fctx, "ROLLBACK")
			cancel()
		}
		conn.Release()
	}()
	if err := g.begin(gr.begin, want); err != nil {
		answer(fmt.Errorf("pgstore: begin: %w", s.cause(ctx, err)))
		return
	}
	queue := members
	for g.broken == nil {
		for len(queue) > 0 && g.broken == nil {
			m := queue[0]
			queue = queue[1:]
			g.run(m)
			queue = append(g.takeReruns(), queue...)
		}
		if g.broken != nil || !slices.ContainsFunc(members, func(m *member) bool { return m.ok }) {
			break
		}
		// The COMMIT goes with the last writes, in the same round trip; a
		// write that fails skips it, and the decisions after that write
		// run again. Once sent, it is waited for even if every caller has
		// gone, so that none mistakes a commit for a failure.
		// A server that hangs bounds the wait (finishing), and the outcome
		// is then unknown: every decision of the group stays undecided.
		g.pending = append(g.pending, stmt{sql: "COMMIT", what: "commit"})
		fctx, cancel := finishing(ctx)
		g.sendCtx = fctx
		g.flush(nil)
		cancel()
		g.sendCtx = ctx
		queue = g.takeReruns()
		if g.committed {
			break
		}
	}
	if g.broken != nil {
		answer(fmt.Errorf("pgstore: group transaction: %w", s.cause(ctx, g.broken)))
		return
	}
	if g.committed && g.write {
		var decided []*call
		for _, m := range members {
			if m.ok {
				decided = append(decided, m.c)
			}
		}
		s.committed(decided)
	}
	answer(nil)
}

// cause adds the reason ctx is done to err, if it is.
func (s *Store) cause(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
		return fmt.Errorf("%w: %w", cause, err)
	}
	return err
}

func (g *group) takeReruns() []*member {
	r := g.reruns
	g.reruns = nil
	return r
}

// The savepoint names. The statements of a group go to the server in the
// order of its decisions, and each decision releases its savepoint (or rolls
// back to it) before the next one's is set, so one name serves every
// decision (a name refers to the newest savepoint of that name), and the
// statements stay the same few, which pgx prepares once per connection.
const (
	decisionSavepoint = "d" // Around the statements of one decision.
	readSavepoint     = "r" // Around one read sent alone.
)

// run runs the function of m once, for real.
func (g *group) run(m *member) {
	*m = member{c: m.c, g: g, noGuess: m.noGuess, afterWrites: g.wrote}
	m.t = &tx{ctx: g.ctx, tx: g.tx, write: g.write, m: m}
	err := outcome(safe(m.c.fn)(m.t), m.t.err)
	switch {
	case g.broken != nil:
	case m.doomed:
		g.reruns = append(g.reruns, m)
	case err != nil:
		// Final once the writes it saw are stored and its guesses checked:
		// if one of those fails, it runs again.
		m.err = err
		if m.savepoint != "" {
			g.pending = append(g.pending, stmt{sql: "ROLLBACK TO SAVEPOINT " + m.savepoint})
		}
		onServer := m.savepoint != ""
		if m.writes = nil; len(m.guesses) > 0 || onServer {
			g.pending = m.queue(g.pending)
			g.pending = append(g.pending, stmt{sql: "RELEASE SAVEPOINT " + m.savepoint})
		}
		g.sent = append(g.sent, m)
		if onServer {
			// Some of its writes are on the server already: they are undone
			// now, before the next decision reads a row from the server.
			g.flush(nil)
		}
	case len(m.writes) == 0 && len(m.guesses) == 0 && m.savepoint == "":
		m.ok = true // It only read.
		g.sent = append(g.sent, m)
	default:
		m.ok, g.wrote = true, true
		g.pending = m.queue(g.pending)
		g.pending = append(g.pending, stmt{sql: "RELEASE SAVEPOINT " + m.savepoint, owner: m})
		g.sent = append(g.sent, m)
	}
}

// queue appends to stmts what m has not sent yet: its savepoint, the checks
// of its guesses and its writes.
func (m *member) queue(stmts []stmt) []stmt {
	if m.savepoint == "" {
		m.savepoint = decisionSavepoint
		stmts = append(stmts, stmt{sql: "SAVEPOINT " + m.savepoint, owner: m})
	}
	stmts = append(stmts, m.guesses...)
	stmts = append(stmts, m.writes...)
	m.guesses, m.writes = nil, nil
	return stmts
}

// usable is the error of a decision that must not go on: its call's
// context is done, or it must run again.
func (m *member) usable() error {
	if m.doomed {
		return errRerun
	}
	if m.g.broken != nil {
		return m.g.broken
	}
	return m.c.ctx.Err()
}

// lookup finds what the group knows of row id as m sees it: m's own reads
// and writes, then those of the decisions before it that succeeded, then
// the server's.
func (m *member) lookup(id rowID) (entry, bool) {
	if e, ok := m.overlay[id]; ok {
		return e, true
	}
	for i := len(m.g.sent) - 1; i >= 0; i-- {
		if e, ok := m.g.sent[i].overlay[id]; ok && m.g.sent[i].ok {
			return e, true
		}
	}
	e, ok := m.g.base[id]
	return e, ok
}

func (m *member) remember(id rowID, e entry) {
	if m.overlay == nil {
		m.overlay = map[rowID]entry{}
	}
	m.overlay[id] = e
}

// write keeps a write of m in memory until it is sent.
func (m *member) write(id rowID, e entry, s stmt) {
	m.remember(id, e)
	s.owner = m
	m.writes = append(m.writes, s)
}

// flush sends the pending statements and, when cur is not nil, cur's
// savepoint and writes so far, so that the server holds every write that
// cur has seen. It returns the error cur gets: its own failed write, or
// errRerun when an earlier decision's write failed.
func (g *group) flush(cur *member) error {
	stmts := g.pending
	g.pending = nil
	if cur != nil {
		stmts = cur.queue(stmts)
	}
	sent := g.sent
	g.sent = nil
	stored := func(ms []*member) {
		for _, m := range ms {
			if m.ok {
				for id, e := range m.overlay {
					g.base[id] = e
				}
			}
		}
	}
	if len(stmts) == 0 {
		stored(sent)
		return nil
	}
	b := &pgx.Batch{}
	for _, s := range stmts {
		b.Queue(s.sql, s.args...)
	}
	br := g.tx.SendBatch(g.sendCtx, b)
	failed, err := -1, error(nil)
	for i := range stmts {
		if _, err = br.Exec(); err != nil {
			failed = i
			break
		}
	}
	if cerr := br.Close(); err == nil && cerr != nil {
		g.broken = cerr
		return cerr
	}
	if failed < 0 {
		stored(sent)
		g.committed = stmts[len(stmts)-1].sql == "COMMIT"
		return nil
	}
	owner, guess := stmts[failed].owner, stmts[failed].guess
	if s := stmts[failed]; s.what != "" {
		err = fmt.Errorf("%s: %w", s.what, err)
	}
	if !errors.As(err, new(*pgconn.PgError)) || owner == nil {
		g.broken = err
		return err
	}
	// Everything before the failed statement succeeded; the failed
	// decision's savepoint undoes its writes and, nested in it, everything
	// sent after them.
	if rerr := g.restore(owner.savepoint, true); rerr != nil {
		g.broken = rerr
		return rerr
	}
	owner.savepoint = ""
	// The decisions after the failed one saw its writes: they run again,
	// whatever they decided.
	// A row guessed absent exists: that decision runs again too, reading
	// every row.
	i := slices.Index(sent, owner)
	switch {
	case i < 0:
		i = len(sent) // The failed decision is cur.
	case guess:
		owner.ok, owner.doomed, owner.noGuess = false, true, true
		g.reruns = append(g.reruns, owner)
	default:
		owner.ok, owner.err = false, err
	}
	stored(sent[:i])
	for _, m := range sent[min(i+1, len(sent)):] {
		m.ok, m.err, m.doomed = false, nil, true
		g.reruns = append(g.reruns, m)
	}
	switch {
	case cur == nil:
		return err
	case cur == owner && guess:
		cur.noGuess = true
	case cur == owner:
		return err
	}
	cur.doomed, cur.savepoint = true, ""
	return errRerun
}

// restore rolls the transaction back to savepoint sp, which makes it usable
// after a failed statement, and with release also removes sp.
//
// It uses the simple query protocol: the server refuses to prepare any
// statement in an aborted transaction, even this one.
func (g *group) restore(sp string, release bool) error {
	sql := "ROLLBACK TO SAVEPOINT " + sp
	if release {
		sql += "; RELEASE SAVEPOINT " + sp
	}
	if _, err := g.conn.Conn().PgConn().Exec(g.ctx, sql).ReadAll(); err != nil {
		return fmt.Errorf("roll back to savepoint %s: %w", sp, err)
	}
	return nil
}

// recover makes the transaction usable again after a statement of m sent
// directly (a scan) failed, by rolling back to m's savepoint.
func (g *group) recover(m *member) {
	if g.broken != nil || g.conn.Conn().PgConn().TxStatus() != 'E' {
		return
	}
	if m.savepoint == "" {
		g.broken = errors.New("pgstore: a statement outside any savepoint failed")
		return
	}
	if err := g.restore(m.savepoint, false); err != nil {
		g.broken = err
	}
}

// direct prepares the transaction for a statement of t that the server
// must answer with every write t has seen: a scan or an update in place.
func (t *tx) direct() error {
	if t.m == nil {
		return nil
	}
	if err := t.m.g.flush(t.m); err != nil {
		return t.fail(err)
	}
	return nil
}

// memberGet is get for a decision of a group: from what the group knows,
// else from the server in a savepoint of its own, so that a failed read
// costs only this decision.
func memberGet[T any](t *tx, tb table[T], suffix string, key []any) (r T, ok bool, err error) {
	m, id := t.m, rowOf(tb, key)
	if e, hit := m.lookup(id); hit {
		if e.exists {
			r = e.val.(T)
		}
		return r, e.exists, nil
	}
	if guessable[tb.name] && m.g.write && !m.noGuess {
		m.remember(id, entry{})
		m.guesses = append(m.guesses, stmt{sql: tb.absentSQL(), args: key, owner: m, guess: true, row: id,
			what: fmt.Sprintf("check that %s %q is absent", tb.name, id.key)})
		return r, false, nil
	}
	sp := readSavepoint
	b := &pgx.Batch{}
	b.Queue("SAVEPOINT " + sp)
	b.Queue(tb.selectSQL()+suffix, key...)
	b.Queue("RELEASE SAVEPOINT " + sp)
	br := m.g.tx.SendBatch(m.g.ctx, b)
	_, err = br.Exec()
	if err == nil {
		err = br.QueryRow().Scan(tb.dests(&r)...)
		ok = err == nil
		if errors.Is(err, pgx.ErrNoRows) {
			err = nil
		}
	}
	if err == nil {
		_, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		switch {
		case !errors.As(err, new(*pgconn.PgError)):
			m.g.broken = err
		case m.g.conn.Conn().PgConn().TxStatus() == 'E':
			if rerr := m.g.restore(sp, true); rerr != nil {
				m.g.broken = rerr
			}
		}
		var zero T
		return zero, false, t.fail(fmt.Errorf("read %s %q: %w", tb.name, id.key, err))
	}
	m.remember(id, entry{val: r, exists: ok})
	return r, ok, nil
}

// guessable are the tables whose rows a decision of a group looks up, when
// the group has not read them ahead, mostly to see that a new id is free:
// such a row is taken as absent without a round trip, and a statement sent
// with the decision's writes, which fails if the row exists, checks it.
// Events are not: a decision looks up only events that exist (the event
// of a delivery), which a guess would make it decide twice.
var guessable = map[string]bool{reservations.name: true, holds.name: true, deliveries.name: true}

// absentSQL fails with division_by_zero if the row with the key given as
// parameters exists.
func (tb table[T]) absentSQL() string {
	return fmt.Sprintf("SELECT 1 / (1 - count(*))::int FROM %s WHERE (%s) = (%s)", tb.name, tb.keyList(), params(1, tb.keys))
}

// memberPut is put for a decision of a group: kept in memory, an INSERT
// when the group read the row as absent and an upsert otherwise.
func memberPut[T any](t *tx, tb table[T], r T) error {
	id := rowOf(tb, tb.values(r)[:tb.keys])
	e, known := t.m.lookup(id)
	return memberWrite(t, tb, r, known && !e.exists)
}

// memberAdd is memberPut with a plain INSERT, which fails if the row
// exists.
func memberAdd[T any](t *tx, tb table[T], r T) error { return memberWrite(t, tb, r, true) }

func memberWrite[T any](t *tx, tb table[T], r T, insert bool) error {
	values := tb.values(r)
	id := rowOf(tb, values[:tb.keys])
	query := tb.upsertSQL()
	if insert {
		query = tb.insertSQL()
		// The INSERT fails if the row exists, so it checks a guess of the
		// row's absence as well: the decision then fails with a unique
		// violation, which its Update retries.
		t.m.guesses = slices.DeleteFunc(t.m.guesses, func(g stmt) bool { return g.row == id })
	}
	t.m.write(id, entry{val: r, exists: true}, stmt{sql: query, args: values, what: fmt.Sprintf("write %s %q", tb.name, id.key)})
	return nil
}

// memberDelete is a delete for a decision of a group, kept in memory.
func memberDelete[T any](t *tx, tb table[T], key ...any) error {
	id := rowOf(tb, key)
	t.m.write(id, entry{}, stmt{sql: tb.deleteSQL(), args: key, what: fmt.Sprintf("delete %s %q", tb.name, id.key)})
	return nil
}

// wanted collects the rows that the functions of a group look up first,
// by table, each key once.
type wanted struct {
	keys map[string][][]any
	seen map[rowID]bool
}

func (w *wanted) add(table string, key ...any) {
	id := rowID{table, fmt.Sprint(key...)}
	if len(key) > 1 {
		id = rowID{table, fmt.Sprint(key[0]) + "\x00" + fmt.Sprint(key[1])}
	}
	if w.seen[id] {
		return
	}
	if w.seen == nil {
		w.seen, w.keys = map[rowID]bool{}, map[string][][]any{}
	}
	w.seen[id] = true
	w.keys[table] = append(w.keys[table], key)
}

// begin starts the transaction with the statement begin and reads the rows
// of w, in the same round trip and in a savepoint: first the ones a write
// transaction locks, each table in key order, then the receipts and
// tombstones. The tables are locked in the order in which a transaction
// alone locks them: a delivery before its event (an operator's
// correction), and both before the event's workshop (a claim of
// deliveries reads what sending them needs), so that a group and such a
// transaction do not deadlock either.
func (g *group) begin(begin string, w *wanted) error {
	b := &pgx.Batch{}
	b.Queue(begin)
	b.Queue("SAVEPOINT prefetch")
	lock := ""
	if g.write {
		lock = " FOR UPDATE"
	}
	queuePrefetch(g, b, deliveries, w, lock)
	queuePrefetch(g, b, events, w, lock)
	queuePrefetch(g, b, workshops, w, lock, lockedWorkshops(g, w)...)
	queuePrefetch(g, b, reservations, w, lock)
	queuePrefetch(g, b, holds, w, lock, offersOfEntries(w)...)
	queuePrefetch(g, b, waitEntries, w, lock)
	queuePrefetch(g, b, tokens, w, lock)
	queuePrefetch(g, b, receipts, w, "")
	queuePrefetch(g, b, tombstones, w, "")
	if b.Len() == 2 {
		_, err := g.conn.Exec(g.ctx, begin)
		return err
	}
	b.Queue("RELEASE SAVEPOINT prefetch")
	err := g.tx.SendBatch(g.ctx, b).Close()
	if err == nil || !errors.As(err, new(*pgconn.PgError)) || g.conn.Conn().PgConn().TxStatus() != 'E' {
		return err
	}
	// A key the server refuses (it cannot be text, say) fails the read of
	// every key: the decisions then read their rows one by one, and only the
	// one with the bad key fails.
	clear(g.base)
	return g.restore("prefetch", true)
}

// moreRows selects rows a group reads ahead besides the ones it wants:
// cond, a condition with one parameter (a %d verb for its number), and
// arg, its value.
type moreRows struct {
	cond string
	arg  any
}

// lockedWorkshops adds to the workshops a write group reads ahead, and so
// locks, the workshops of the holds and of the waiting list entries it
// locks, before them, as Hold and WaitEntry do (see there); none for a
// read-only group.
func lockedWorkshops(g *group, w *wanted) []moreRows {
	if !g.write {
		return nil
	}
	var more []moreRows
	for _, table := range []string{holds.name, waitEntries.name} {
		if ids := w.ids(table); ids != nil {
			more = append(more, moreRows{"id IN (SELECT workshop FROM " + table + " WHERE id = ANY($%d))", ids})
		}
	}
	return more
}

// offersOfEntries adds to the holds a group reads ahead the offers of the
// waiting list entries it reads ahead: leaving a list reads its entry's
// offer next, which would otherwise be guessed absent.
func offersOfEntries(w *wanted) []moreRows {
	if ids := w.ids(waitEntries.name); ids != nil {
		return []moreRows{{"id IN (SELECT hold_id FROM wait_entries WHERE id = ANY($%d))", ids}}
	}
	return nil
}

// ids returns the keys w wants of table, whose key is one column, or nil.
func (w *wanted) ids(table string) []string {
	keys := w.keys[table]
	if len(keys) == 0 {
		return nil
	}
	ids := make([]string, len(keys))
	for i, k := range keys {
		ids[i] = k[0].(string)
	}
	return ids
}

// queuePrefetch queues the read of the rows of tb that w wants, and of
// those each of more selects, with suffix (FOR UPDATE), in key order.
func queuePrefetch[T any](g *group, b *pgx.Batch, tb table[T], w *wanted, suffix string, more ...moreRows) {
	keys := w.keys[tb.name]
	if len(keys) == 0 && len(more) == 0 {
		return
	}
	cols := make([][]string, tb.keys)
	for _, k := range keys {
		g.base[rowOf(tb, k)] = entry{}
		for i := range cols {
			cols[i] = append(cols[i], k[i].(string))
		}
	}
	var where string
	args := make([]any, tb.keys)
	if tb.keys == 1 {
		where, args[0] = tb.columns[0]+" = ANY($1)", cols[0]
	} else {
		where = fmt.Sprintf("(%s) IN (SELECT * FROM unnest($1::text[], $2::text[]))", tb.keyList())
		args[0], args[1] = cols[0], cols[1]
	}
	for _, m := range more {
		where = fmt.Sprintf("%s OR "+m.cond, where, len(args)+1)
		args = append(args, m.arg)
	}
	query := fmt.Sprintf("SELECT %s FROM %s WHERE %s ORDER BY %s%s", strings.Join(tb.columns, ", "), tb.name, where, tb.keyList(), suffix)
	b.Queue(query, args...).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var r T
			if err := rows.Scan(tb.dests(&r)...); err != nil {
				return err
			}
			g.base[rowOf(tb, tb.values(r)[:tb.keys])] = entry{val: r, exists: true}
		}
		return rows.Err()
	})
}

// errProbe stops a probe at the first scan: only point reads are fetched
// ahead.
var errProbe = errors.New("pgstore: probe")

// probeTx is an engine.Tx in which every row is absent: a function run
// against it names the rows it looks up first.
type probeTx struct{ w *wanted }

var _ engine.Tx = (*probeTx)(nil)

func (p *probeTx) Workshop(id string) (engine.Workshop, bool, error) {
	p.w.add(workshops.name, id)
	return engine.Workshop{}, false, nil
}
func (p *probeTx) Reservation(id string) (engine.Reservation, bool, error) {
	p.w.add(reservations.name, id)
	return engine.Reservation{}, false, nil
}
func (p *probeTx) Receipt(actor string, key engine.OperationKey) (engine.Receipt, bool, error) {
	p.w.add(receipts.name, actor, string(key))
	return engine.Receipt{}, false, nil
}
func (p *probeTx) Tombstone(actor string, key engine.OperationKey) (engine.Tombstone, bool, error) {
	p.w.add(tombstones.name, actor, string(key))
	return engine.Tombstone{}, false, nil
}
func (p *probeTx) Token(hash string) (engine.TokenRecord, bool, error) {
	p.w.add(tokens.name, hash)
	return engine.TokenRecord{}, false, nil
}
func (p *probeTx) Event(id string) (engine.Event, bool, error) {
	p.w.add(events.name, id)
	return engine.Event{}, false, nil
}
func (p *probeTx) Hold(id string) (engine.Hold, bool, error) {
	p.w.add(holds.name, id)
	return engine.Hold{}, false, nil
}

// Binding and BindingOfActor name no row to read ahead: a subject is
// bound once, so a group seldom binds, and its reads go to the server.
func (p *probeTx) Binding(string, string) (engine.Binding, bool, error) {
	return engine.Binding{}, false, nil
}
func (p *probeTx) BindingOfActor(string) (engine.Binding, bool, error) {
	return engine.Binding{}, false, nil
}
func (p *probeTx) AddBinding(engine.Binding) error { return nil }

// Profile names no row to read ahead either: a profile changes seldom.
func (p *probeTx) Profile(string) (engine.Profile, bool, error)            { return engine.Profile{}, false, nil }
func (p *probeTx) PutProfile(engine.Profile) error                         { return nil }
func (p *probeTx) HasReceiptsOf(string) (bool, error)                      { return false, nil }
func (p *probeTx) ForEachBinding(func(engine.Binding) error) error         { return errProbe }
func (p *probeTx) PutWorkshop(engine.Workshop) error                       { return nil }
func (p *probeTx) PutReservation(engine.Reservation) error                 { return nil }
func (p *probeTx) PutReceipt(engine.Receipt) error                         { return nil }
func (p *probeTx) PutToken(engine.TokenRecord) error                       { return nil }
func (p *probeTx) DeleteToken(string) error                                { return nil }
func (p *probeTx) DeleteReceipt(string, engine.OperationKey) error         { return nil }
func (p *probeTx) PutTombstone(engine.Tombstone) error                     { return nil }
func (p *probeTx) AddEvent(engine.Event) error                             { return nil }
func (p *probeTx) MarkEventDelivered(string, time.Time) error              { return nil }
func (p *probeTx) PutHold(engine.Hold) error                               { return nil }
func (p *probeTx) ForEachToken(func(engine.TokenRecord) error) error       { return errProbe }
func (p *probeTx) ForEachWorkshop(func(engine.Workshop) error) error       { return errProbe }
func (p *probeTx) ForEachReservation(func(engine.Reservation) error) error { return errProbe }
func (p *probeTx) ForEachReceipt(func(engine.Receipt) error) error         { return errProbe }
func (p *probeTx) ForEachTombstone(func(engine.Tombstone) error) error     { return errProbe }
func (p *probeTx) ForEachEvent(func(engine.Event) error) error             { return errProbe }
func (p *probeTx) ForEachPendingEvent(func(engine.Event) error) error      { return errProbe }
func (p *probeTx) ForEachHold(func(engine.Hold) error) error               { return errProbe }
func (p *probeTx) ForEachOpenHold(string, time.Time, func(engine.Hold) error) error {
	return errProbe
}
func (p *probeTx) ForEachReceiptCreatedBefore(time.Time, func(engine.Receipt) error) error {
	return errProbe
}
func (p *probeTx) ForEachReceiptNewestFirst(engine.TimePosition, func(engine.Receipt) error) error {
	return errProbe
}
func (p *probeTx) ForEachTombstoneNewestFirst(engine.TimePosition, func(engine.Tombstone) error) error {
	return errProbe
}
func (p *probeTx) ForEachReservationOf(string, string, func(engine.Reservation) error) error {
	return errProbe
}
func (p *probeTx) ForEachHoldOf(string, string, func(engine.Hold) error) error { return errProbe }
func (p *probeTx) ForEachReservationIn(string, engine.PersonPosition, func(engine.Reservation) error) error {
	return errProbe
}
func (p *probeTx) ForEachHoldIn(string, engine.PersonPosition, func(engine.Hold) error) error {
	return errProbe
}
func (p *probeTx) DeleteWorkshop(string) error                     { return nil }
func (p *probeTx) ForEachProfile(func(engine.Profile) error) error { return errProbe }

// The API token reads by id are not fetched ahead.
func (p *probeTx) APIToken(string) (engine.TokenRecord, bool, error) {
	return engine.TokenRecord{}, false, errProbe
}
func (p *probeTx) ForEachAPIToken(func(engine.TokenRecord) error) error { return errProbe }
