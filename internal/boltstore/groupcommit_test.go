package boltstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
)

// holdWriter runs an Update that blocks inside its transaction until the
// returned release is called, so the bbolt writer is provably taken.
func holdWriter(t *testing.T, s *boltstore.Store) (release func()) {
	t.Helper()
	inside, hold := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.Update(context.Background(), func(engine.Tx) error {
			close(inside)
			<-hold
			return nil
		})
	}()
	<-inside
	var once sync.Once
	release = func() {
		once.Do(func() {
			close(hold)
			if err := <-done; err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(release)
	return release
}

// waitQueued returns once n Updates wait in s's group committer's queue.
func waitQueued(t *testing.T, s *boltstore.Store, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for boltstore.QueuedUpdates(s) < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d updates queued", boltstore.QueuedUpdates(s), n)
		}
		time.Sleep(time.Millisecond) // Polling a queue length, with a deadline.
	}
}

// within waits for ch up to a generous deadline; it proves that something
// does not wait for a held lock, without measuring how fast it is.
func within(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not finish while the writer was held", what)
	}
}

func TestReplayDoesNotWaitForWriter(t *testing.T) {
	s := mustOpen(t, boltstore.Options{})
	eng := engine.New(s)
	ctx := context.Background()
	if _, _, err := eng.PutWorkshop(ctx, "go-basics", engine.WorkshopSpec{Capacity: 3}, nil); err != nil {
		t.Fatal(err)
	}
	key := engine.OperationKey(uuid.NewString())
	req := engine.Request{Workshop: "go-basics", Quantity: 1}
	first, err := eng.Reserve(ctx, "alice", key, req)
	if err != nil {
		t.Fatal(err)
	}
	holdWriter(t, s)
	done := make(chan struct{})
	var again engine.Outcome
	go func() {
		defer close(done)
		again, err = eng.Reserve(ctx, "alice", key, req)
	}()
	within(t, done, "a replay")
	if err != nil || !again.Replayed || string(again.Answer.JSON()) != string(first.Answer.JSON()) {
		t.Fatalf("replay under a held writer = %+v, %v", again, err)
	}
}

func TestConcurrentReservationsShareOneCommit(t *testing.T) {
	batches := commitSizes(t, boltstore.Options{}, 10)
	// The workshop, the held update, then one commit for all ten.
	if want := []int{1, 1, 10}; fmt.Sprint(batches) != fmt.Sprint(want) {
		t.Fatalf("commit sizes %v, want %v: the ten queued reservations did not share one commit", batches, want)
	}
}

func TestNoGroupCommitCommitsAlone(t *testing.T) {
	batches := commitSizes(t, boltstore.Options{NoGroupCommit: true}, 10)
	if want := []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}; fmt.Sprint(batches) != fmt.Sprint(want) {
		t.Fatalf("commit sizes %v, want %v", batches, want)
	}
}

// commitSizes creates a workshop, holds the writer while n reservations
// queue up behind it, releases it and returns the size of every commit.
func commitSizes(t *testing.T, opts boltstore.Options, n int) []int {
	t.Helper()
	var mu sync.Mutex
	var batches []int
	opts.OnCommit = func(n, _ int) {
		mu.Lock()
		defer mu.Unlock()
		batches = append(batches, n)
	}
	s := mustOpen(t, opts)
	eng := engine.New(s)
	ctx := context.Background()
	if _, _, err := eng.PutWorkshop(ctx, "go-basics", engine.WorkshopSpec{Capacity: 100, MaxQuantity: 1}, nil); err != nil {
		t.Fatal(err)
	}
	release := holdWriter(t, s)
	var queued sync.WaitGroup
	var wg sync.WaitGroup
	queued.Add(n)
	for range n {
		wg.Go(func() {
			// Each reservation is queued once its lookup of the receipt has
			// found none; the hook signals that moment.
			out, err := engine.New(&signalOnUpdate{Store: s, once: queued.Done}).Reserve(ctx, "alice", engine.OperationKey(uuid.NewString()), engine.Request{Workshop: "go-basics", Quantity: 1})
			if err != nil || out.Answer.Status != engine.StatusReserved {
				t.Errorf("reserve: %+v, %v", out, err)
			}
		})
	}
	queued.Wait()
	// Without group commit there is no queue: every Update is its own bbolt
	// transaction whenever it gets the writer, so there is nothing to wait
	// for. With it, wait until all n sit in the committer's queue.
	if !opts.NoGroupCommit {
		waitQueued(t, s, n)
	}
	release()
	wg.Wait()
	w, err := eng.Workshop(ctx, "go-basics")
	if err != nil || w.Reserved != n {
		t.Fatalf("workshop after the reservations: %+v, %v", w, err)
	}
	mu.Lock()
	defer mu.Unlock()
	return batches
}

