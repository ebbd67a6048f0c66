// Package boltstore is the embedded engine.Store of reserve: one bbolt file
// holding workshops, reservations and receipts, with a group committer that
// lets concurrent reservations share one durable commit.
//
// It provides primitive reads and writes only; every decision is made by
// package engine. It must not import net/http or any front end.
package boltstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/tracing"
)

// SchemaVersion is the layout version this package writes and understands.
// Each version reads the records of every version before it; opening an
// older file for writing runs the upgrade steps of the versions after it,
// in order, in the transaction that marks it with this version (initSchema),
// after which an older reserved refuses the file with a clear message.
// What each version changed is in docs/architecture.md ("Storage layouts
// and their versions"); a version that changes a stored format adds its row
// there, an upgrade step and a test on records as the earlier version wrote
// them (testdata/schema*.dump).
const SchemaVersion = 14

// The buckets, declared once and created by Open.
var (
	bucketMeta         = []byte("meta")
	bucketWorkshops    = []byte("workshops")
	bucketReservations = []byte("reservations")
	bucketReceipts     = []byte("receipts")
	bucketTokens       = []byte("tokens")
	bucketTombstones   = []byte("tombstones")     // Expired receipts, by actor 0x00 key.
	bucketEvents       = []byte("events")         // The outbox, by event id.
	bucketPending      = []byte("events_pending") // Ids of undelivered events of the simple channels.
	bucketHolds        = []byte("holds")          // Holds, by id.
	bucketOpenHolds    = []byte("holds_open")     // Open holds, by workshop 0x00 deadline id.

	bucketReservationsByActor = []byte("reservations_by_actor") // actor 0x00 reservation id.
	bucketHoldsByActor        = []byte("holds_by_actor")        // actor 0x00 hold id.

	bucketReceiptsByTime   = []byte("receipts_by_time")   // Receipts by creation time (timeindex.go).
	bucketTombstonesByTime = []byte("tombstones_by_time") // Tombstones by creation time (timeindex.go).

	bucketTokensByID = []byte("tokens_by_id") // API tokens: id hash (tokenindex.go).

	bucketReservationsByWorkshop = []byte("reservations_by_workshop") // workshop 0x00 actor 0x00 reservation id.
	bucketHoldsByWorkshop        = []byte("holds_by_workshop")        // workshop 0x00 actor 0x00 hold id.

	bucketKeyedActors = []byte("actors_time_keyed") // Actors with a receipt or tombstone of a time-ordered key (tx.go).

	allBuckets = [][]byte{bucketMeta, bucketWorkshops, bucketReservations, bucketReceipts, bucketTokens,
		bucketTombstones, bucketEvents, bucketPending,
		bucketReceiptsByTime, bucketTombstonesByTime,
		bucketHolds, bucketOpenHolds,
		bucketReservationsByActor, bucketHoldsByActor,
		bucketBindings, bucketBindingsByActor,
		bucketTokensByID,
		bucketReservationsByWorkshop, bucketHoldsByWorkshop,
		bucketProfiles,
		bucketUnrouted, bucketWebhookEndpoints, bucketDeliveries, bucketDeliveriesByState, bucketDeliveriesDue,
		bucketWaitEntries, bucketWaitingEntries, bucketWaitEntriesByWorkshop, bucketWaitEntriesByActor,
		bucketKeyedActors,
		bucketPlaces, bucketOpenHoldsByPerson,
	}

	keySchema = []byte("schema")
)

// ErrClosed is returned by operations on a closed Store, marked
// engine.StoreUnavailable: a request that reaches the store after the
// daemon closed it at shutdown was not decided, and its client retries it
// with the same key against the restarted daemon. Every other failure of
// the file (I/O errors, a full disk) stays internal: retrying does not
// cure it.
var ErrClosed = errors.New("boltstore: store is closed")

