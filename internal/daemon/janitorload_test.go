package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/seed"
)

// The load tests below measure what the retention janitor and the
// operations view cost the reservations of a big database. At their default
// size they run in every test run as ordinary tests that check only what
// the runs did, never how fast; docs/benchmarks.md records the big runs:
//
//	RESERVE_LOAD_RECEIPTS=300000,1000000 RESERVE_LOAD_DIR=/var/tmp/reserve-load \
//	RESERVE_LOAD_DURATION=10s RESERVE_LOAD_ROUNDS=3 \
//	go test -count=1 -timeout 3h -run 'JanitorLoad|OperationsPageLoad' -v ./internal/daemon/
//
// RESERVE_LOAD_DIR keeps the seeded databases between runs (they take
// minutes to generate).

// loadClients is how many clients reserve at once during a measurement.
const loadClients = 32

// loadSeedTime is the time of the seeded receipts.
var loadSeedTime = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// loadConfig is what the environment asks the load tests to do.
type loadConfig struct {
	sizes    []int
	dir      string
	duration time.Duration
	rounds   int
	big      bool // Sizes were asked for: report, and check less.
}

func loadConfigOf(t *testing.T) loadConfig {
	t.Helper()
	c := loadConfig{sizes: []int{2000}, dir: t.TempDir(), duration: 300 * time.Millisecond, rounds: 1}
	if v := os.Getenv("RESERVE_LOAD_RECEIPTS"); v != "" {
		c.sizes, c.big, c.duration = nil, true, 10*time.Second
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(f)
			if err != nil || n < 2 {
				t.Fatalf("RESERVE_LOAD_RECEIPTS: %q is not a number of receipts", f)
			}
			c.sizes = append(c.sizes, n)
		}
	}
	if v := os.Getenv("RESERVE_LOAD_DIR"); v != "" {
		c.dir = v
	}
	if v := os.Getenv("RESERVE_LOAD_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("RESERVE_LOAD_DURATION: %v", err)
		}
		c.duration = d
	}
	if v := os.Getenv("RESERVE_LOAD_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("RESERVE_LOAD_ROUNDS: %q", v)
		}
		c.rounds = n
	}
	return c
}

