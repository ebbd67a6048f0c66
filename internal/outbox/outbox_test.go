package outbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/outbox"
	"github.com/reserve/reserve/internal/paths/pathstest"
)

// receiver is an HTTP endpoint that counts the events it is sent by id.
type receiver struct {
	mu    sync.Mutex
	seen  map[string]int
	fail  bool
	posts int
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var p engine.EventPayload
	r.mu.Lock()
	defer r.mu.Unlock()
	r.posts++
	if r.fail {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	id := req.Header.Get("Idempotency-Key")
	if err := json.Unmarshal(body, &p); err != nil || p.ID != id || req.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "bad event", http.StatusBadRequest)
		return
	}
	r.seen[id]++
}

func (r *receiver) snapshot() (seen map[string]int, posts int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen = map[string]int{}
	for k, v := range r.seen {
		seen[k] = v
	}
	return seen, r.posts
}

func (r *receiver) setFail(fail bool) {
	r.mu.Lock()
	r.fail = fail
	r.mu.Unlock()
}

// setup returns an engine with two reservations and one cancellation
// committed (three events), and a receiver.
func setup(t *testing.T) (*engine.Engine, *receiver, *httptest.Server) {
	t.Helper()
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "r.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	eng := engine.New(store)
	ctx := context.Background()
	if _, _, err := eng.PutWorkshop(ctx, "go", engine.WorkshopSpec{Capacity: 5}, nil); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 2 {
		out, err := eng.Reserve(ctx, "alice", engine.OperationKey(uuid.NewString()), engine.Request{Workshop: "go", Quantity: 1})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, out.Answer.ReservationID)
	}
	if _, err := eng.Cancel(ctx, engine.Principal{Actor: "alice"}, engine.OperationKey(uuid.NewString()), ids[0]); err != nil {
		t.Fatal(err)
	}
	rcv := &receiver{seen: map[string]int{}}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	return eng, rcv, srv
}