// Options tune a Store. The zero value is the production default: durable
// group commit and a one-second wait for the file lock.
type Options struct {
	// LockTimeout bounds the wait for another process's lock on the file.
	// Zero means one second.
	LockTimeout time.Duration
	// NoGroupCommit commits every Update on its own, for comparisons.
	NoGroupCommit bool
	// MaxBatch bounds how many Updates share one commit. Zero means 1024.
	MaxBatch int
	// OnCommit, if set, is told how many Updates shared each successful
	// commit and how many of them were batches (engine.BatchItems), before
	// their callers return (for the daemon's metrics); without group
	// commit calls is always 1.
	OnCommit func(calls, batches int)
	// Tracer, if not nil, gives each commit a span (tracing.SpanCommit)
	// that carries the number of calls it committed, the child of the
	// first call's span and linked to the others'. Nil costs nothing.
	Tracer *tracing.Tracer
	// ReadOnly opens the file without taking the writer's lock exclusively.
	ReadOnly bool
	// AcceptRollback lets Open proceed when one of the file's two meta
	// pages is damaged: the file then opens at the transaction the intact
	// one records, losing the newer one (see Rollback), and the first
	// commit rewrites the damaged page. Without it Open refuses such a file
	// with a *DamageError whose Rollback says what would be lost.
	AcceptRollback bool
	// CommitterNice, if not zero, is the nice value of the group
	// committer's OS thread (Linux only). Every reservation waits for the
	// committer, which spends most of a commit in fdatasync; a negative
	// value lets it run as soon as a sync completes instead of queueing
	// behind request handlers for a CPU. Lowering it needs root or
	// CAP_SYS_NICE; when it cannot be set the committer keeps the process's
	// priority and CommitterNice reports why.
	CommitterNice int
	// InitialMmapSize is how many bytes of the file are mapped when it is
	// opened. Zero means DefaultInitialMmapSize; a negative value maps only
	// what the file holds, so the map grows with the file.
	InitialMmapSize int
}

// Store is an engine.Store on one bbolt file. It is safe for concurrent use.
type Store struct {
	db       *bolt.DB
	path     string
	group    bool
	maxBatch int
	onCommit func(calls, batches int)
	tracer   *tracing.Tracer
	calls    chan call
	loopDone chan struct{}

	// The committer thread's nice value as asked for, and why it could not
	// be set (nil when it was, or when none was asked for).
	nice    int
	niceErr error

	closeMu sync.RWMutex // Held for reading by Update while a call is in flight.
	closed  bool
	created bool // Open created a new file.

	readOnly bool      // Opened with Options.ReadOnly.
	rollback *Rollback // Open accepted a rollback to the older meta page.
	// wroteFreelist reports whether Open wrote a freelist to a file that
	// kept none, and noFreelist why it did not, when it did not.
	wroteFreelist bool
	noFreelist    error

	// damaged is closed, and damage set, when a transaction has met a
	// damaged page; every transaction after it fails with damage.
	damaged    chan struct{}
	damageOnce sync.Once
	damage     error
}

// call is one Update waiting for the group committer.
type call struct {
	fn    func(engine.Tx) error
	err   chan error
	items int // The items of a batch's Update (engine.BatchItems), else 0.
	// caller is the span of the Update's context, when tracing is on.
	caller tracing.Caller
}

// Open opens the database at path, or creates it (mode 0600) if path does
// not exist and opts.ReadOnly is not set. A file locked by another process
// yields "database <path> is in use by another reserved" after
// opts.LockTimeout; a file written by a newer schema is refused. An existing
// file that is empty or not a reserved database is refused with a
// *RefusedError, a damaged one with a *DamageError, and either is left as it
// was.
func Open(path string, opts Options) (*Store, error) {
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = time.Second
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 1024
	}
	pre, err := prepare(path, opts)
	if err != nil {
		return nil, err
	}
	defer pre.release()
	bopts := &bolt.Options{
		Timeout: opts.LockTimeout,
		// Commits leave bbolt's list of free pages out of the file
		// (NoFreelistSync): writing it takes 8 bytes for each free page,
		// and the map freelist sorts it, at every commit (on a file of
		// 3 million reservations, 13,000 free pages: 108 KB and more
		// than a millisecond of CPU a commit). Close writes it in one
		// last commit (keepFreelist), and bbolt's open reads it from a
		// file closed so instead of walking every page of the tree to
		// find the free ones, which takes seconds on a file of millions
		// of reservations. A file that keeps none, because a crash
		// ended the process before Close or an earlier reserved wrote
		// it, gets one written by a writing Open before bbolt reads it,
		// from the walk that verified the file (openfreelist.go); bbolt
		// walks it only when that is not possible, and when it is opened
		// read-only. The map freelist finds a run of free pages of the
		// length a commit needs without scanning them all.
		FreelistType:   bolt.FreelistMapType,
		NoFreelistSync: true,
		ReadOnly:       opts.ReadOnly,
		// A map larger than the file lets it grow without remapping, which
		// would wait for every open read transaction.
		InitialMmapSize: opts.initialMmapSize(),
	}
	if pre.freelist != nil {
		bopts.OpenFile = pre.freelist.openFile(opts.LockTimeout)
	}
	db, err := bolt.Open(path, 0o600, bopts)
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, errInUse(path)
	}
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	if opts.ReadOnly {
		err = db.View(func(tx *bolt.Tx) error { _, err := checkSchema(tx, path); return err })
	} else {
		err = db.Update(func(tx *bolt.Tx) error { return initSchema(tx, path) })
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	s := &Store{db: db, path: path, group: !opts.NoGroupCommit && !opts.ReadOnly, maxBatch: opts.MaxBatch, onCommit: opts.OnCommit, tracer: opts.Tracer,
		created: pre.created, readOnly: opts.ReadOnly, rollback: pre.rollback, damaged: make(chan struct{}), noFreelist: pre.noFreelist}
	if o := pre.freelist; o != nil {
		s.wroteFreelist, s.noFreelist = o.wrote, o.skipped
	}
	if s.group {
		s.calls = make(chan call, opts.MaxBatch)
		s.loopDone = make(chan struct{})
		started := make(chan error)
		go s.commitLoop(opts.CommitterNice, started)
		s.nice, s.niceErr = opts.CommitterNice, <-started
	}
	return s, nil
}

