package boltstore_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/reserve/reserve/internal/boltfile"
	"github.com/reserve/reserve/internal/boltfile/boltfiletest"
	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
)

// TestCloseKeepsFreelist: commits leave bbolt's list of free pages out of
// the file, as every commit of an earlier reserved did, so that opening
// such a file walks every page to rebuild it. Close writes the list, so
// that the next open reads it instead of walking (bbolt walks exactly when
// the meta page it opens names no freelist page); it passes Verify, the
// data is intact and Check is clean, the first commit after the open drops
// it again, and a read-only store leaves the file as it is.
func TestCloseKeepsFreelist(t *testing.T) {
	ctx := context.Background()
	path, last := filledAsKilled(t, 40)
	if m := boltfiletest.Newest(t, path); m.Freelist != boltfile.NoFreelist {
		t.Fatalf("a commit kept the freelist (page %d)", m.Freelist)
	}
	for round := range 2 {
		s, err := boltstore.Open(path, boltstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if m := boltfiletest.Newest(t, path); m.Freelist != boltfile.NoFreelist {
			t.Fatalf("round %d: Open's commit kept the freelist (page %d)", round, m.Freelist)
		}
		if err := update(s); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		m := boltfiletest.Newest(t, path)
		if m.Freelist == boltfile.NoFreelist {
			t.Fatalf("round %d: Close kept no freelist", round)
		}
		if err := verify(t, path); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}

	before := readFile(t, path)
	ro, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readFile(t, path), before) {
		t.Error("a read-only store changed the file")
	}

	s := mustOpenPath(t, path)
	if findings, err := s.Check(ctx); err != nil || len(findings) != 0 {
		t.Errorf("Check after opening with the kept freelist = %v %v", findings, err)
	}
	rec, err := engine.New(s).Operation(ctx, "alice", last)
	if err != nil || rec.ReservationID == "" {
		t.Errorf("receipt of the last reservation = %+v %v", rec, err)
	}
}

// verify walks the newest transaction of the file at path with
// boltfile.Verify, its freelist included.
func verify(t *testing.T, path string) error {
	t.Helper()
	f, size, metas, err := boltfiletest.Open(t, path)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := boltfile.Newest(metas)
	if !ok {
		t.Fatalf("%s has no valid meta page", path)
	}
	return boltfile.Verify(f, size, m)
}