// seededFile returns a database holding n receipts (and their
// reservations) created around loadSeedTime and a workshop "load" for the
// clients, generated once in c.dir.
func (c loadConfig) seededFile(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(c.dir, fmt.Sprintf("seed-%d-schema%d.db", n, boltstore.SchemaVersion))
	if _, err := os.Stat(path); err == nil {
		return path
	}
	tmp := path + ".new"
	os.Remove(tmp)
	s, err := boltstore.Open(tmp, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A millisecond later on every reading, so that the seeded batches have
	// times of their own.
	var tick atomic.Int64
	eng := engine.New(s, engine.WithClock(func() time.Time { return loadSeedTime.Add(time.Duration(tick.Add(1)) * time.Millisecond) }))
	ctx := context.Background()
	start := time.Now()
	err = seed.Run(ctx, eng, seed.Plan{Workshops: []string{"seed-a", "seed-b"}, PerWorkshop: n / 2})
	if err == nil {
		_, _, err = eng.PutWorkshop(ctx, "load", engine.WorkshopSpec{Capacity: 1_000_000_000, MaxQuantity: 1}, nil)
	}
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	t.Logf("seeded %d receipts in %v", n, time.Since(start).Round(time.Second))
	return path
}

// copyFile copies the file at from to a new file to.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// latencies summarizes the latencies of one measurement.
type latencies struct {
	n             int
	p50, p99, max time.Duration
}

func (l latencies) String() string {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return fmt.Sprintf("%6d reservations, p50 %6.2f ms, p99 %6.2f ms, max %7.2f ms", l.n, ms(l.p50), ms(l.p99), ms(l.max))
}

// reserveFor has loadClients clients reserve new intents in workshop "load"
// until d has passed, and returns their latencies.
func reserveFor(t *testing.T, eng *engine.Engine, d time.Duration) latencies {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(d)
	var mu sync.Mutex
	var all []time.Duration
	var failed atomic.Value
	var wg sync.WaitGroup
	for i := range loadClients {
		wg.Go(func() {
			var mine []time.Duration
			for time.Now().Before(deadline) {
				start := time.Now()
				out, err := eng.Reserve(ctx, fmt.Sprintf("load-%d", i), engine.OperationKey(uuid.NewString()), engine.Request{Workshop: "load", Quantity: 1})
				if err == nil && (out.Answer.Status != engine.StatusReserved || out.Replayed) {
					err = fmt.Errorf("outcome %q, replayed %v", out.Answer.Status, out.Replayed)
				}
				if err != nil {
					failed.Store(err)
					return
				}
				mine = append(mine, time.Since(start))
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatal(err)
	}
	if len(all) == 0 {
		t.Fatal("no reservation finished")
	}
	slices.Sort(all)
	return latencies{n: len(all), p50: all[len(all)/2], p99: all[len(all)*99/100], max: all[len(all)-1]}
}

// countRecords counts the receipts and tombstones of store.
func countRecords(t *testing.T, store engine.Store) (receipts, tombstones int) {
	t.Helper()
	err := store.View(context.Background(), func(tx engine.Tx) error {
		receipts, tombstones = 0, 0
		if err := tx.ForEachReceipt(func(engine.Receipt) error { receipts++; return nil }); err != nil {
			return err
		}
		return tx.ForEachTombstone(func(engine.Tombstone) error { tombstones++; return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	return receipts, tombstones
}

// TestJanitorLoad measures 32 clients reserving on a seeded database
// (durable group commit, the daemon's committer priority) without a
// janitor, with one that finds nothing to expire (retention 10 s, so it
// looks every second) and with one that finds every seeded receipt expired.
// It checks that the janitor expired what it should and nothing else.
func TestJanitorLoad(t *testing.T) {
	c := loadConfigOf(t)
	logger := slog.New(slog.DiscardHandler)
	for _, n := range c.sizes {
		seeded := c.seededFile(t, n)
		for round := range c.rounds {
			for _, mode := range []string{"none", "nothing", "everything"} {
				path := filepath.Join(t.TempDir(), "run.db")
				copyFile(t, seeded, path)
				store, err := boltstore.Open(path, boltstore.Options{CommitterNice: defaultCommitterNice})
				if err != nil {
					t.Fatal(err)
				}
				// The clock starts a minute before the seeded receipts, so
				// that none is older than the retention (nor any of the
				// clients' receipts until they are ten seconds old), or a
				// day after them when they are all to expire.
				now := loadSeedTime.Add(-time.Minute)
				retention := 10 * time.Second
				if mode == "everything" {
					now, retention = loadSeedTime.Add(24*time.Hour), time.Hour
				}
				began := time.Now()
				eng := engine.New(store, engine.WithClock(func() time.Time { return now.Add(time.Since(began)) }))
				stop := func() {}
				if mode != "none" {
					stop = goUntilStopped(context.Background(), func(ctx context.Context) { janitor(ctx, eng, retention, logger) })
				}
				lat := reserveFor(t, eng, c.duration)
				stop()
				receipts, tombstones := countRecords(t, store)
				t.Logf("%8d receipts, janitor %-10s round %d: %s; %d receipts expired", n, mode, round+1, lat, tombstones)
				if !c.big {
					if mode == "everything" {
						for {
							k, err := eng.ExpireReceipts(context.Background(), retention, expireBatch)
							if err != nil {
								t.Fatal(err)
							}
							if k == 0 {
								break
							}
						}
						receipts, tombstones = countRecords(t, store)
					}
					want := 0
					if mode == "everything" {
						want = n
					}
					if tombstones != want || receipts != n+lat.n-want {
						t.Errorf("janitor %s: %d receipts and %d tombstones, want %d and %d", mode, receipts, tombstones, n+lat.n-want, want)
					}
					if findings, err := store.Check(context.Background()); err != nil || len(findings) != 0 {
						t.Errorf("check after janitor %s: %v, %v", mode, findings, err)
					}
				}
				if err := store.Close(); err != nil {
					t.Fatal(err)
				}
				os.Remove(path)
			}
		}
	}
}

// TestOperationsPageLoad measures one page of the operations view (the
// default limit; the first page and the one after it) on each seeded
// database, against the same on a small one of loadSmall receipts (four
// pages) and on an empty one, the median of 21 calls each, and checks that
// the pages are full.
func TestOperationsPageLoad(t *testing.T) {
	const loadSmall = 4 * engine.DefaultOperationsLimit
	c := loadConfigOf(t)
	ctx := context.Background()
	page := func(store engine.Store, after string) (took time.Duration, next string) {
		t.Helper()
		eng := engine.New(store)
		var all []time.Duration
		for range 21 {
			start := time.Now()
			ops, n, err := eng.Operations(ctx, engine.OperationFilter{After: after})
			all = append(all, time.Since(start))
			if err != nil {
				t.Fatal(err)
			}
			if len(ops) > 0 && (len(ops) != engine.DefaultOperationsLimit || n == "") {
				t.Fatalf("page after %q: %d records, next %q", after, len(ops), n)
			}
			next = n
		}
		slices.Sort(all)
		return all[len(all)/2], next
	}
	open := func(path string) *boltstore.Store {
		t.Helper()
		s, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	emptyPath := filepath.Join(t.TempDir(), "empty.db")
	empty, err := boltstore.Open(emptyPath, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	small := open(c.seededFile(t, loadSmall))
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	for _, n := range c.sizes {
		store := open(c.seededFile(t, n))
		for round := range c.rounds {
			first, next := page(store, "")
			second, _ := page(store, next)
			smallFirst, smallNext := page(small, "")
			smallSecond, _ := page(small, smallNext)
			none, _ := page(empty, "")
			t.Logf("%8d receipts, round %d: first page %8.3f ms, second %8.3f ms; %d receipts: %8.3f ms, %8.3f ms; empty: %8.3f ms",
				n, round+1, ms(first), ms(second), loadSmall, ms(smallFirst), ms(smallSecond), ms(none))
		}
	}
}