// CommitterNice reports the nice value the group committer's thread was
// given and, if it could not be given, why; the committer then runs at the
// process's priority. Zero and nil mean none was asked for (or there is no
// committer: read-only or without group commit).
func (s *Store) CommitterNice() (int, error) {
	return s.nice, s.niceErr
}

// createSchema records the schema version in a new file and creates every
// bucket.
func createSchema(tx *bolt.Tx, path string) error {
	meta, err := tx.CreateBucket(bucketMeta)
	if err != nil {
		return fmt.Errorf("create bucket meta in %s: %w", path, err)
	}
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], SchemaVersion)
	if err := meta.Put(keySchema, v[:]); err != nil {
		return fmt.Errorf("record schema version in %s: %w", path, err)
	}
	return createBuckets(tx, path)
}

// initSchema refuses a file of a newer schema or of another program, marks
// an older file with the current schema version, creates buckets this
// version declares that an older file lacks, builds the time and actor
// indexes of a file written before version 4 (or that lacks them), and
// runs the upgrade step of each later version in order: upgradeTo6, then
// upgradeTokenIndex for a file written before version 7 (or that lacks
// the token index), then the workshop indexes of a file written before
// version 8 (or that lacks them). A file written before version 10 gets
// the index of unrouted events empty: every event it holds counts as
// routed, so no event decided before the upgrade is sent to a webhook
// endpoint or by mail. A file written before version 11 gets the buckets
// of waiting list entries and their indexes empty: it has no entries. A
// file written before version 12 gets the bucket of actors with a receipt
// of a time-ordered key empty: it has no receipt stored in that form. The
// counts of places by person and the list of open holds by person are
// built for a file written before version 13 (or that lacks them). A file
// written before version 14 needs no step: its hold events are read as
// they are, without their holds' deadlines, so they get no reminder, and
// only the mark keeps an older reserved, which would not know what to do
// with a reminder, from opening it.
func initSchema(tx *bolt.Tx, path string) error {
	v, err := checkSchema(tx, path)
	if err != nil {
		return err
	}
	rebuild := v < 4 || tx.Bucket(bucketReceiptsByTime) == nil || tx.Bucket(bucketTombstonesByTime) == nil
	rebuildActors := v < 4 || tx.Bucket(bucketReservationsByActor) == nil || tx.Bucket(bucketHoldsByActor) == nil
	tokenIndex := v < 7 || tx.Bucket(bucketTokensByID) == nil
	workshopIndexes := v < 8 || tx.Bucket(bucketReservationsByWorkshop) == nil || tx.Bucket(bucketHoldsByWorkshop) == nil
	places := v < 13 || tx.Bucket(bucketPlaces) == nil || tx.Bucket(bucketOpenHoldsByPerson) == nil
	if err := createBuckets(tx, path); err != nil {
		return err
	}
	if rebuild {
		if err := receiptTimes.build(tx, path); err != nil {
			return err
		}
		if err := tombstoneTimes.build(tx, path); err != nil {
			return err
		}
	}
	if rebuildActors {
		if err := reservationActors.build(tx, path); err != nil {
			return err
		}
		if err := holdActors.build(tx, path); err != nil {
			return err
		}
	}
	if v < 6 {
		if err := upgradeTo6(tx, path); err != nil {
			return err
		}
	}
	if tokenIndex {
		if err := upgradeTokenIndex(tx, path); err != nil {
			return err
		}
	}
	if workshopIndexes {
		if err := reservationWorkshops.build(tx, path); err != nil {
			return err
		}
		if err := holdWorkshops.build(tx, path); err != nil {
			return err
		}
	}
	if places {
		if err := buildPlaces(tx, path); err != nil {
			return err
		}
	}
	if v < SchemaVersion {
		var raw [8]byte
		binary.BigEndian.PutUint64(raw[:], SchemaVersion)
		if err := tx.Bucket(bucketMeta).Put(keySchema, raw[:]); err != nil {
			return fmt.Errorf("upgrade schema version of %s from %d to %d: %w", path, v, SchemaVersion, err)
		}
	}
	return nil
}

