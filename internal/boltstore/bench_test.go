package boltstore_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/engine/enginetest"
	"github.com/reserve/reserve/internal/seed"
)

// The benchmarks measure durable commits on a real file. They report
// reservations/s and, for concurrent runs, latency percentiles; the ratios
// between them are what docs/benchmarks.md records.

const benchClients = 64

func benchEngine(b *testing.B, opts boltstore.Options) *engine.Engine {
	b.Helper()
	eng := engine.New(mustOpen(b, opts))
	if _, _, err := eng.PutWorkshop(context.Background(), "bench", engine.WorkshopSpec{Capacity: 1_000_000_000, MaxQuantity: 1}, nil); err != nil {
		b.Fatal(err)
	}
	return eng
}

// keys returns n new operation keys as reservectl and the pages make
// them: time-ordered UUIDv7s.
func keys(n int) []engine.OperationKey {
	ks := make([]engine.OperationKey, n)
	for i := range ks {
		ks[i] = engine.OperationKey(uuid.Must(uuid.NewV7()).String())
	}
	return ks
}

// randomKeys returns n random UUIDv4 operation keys, as earlier clients and
// many other programs make them.
func randomKeys(n int) []engine.OperationKey {
	ks := make([]engine.OperationKey, n)
	for i := range ks {
		ks[i] = engine.OperationKey(uuid.NewString())
	}
	return ks
}