// signalOnUpdate calls once when an Update is about to be handed to the
// store.
type signalOnUpdate struct {
	*boltstore.Store
	once func()
}

func (s *signalOnUpdate) Update(ctx context.Context, fn func(engine.Tx) error) error {
	s.once()
	return s.Store.Update(ctx, fn)
}

// TestCommitCountsBatches: concurrent batches and single reservations
// share group commits, and OnCommit counts the batches among the Updates
// of each commit.
func TestCommitCountsBatches(t *testing.T) {
	var mu sync.Mutex
	var calls, batches, commits int
	s := mustOpen(t, boltstore.Options{OnCommit: func(c, b int) {
		mu.Lock()
		defer mu.Unlock()
		calls, batches, commits = calls+c, batches+b, commits+1
	}})
	ctx := context.Background()
	eng := engine.New(s)
	if _, _, err := eng.PutWorkshop(ctx, "go-basics", engine.WorkshopSpec{Capacity: 100, MaxQuantity: 1}, nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	calls, batches, commits = 0, 0, 0
	mu.Unlock()
	release := holdWriter(t, s)
	var queued, wg sync.WaitGroup
	queued.Add(4)
	queuing := engine.New(&signalOnUpdate{Store: s, once: queued.Done})
	for i := range 4 {
		wg.Go(func() {
			if i == 0 {
				if _, err := queuing.Reserve(ctx, "alice", engine.OperationKey(uuid.NewString()), engine.Request{Workshop: "go-basics", Quantity: 1}); err != nil {
					t.Error(err)
				}
				return
			}
			entries := []engine.BatchEntry{
				{Key: engine.OperationKey(uuid.NewString()), Request: engine.Request{Workshop: "go-basics", Quantity: 1}},
				{Key: engine.OperationKey(uuid.NewString()), Request: engine.Request{Workshop: "go-basics", Quantity: 1}},
			}
			if res, err := queuing.Batch(ctx, "bob", entries, i == 3); err != nil || res.Refused {
				t.Errorf("batch: %+v, %v", res, err)
			}
		})
	}
	queued.Wait()
	release()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	// The Update that held the writer is one more call, and a commit of
	// its own.
	if calls != 5 || batches != 3 || commits < 2 || commits > 5 {
		t.Errorf("%d commits of %d calls with %d batches; want 5 calls with 3 batches", commits, calls, batches)
	}
	if w, err := eng.Workshop(ctx, "go-basics"); err != nil || w.Reserved != 7 {
		t.Errorf("workshop = %+v, %v", w, err)
	}
}

// TestCommitBoundedByItems: batches queued behind a held writer share
// commits of at most about 10,000 items: 12 batches of 1,000 take at least
// two commits, none with more than 10 of them.
func TestCommitBoundedByItems(t *testing.T) {
	var mu sync.Mutex
	var perCommit []int
	s := mustOpen(t, boltstore.Options{OnCommit: func(_, b int) {
		mu.Lock()
		defer mu.Unlock()
		if b > 0 {
			perCommit = append(perCommit, b)
		}
	}})
	ctx := context.Background()
	if _, _, err := engine.New(s).PutWorkshop(ctx, "go-basics", engine.WorkshopSpec{Capacity: 100_000, MaxQuantity: 1}, nil); err != nil {
		t.Fatal(err)
	}
	release := holdWriter(t, s)
	var queued, wg sync.WaitGroup
	queued.Add(12)
	queuing := engine.New(&signalOnUpdate{Store: s, once: queued.Done})
	for range 12 {
		wg.Go(func() {
			entries := make([]engine.BatchEntry, engine.MaxBatchItems)
			for i := range entries {
				entries[i] = engine.BatchEntry{Key: engine.OperationKey(uuid.NewString()), Request: engine.Request{Workshop: "go-basics", Quantity: 1}}
			}
			if _, err := queuing.Batch(ctx, "bob", entries, false); err != nil {
				t.Error(err)
			}
		})
	}
	queued.Wait()
	release()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	total := 0
	for _, b := range perCommit {
		total += b
		if b > 10 {
			t.Errorf("a commit took %d batches of 1,000", b)
		}
	}
	if total != 12 || len(perCommit) < 2 {
		t.Errorf("batches per commit %v, want 12 in at least two commits", perCommit)
	}
}