// createBuckets creates every bucket the file lacks.
func createBuckets(tx *bolt.Tx, path string) error {
	for _, name := range allBuckets {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s in %s: %w", name, path, err)
		}
	}
	return nil
}

// checkSchema returns the schema version of the file, or an error when it
// has none or a newer one than this package understands.
func checkSchema(tx *bolt.Tx, path string) (uint64, error) {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		return 0, &RefusedError{Path: path, Reason: "is a bbolt database without reserved's meta bucket"}
	}
	raw := meta.Get(keySchema)
	if len(raw) != 8 {
		return 0, &RefusedError{Path: path, Reason: "is a bbolt database with no readable schema version"}
	}
	v := binary.BigEndian.Uint64(raw)
	if v > SchemaVersion {
		return 0, fmt.Errorf("database %s has schema version %d, newer than this reserved understands (%d): upgrade reserved", path, v, SchemaVersion)
	}
	return v, nil
}

// GroupCommit reports whether concurrent Updates share commits: not with
// Options.NoGroupCommit, and not on a read-only store.
func (s *Store) GroupCommit() bool { return s.group }

// Created reports whether Open created a new file.
func (s *Store) Created() bool { return s.created }

// String names the database file.
func (s *Store) String() string { return "database " + s.path }

// Path returns the file the store was opened on.
func (s *Store) Path() string { return s.path }

// DB returns the underlying bbolt handle, for tools that stream or inspect
// the file.
func (s *Store) DB() *bolt.DB { return s.db }

// Update implements engine.Store. With group commit, concurrent Updates are
// run one after the other inside a single bbolt transaction and share its
// fsync; a function that fails is taken out and the rest run again, so fn
// may be called more than once.
func (s *Store) Update(ctx context.Context, fn func(engine.Tx) error) error {
	leave, err := s.enter(ctx)
	if err != nil {
		return err
	}
	defer leave()
	if !s.group {
		var span tracing.Span
		if s.tracer != nil {
			span = s.tracer.Commit(storeName, []tracing.Caller{s.tracer.CallerOf(ctx)})
		}
		err := s.guarded(func() error {
			return s.db.Update(func(btx *bolt.Tx) error { return s.safeCall(fn, &tx{b: btx}) })
		})
		span.EndCommit(err)
		if err == nil && s.onCommit != nil {
			s.onCommit(1, batches(engine.BatchItems(ctx)))
		}
		return err
	}
	c := call{fn: fn, err: make(chan error, 1), items: engine.BatchItems(ctx)}
	if s.tracer != nil {
		c.caller = s.tracer.CallerOf(ctx)
	}
	s.calls <- c
	return <-c.err
}

// View implements engine.Store with a bbolt read transaction, which never
// waits for the writer.
func (s *Store) View(ctx context.Context, fn func(engine.Tx) error) error {
	leave, err := s.enter(ctx)
	if err != nil {
		return err
	}
	defer leave()
	return s.guarded(func() error {
		return s.db.View(func(btx *bolt.Tx) error { return fn(&tx{b: btx}) })
	})
}