// runClients runs op(i) for i in [0, b.N) on clients goroutines, records each
// call's latency and reports throughput and percentiles.
func runClients(b *testing.B, clients int, op func(i int) error) {
	b.Helper()
	lat := make([]time.Duration, b.N)
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	b.ResetTimer()
	for range clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= b.N {
					return
				}
				start := time.Now()
				if err := op(i); err != nil {
					failed.Store(err)
					return
				}
				lat[i] = time.Since(start)
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reservations/s")
	if clients > 1 {
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
}

func reserveNew(eng *engine.Engine, ks []engine.OperationKey, workshop string) func(i int) error {
	return func(i int) error {
		out, err := eng.Reserve(context.Background(), "bench", ks[i], engine.Request{Workshop: workshop, Quantity: 1})
		if err == nil && (out.Answer.Status != engine.StatusReserved || out.Replayed) {
			err = engine.Errorf(engine.CodeInternal, "unexpected outcome %q replayed=%v", out.Answer.Status, out.Replayed)
		}
		return err
	}
}

// BenchmarkReserveSerial is one client making new reservations, one commit
// each.
func BenchmarkReserveSerial(b *testing.B) {
	eng := benchEngine(b, boltstore.Options{})
	runClients(b, 1, reserveNew(eng, keys(b.N), "bench"))
}

// BenchmarkReserveParallel64 is 64 clients making new reservations on one
// workshop, sharing group commits.
func BenchmarkReserveParallel64(b *testing.B) {
	eng := benchEngine(b, boltstore.Options{})
	runClients(b, benchClients, reserveNew(eng, keys(b.N), "bench"))
}

// BenchmarkReserveParallel64RandomKeys is BenchmarkReserveParallel64 with
// random UUIDv4 keys.
func BenchmarkReserveParallel64RandomKeys(b *testing.B) {
	eng := benchEngine(b, boltstore.Options{})
	runClients(b, benchClients, reserveNew(eng, randomKeys(b.N), "bench"))
}

// BenchmarkReserveParallel64NoGroupCommit is the same load with one commit
// per reservation.
func BenchmarkReserveParallel64NoGroupCommit(b *testing.B) {
	eng := benchEngine(b, boltstore.Options{NoGroupCommit: true})
	runClients(b, benchClients, reserveNew(eng, keys(b.N), "bench"))
}

// BenchmarkReplay64 is 64 clients repeating 1,000 settled intents: every
// answer comes from a receipt in a read transaction.
func BenchmarkReplay64(b *testing.B) {
	eng := benchEngine(b, boltstore.Options{})
	ks := keys(1000)
	if err := runSetup(benchClients, len(ks), reserveNew(eng, ks, "bench")); err != nil {
		b.Fatal(err)
	}
	runClients(b, benchClients, func(i int) error {
		out, err := eng.Reserve(context.Background(), "bench", ks[i%len(ks)], engine.Request{Workshop: "bench", Quantity: 1})
		if err == nil && !out.Replayed {
			err = engine.Errorf(engine.CodeInternal, "not a replay")
		}
		return err
	})
}

// runSetup runs op(i) for i in [0, n) on clients goroutines, untimed.
func runSetup(clients, n int, op func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := op(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// hot1M is the database of BenchmarkReserveHot1M, generated once per test
// binary run because it takes a while.
var hot1M struct {
	once  sync.Once
	dir   string
	store *boltstore.Store
	eng   *engine.Engine
	err   error
}

// BenchmarkReserveHot1M is BenchmarkReserveParallel64 on a workshop that
// already holds 1,000,000 reservations (with their receipts).
func BenchmarkReserveHot1M(b *testing.B) {
	if testing.Short() {
		b.Skip("skipped under -short: generating 1M reservations takes a while")
	}
	hot1M.once.Do(func() {
		hot1M.dir, hot1M.err = os.MkdirTemp("", "reserve-hot1m-")
		if hot1M.err != nil {
			return
		}
		hot1M.store, hot1M.err = boltstore.Open(filepath.Join(hot1M.dir, "hot.db"), boltstore.Options{})
		if hot1M.err != nil {
			return
		}
		hot1M.eng = engine.New(hot1M.store)
		start := time.Now()
		hot1M.err = seed.Run(context.Background(), hot1M.eng, seed.Plan{Workshops: []string{"hot"}, PerWorkshop: 1_000_000})
		b.Logf("generated 1M reservations in %v", time.Since(start).Round(time.Second))
	})
	if hot1M.err != nil {
		b.Fatal(hot1M.err)
	}
	runClients(b, benchClients, reserveNew(hot1M.eng, keys(b.N), "hot"))
}

func cleanupHot1M() {
	if hot1M.store != nil {
		hot1M.store.Close()
	}
	if hot1M.dir != "" {
		os.RemoveAll(hot1M.dir)
	}
}

// BenchmarkBatch100Parallel16 is 16 clients making batches of 100 new
// reservations on one workshop through the engine alone (no HTTP), sharing
// group commits; one op is one batch, reservations/s counts items and the
// percentiles are those of a batch. What limits it is the group committer:
// its items per second.
func BenchmarkBatch100Parallel16(b *testing.B) {
	benchBatches(b, keys(b.N*100))
}

// BenchmarkBatch100Parallel16RandomKeys is BenchmarkBatch100Parallel16 with
// random UUIDv4 keys.
func BenchmarkBatch100Parallel16RandomKeys(b *testing.B) {
	benchBatches(b, randomKeys(b.N*100))
}

func benchBatches(b *testing.B, ks []engine.OperationKey) {
	const items = 100
	eng := benchEngine(b, boltstore.Options{})
	runClients(b, 16, func(i int) error {
		entries := make([]engine.BatchEntry, items)
		for j := range entries {
			entries[j] = engine.BatchEntry{Key: ks[i*items+j], Request: engine.Request{Workshop: "bench", Quantity: 1}}
		}
		res, err := eng.Batch(context.Background(), "bench", entries, false)
		if err == nil && res.Items[0].Outcome.Answer.Status != engine.StatusReserved {
			err = engine.Errorf(engine.CodeInternal, "unexpected outcome %+v", res.Items[0])
		}
		return err
	})
	b.ReportMetric(float64(b.N*items)/b.Elapsed().Seconds(), "reservations/s")
}

// BenchmarkLists measures pages of a person's list, of an actor with
// enginetest.ListBenchRecords reservations and of a fresh one.
func BenchmarkLists(b *testing.B) {
	enginetest.BenchmarkLists(b, mustOpen(b, boltstore.Options{}))
}

// BenchmarkDecisionsWithHistory measures decisions of an actor with a long
// history against a fresh one's.
func BenchmarkDecisionsWithHistory(b *testing.B) {
	enginetest.BenchmarkDecisionsWithHistory(b, mustOpen(b, boltstore.Options{}))
}