func pendingIDs(t *testing.T, eng *engine.Engine) []string {
	t.Helper()
	evs, err := eng.PendingEvents(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ev := range evs {
		ids = append(ids, ev.ID)
	}
	return ids
}

func TestDeliversEveryEventOnceByIDAndToFiles(t *testing.T) {
	eng, rcv, srv := setup(t)
	ctx := context.Background()
	want := pendingIDs(t, eng)
	if len(want) != 3 {
		t.Fatalf("pending = %v, want 3 events", want)
	}
	dir := filepath.Join(t.TempDir(), "events")
	m := outbox.NewMetrics()
	d, err := outbox.New(outbox.Config{Engine: eng, URL: srv.URL, Dir: dir}, m)
	if err != nil {
		t.Fatal(err)
	}
	// A crash between delivery and marking: the first event is delivered
	// but not marked, so the next pass delivers the same id again.
	crashed := false
	d.SetAfterDeliver(func(ev engine.Event) error {
		if !crashed {
			crashed = true
			return io.ErrUnexpectedEOF
		}
		return nil
	})
	if n, err := d.Pass(ctx); err == nil || n != 0 {
		t.Fatalf("pass with a crash before marking = %d, %v", n, err)
	}
	if got := pendingIDs(t, eng); len(got) != 3 {
		t.Fatalf("pending after the crash = %v, want all 3", got)
	}
	if n, err := d.Pass(ctx); err != nil || n != 3 {
		t.Fatalf("second pass = %d, %v", n, err)
	}
	seen, posts := rcv.snapshot()
	if len(seen) != 3 || posts != 4 || seen[want[0]] != 2 {
		t.Fatalf("receiver saw %v in %d posts; want the 3 events, the first one twice", seen, posts)
	}
	for _, id := range want {
		if seen[id] == 0 {
			t.Errorf("event %s was not delivered", id)
		}
		data, err := os.ReadFile(filepath.Join(dir, id+".json"))
		var p engine.EventPayload
		if err != nil || json.Unmarshal(data, &p) != nil || p.ID != id {
			t.Errorf("file of event %s: %q, %v", id, data, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		t.Errorf("directory holds %d entries, want exactly the 3 event files", len(entries))
	}
	if got := pendingIDs(t, eng); len(got) != 0 {
		t.Fatalf("pending after delivery = %v", got)
	}
	if n, err := d.Pass(ctx); err != nil || n != 0 {
		t.Fatalf("pass with nothing pending = %d, %v", n, err)
	}
	if value(m.Deliveries) != 3 || value(m.Backlog) != 0 {
		t.Fatalf("metrics: deliveries %v backlog %v", value(m.Deliveries), value(m.Backlog))
	}
}

func TestRetriesWithBackoffUntilTheReceiverRecovers(t *testing.T) {
	eng, rcv, srv := setup(t)
	rcv.setFail(true)
	m := outbox.NewMetrics()
	d, err := outbox.New(outbox.Config{Engine: eng, URL: srv.URL, Poll: time.Millisecond, MinBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond}, m)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	waitFor(t, "three failed attempts", func() bool { return value(m.Failures) >= 3 })
	if got := pendingIDs(t, eng); len(got) != 3 {
		t.Fatalf("pending while the receiver fails = %v", got)
	}
	rcv.setFail(false)
	d.Wake()
	waitFor(t, "every event delivered", func() bool { return len(pendingIDs(t, eng)) == 0 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	seen, _ := rcv.snapshot()
	if len(seen) != 3 {
		t.Fatalf("receiver saw %v", seen)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("event %s accepted %d times", id, n)
		}
	}
}

func TestNeedsATarget(t *testing.T) {
	eng, _, _ := setup(t)
	if _, err := outbox.New(outbox.Config{Engine: eng}, nil); err == nil {
		t.Fatal("a dispatcher without URL or directory was accepted")
	}
}

// waitFor polls cond until it holds, failing the test after a generous
// deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// value reads a gauge or counter.
func value(m prometheus.Metric) float64 {
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		return -1
	}
	if out.Counter != nil {
		return out.Counter.GetValue()
	}
	return out.Gauge.GetValue()
}

// TestRedirectIsNotADelivery: a receiver that answers 303, pointing at a
// server that answers 200 to anything, has not received the event, so it
// stays pending.
func TestRedirectIsNotADelivery(t *testing.T) {
	eng, _, _ := setup(t)
	anything := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	t.Cleanup(anything.Close)
	redirect := httptest.NewServer(http.RedirectHandler(anything.URL, http.StatusSeeOther))
	t.Cleanup(redirect.Close)
	d, err := outbox.New(outbox.Config{Engine: eng, URL: redirect.URL}, outbox.NewMetrics())
	if err != nil {
		t.Fatal(err)
	}
	before := pendingIDs(t, eng)
	if n, err := d.Pass(context.Background()); err == nil || n != 0 {
		t.Fatalf("pass against a redirect = %d delivered, %v; want none and an error", n, err)
	}
	if after := pendingIDs(t, eng); len(after) != len(before) {
		t.Fatalf("pending after a redirect = %v, want %v", after, before)
	}
}

// plant writes a small file dir/name, last modified age ago.
func plant(t *testing.T, dir, name string, age time.Duration) {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(`{"id":"half`), 0o600); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-age)
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
}

// exists reports whether dir/name exists.
func exists(dir, name string) bool {
	_, err := os.Lstat(filepath.Join(dir, name))
	return err == nil
}

// TestRemovesStaleTemporaryFiles: a daemon killed while it writes an event
// file leaves <event id>.json.tmp-* behind. Run removes those last written
// StaleTempAge ago or earlier when it starts, and again every StaleTempAge;
// a younger one may be another daemon's write in progress and is kept, and
// so is every other file.
func TestRemovesStaleTemporaryFiles(t *testing.T) {
	eng, _, _ := setup(t)
	dir := t.TempDir()
	const stale, young = "0190a1b2c3d4e5f60718293a4b5c6d7e.json.tmp-2367901841", "0190a1b2c3d4e5f60718293a4b5c6d7f.json.tmp-00c0ffee00c0ffee"
	others := []string{"notes.txt.tmp-1", "mine.json.tmp-draft", "0190a1b2c3d4e5f60718293a4b5c6d80.json"}
	plant(t, dir, stale, 2*time.Hour)
	plant(t, dir, young, time.Second)
	for _, name := range others {
		plant(t, dir, name, 2*time.Hour)
	}
	const age = time.Hour
	d, err := outbox.New(outbox.Config{Engine: eng, Dir: dir, Poll: time.Millisecond, StaleTempAge: age}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	// The leftovers are removed before the first pass delivers anything.
	waitFor(t, "every event delivered", func() bool { return len(pendingIDs(t, eng)) == 0 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if exists(dir, stale) {
		t.Errorf("the stale temporary file %s is still there", stale)
	}
	for _, name := range append(others, young) {
		if !exists(dir, name) {
			t.Errorf("%s was removed", name)
		}
	}

	// Later sweeps remove what has grown old since.
	d, err = outbox.New(outbox.Config{Engine: eng, Dir: dir, Poll: time.Millisecond, StaleTempAge: 20 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	go func() { done <- d.Run(ctx) }()
	const later = "0190a1b2c3d4e5f60718293a4b5c6d81.json.tmp-1"
	waitFor(t, "the first sweep", func() bool { return !exists(dir, young) })
	plant(t, dir, later, 0)
	waitFor(t, "a later sweep", func() bool { return !exists(dir, later) })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, name := range others {
		if !exists(dir, name) {
			t.Errorf("%s was removed", name)
		}
	}
}

// TestDeliversIntoTheReceiversDirectory: the delivery directory may belong
// to the receiver of the events rather than to the daemon; the ownership
// rule of a program's own files does not apply to it. Giving it to another
// user needs root.
func TestDeliversIntoTheReceiversDirectory(t *testing.T) {
	pathstest.NeedRoot(t)
	eng, _, _ := setup(t)
	dir := filepath.Join(t.TempDir(), "events")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, pathstest.ForeignUID, pathstest.ForeignUID); err != nil {
		t.Fatal(err)
	}
	d, err := outbox.New(outbox.Config{Engine: eng, Dir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := d.Pass(context.Background()); err != nil || n != 3 {
		t.Fatalf("delivery into a directory of uid %d = %d, %v; want 3 events", pathstest.ForeignUID, n, err)
	}
}

// hungStore is a store whose reads wait until their context ends, as on a
// connection to a database server that stopped.
type hungStore struct{ engine.Store }

func (hungStore) View(ctx context.Context, fn func(engine.Tx) error) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestPassOnAHungStoreIsBounded: a pass run on a context without a
// deadline, as the daemon's is, gives up on a store that hangs instead of
// waiting for ever, so that the next pass can reach a store that answers.
func TestPassOnAHungStoreIsBounded(t *testing.T) {
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "r.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	d, err := outbox.New(outbox.Config{Engine: engine.New(hungStore{store}), Dir: t.TempDir(), StoreTimeout: 50 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := d.Pass(context.Background())
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Pass on a hung store = %v, want its bound (context.DeadlineExceeded)", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Pass on a hung store still waits after 30s")
	}
}