// enter admits one transaction unless ctx is done or the store is closed or
// damaged; Close waits until every admitted transaction has called leave.
func (s *Store) enter(ctx context.Context) (leave func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.closeMu.RLock()
	if s.closed {
		s.closeMu.RUnlock()
		return nil, engine.StoreUnavailable(ErrClosed)
	}
	if err := s.Damage(); err != nil {
		s.closeMu.RUnlock()
		return nil, err
	}
	return s.closeMu.RUnlock, nil
}

// Check reports broken invariants: the engine's (counters, receipts,
// reservations, capacity, bindings) and the file's own (every entry of the
// time indexes names its record at its time, and every record has its
// entry; every entry of the index of bound actors names its binding; the
// indexes of deliveries list each delivery by its state and, while it is
// pending, by when it is due; every unrouted event exists; the indexes
// of waiting list entries list each entry by workshop, by actor and,
// while it waits, in its workshop's queue). A
// damaged page is a *DamageError, not a finding:
// the file's structure is walked by Open, and again here on a writable store.
// (bbolt's own Tx.Check is not used: it panics in a goroutine of its own,
// which no caller can recover, when the file keeps no freelist and a page
// is damaged.)
func (s *Store) Check(ctx context.Context) ([]engine.Finding, error) {
	if err := s.verifyPages(ctx); err != nil {
		return nil, err
	}
	findings, err := engine.Check(ctx, s)
	if err == nil {
		var more []engine.Finding
		more, err = s.checkTimeIndexes(ctx)
		findings = append(findings, more...)
	}
	var de *DamageError
	if errors.As(err, &de) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("check %s: %w", s.path, err)
	}
	return findings, nil
}

// checkTimeIndexes reports the differences between the records and their
// indexes: by time, actor, workshop, token id, bound actor, delivery and
// waiting list entry.
func (s *Store) checkTimeIndexes(ctx context.Context) (findings []engine.Finding, err error) {
	err = s.View(ctx, func(etx engine.Tx) error {
		t := etx.(*tx)
		for _, verify := range []func(*tx) ([]engine.Finding, error){receiptTimes.verify, tombstoneTimes.verify, reservationActors.verify, holdActors.verify, reservationWorkshops.verify, holdWorkshops.verify, verifyBindingIndex, verifyTokenIndex, verifyDeliveryIndexes, waitEntryActors.verify, verifyWaitIndexes, verifyKeyedActors, verifyPlaces} {
			more, err := verify(t)
			if err != nil {
				return err
			}
			findings = append(findings, more...)
		}
		return nil
	})
	return findings, err
}

// Close waits for Updates in flight, stops the committer, writes bbolt's
// list of free pages for the next Open (keepFreelist) and closes the file.
func (s *Store) Close() error {
	s.closeMu.Lock()
	if s.closed {
		s.closeMu.Unlock()
		return nil
	}
	s.closed = true
	s.closeMu.Unlock()
	if s.group {
		close(s.calls)
		<-s.loopDone
	}
	err := s.keepFreelist()
	if cerr := s.db.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close database %s: %w", s.path, cerr)
	}
	return err
}

// keepFreelist writes bbolt's list of free pages to the file in a commit
// of its own, so that the next Open reads it instead of walking every page
// of the tree; the first commit after that open drops it again. Like every
// commit, it writes the list to pages of its own and syncs them before the
// meta page that names them: a crash before the meta page is written
// leaves the older meta page, without a list, and the next Open walks.
// Nothing else may use the store meanwhile. A read-only store cannot write
// the list, and a damaged one writes nothing more.
func (s *Store) keepFreelist() error {
	if s.readOnly || s.Damage() != nil {
		return nil
	}
	s.db.NoFreelistSync = false
	err := s.guarded(func() error { return s.db.Update(func(*bolt.Tx) error { return nil }) })
	if err != nil {
		return fmt.Errorf("close database %s: write its list of free pages: %w", s.path, err)
	}
	return nil
}

