package boltfile_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/reserve/reserve/internal/boltfile"
	"github.com/reserve/reserve/internal/boltfile/boltfiletest"
)

// BenchmarkVerify verifies a file of about 200,000 pages (800 MB) written
// as a store's are: a bucket of random keys, whose leaves are half to
// fully filled, and an index of keys that only grow. It reports the time
// a page; -cpu 1,2 compares one walker with two. "file" reads the file as
// Open does; "reader" hides it behind a reader that is not a file, so that
// Verify reads it page by page. Making the file takes a while: with
// BOLTFILE_BENCH_DB set, the file of that name is verified, and made there
// first if it does not exist.
func BenchmarkVerify(b *testing.B) {
	path := os.Getenv("BOLTFILE_BENCH_DB")
	if path == "" {
		path = filepath.Join(b.TempDir(), "bench.db")
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		makeBenchDB(b, path)
	}
	f, size, metas, err := boltfiletest.Open(b, path)
	if err != nil {
		b.Fatal(err)
	}
	m, _ := boltfile.Newest(metas)
	for _, bb := range []struct {
		name string
		r    io.ReaderAt
	}{{"file", f}, {"reader", readerOnly{f}}} {
		b.Run(bb.name, func(b *testing.B) {
			for b.Loop() {
				if err := boltfile.Verify(bb.r, size, m); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(m.Pgid), "ns/page")
			b.ReportMetric(float64(m.Pgid), "pages")
		})
	}
}

// makeBenchDB writes the file of BenchmarkVerify to path.
func makeBenchDB(b *testing.B, path string) {
	b.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType, NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	value := bytes.Repeat([]byte{0x5a}, 120)
	for batch := range 18 {
		keys := make([][]byte, 100_000)
		for i := range keys {
			keys[i] = binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, rng.Uint64()), rng.Uint64())
		}
		slices.SortFunc(keys, bytes.Compare)
		err := db.Update(func(tx *bolt.Tx) error {
			random, err := tx.CreateBucketIfNotExists([]byte("random"))
			if err != nil {
				return err
			}
			growing, err := tx.CreateBucketIfNotExists([]byte("growing"))
			if err != nil {
				return err
			}
			for i, k := range keys {
				if err := random.Put(k, value); err != nil {
					return err
				}
				if err := growing.Put(binary.BigEndian.AppendUint64(nil, uint64(batch*len(keys)+i)), k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
}