// commitLoop is the group committer: it takes every call waiting at the
// moment, runs them in one transaction and answers them after the commit.
// While a commit is being synced, new calls queue up for the next one, so the
// batch size follows the load without any added delay.
//
// With a nice value it runs on an OS thread of its own with that priority,
// and reports on started whether the priority was set. The thread is never
// unlocked, so when the loop ends Go terminates it instead of handing a
// thread of raised priority to other goroutines.
func (s *Store) commitLoop(nice int, started chan<- error) {
	defer close(s.loopDone)
	var err error
	if nice != 0 {
		runtime.LockOSThread()
		var restore func()
		if restore, err = setThreadNice(nice); err != nil {
			runtime.UnlockOSThread() // Nothing to keep it apart for.
		} else {
			// Go cannot end the process's main thread; if the loop runs
			// there, the thread is parked for good when the loop ends, and
			// gets its priority back first.
			defer restore()
		}
	}
	started <- err
	batch := make([]call, 0, s.maxBatch)
	for c := range s.calls {
		batch = append(batch[:0], c)
		items := c.items
	fill:
		for len(batch) < s.maxBatch && items < maxCommitItems {
			select {
			case c, ok := <-s.calls:
				if !ok {
					break fill
				}
				batch = append(batch, c)
				items += c.items
			default:
				break fill
			}
		}
		s.commit(batch)
	}
}

// batches counts a batch's Update (one of items items) as one.
func batches(items int) int {
	if items > 0 {
		return 1
	}
	return 0
}

// maxCommitItems bounds the reservations one group commit takes from
// batches: a commit takes a batch whatever its size, but no more calls
// once its batches hold this many items, so that a commit (its memory, its
// latency, and the work a failing call makes the others do again) stays
// bounded when the calls are batches of up to 1,000 items each.
const maxCommitItems = 10_000

// commit runs batch in one transaction. A call whose function fails is
// answered with its error (its writes were rolled back with the transaction)
// and the others run again without it.
func (s *Store) commit(batch []call) {
	var span tracing.Span
	if s.tracer != nil {
		span = s.commitSpan(batch)
	}
	// The calls that failed are answered once the span has ended, like the
	// others, so that a caller's trace is whole once it has its answer.
	var failures []failure
	defer func() {
		for _, f := range failures {
			f.c.err <- f.err
		}
	}()
	for len(batch) > 0 {
		if damage := s.Damage(); damage != nil {
			// Once damage is met the file is not touched again: every
			// call of the batch gets the damage, and so does every call
			// queued before it was met.
			span.EndCommit(damage)
			for _, c := range batch {
				c.err <- damage
			}
			return
		}
		failed := -1
		var failErr error
		err := s.guarded(func() error {
			return s.db.Update(func(btx *bolt.Tx) error {
				t := &tx{b: btx}
				for i, c := range batch {
					if err := s.safeCall(c.fn, t); err != nil {
						failed, failErr = i, err
						return err
					}
				}
				return nil
			})
		})
		if s.Damage() != nil {
			continue
		}
		if failed >= 0 {
			failures = append(failures, failure{batch[failed], failErr})
			batch = append(batch[:failed:failed], batch[failed+1:]...)
			continue
		}
		// Told before anyone is answered, so that whoever has an answer
		// also sees the commit in the metric.
		if err == nil && s.onCommit != nil {
			n := 0
			for _, c := range batch {
				n += batches(c.items)
			}
			s.onCommit(len(batch), n)
		}
		// Ended before anyone is answered too, so that a request's
		// trace is whole once its answer is sent.
		span.EndCommit(err)
		for _, c := range batch {
			c.err <- err
		}
		return
	}
	// Every call failed: the transaction committed nothing, and the span
	// still ends.
	span.EndCommit(nil)
}

// failure is a call whose function failed, and its error.
type failure struct {
	c   call
	err error
}

// storeName names this store in the spans of its commits.
const storeName = "bbolt"

// commitSpan starts the span of the commit of batch, as it is when it
// starts (calls that fail are answered and taken out later).
func (s *Store) commitSpan(batch []call) tracing.Span {
	callers := make([]tracing.Caller, len(batch))
	for i, c := range batch {
		callers[i] = c.caller
	}
	return s.tracer.Commit(storeName, callers)
}

// safeCall runs fn and turns a panic into an error, so one bad call cannot
// take down the committer and every caller waiting on it; a panic of bbolt's
// on a damaged page marks the store damaged.
func (s *Store) safeCall(fn func(engine.Tx) error, t *tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			if isDamage(p) {
				err = s.markDamaged(p)
				return
			}
			err = fmt.Errorf("panic in transaction: %v", p)
		}
	}()
	return fn(t)
}
