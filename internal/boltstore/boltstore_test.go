package boltstore_test

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/engine/enginetest"
	"github.com/reserve/reserve/internal/server"
)

// payloadOf returns e's payload.
func payloadOf(tb testing.TB, e engine.Event) []byte {
	tb.Helper()
	p, err := e.Payload()
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// mustOpen opens a store on a fresh file in a temporary directory and closes
// it when the test ends.
func mustOpen(tb testing.TB, opts boltstore.Options) *boltstore.Store {
	tb.Helper()
	s, err := boltstore.Open(filepath.Join(tb.TempDir(), "reserved.db"), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Error(err)
		}
	})
	return s
}

func TestConformanceGroupCommit(t *testing.T) {
	enginetest.Run(t, func(tb testing.TB) engine.Store { return mustOpen(tb, boltstore.Options{}) })
}

func TestConformanceNoGroupCommit(t *testing.T) {
	enginetest.Run(t, func(tb testing.TB) engine.Store { return mustOpen(tb, boltstore.Options{NoGroupCommit: true}) })
}

func TestInUseByAnotherProcess(t *testing.T) {
	// bbolt's flock is per open file description, so a second Open in the
	// same process contends exactly like a second daemon would.
	path := filepath.Join(t.TempDir(), "reserved.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = boltstore.Open(path, boltstore.Options{LockTimeout: 50e6})
	if err == nil || err.Error() != "database "+path+" is in use by another reserved" {
		t.Fatalf("second open: %v", err)
	}
}

// newFile creates a database in a temporary directory, closes it and
// returns its path.
func newFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "reserved.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	return path
}

func TestNewerSchemaIsRefused(t *testing.T) {
	path := newFile(t)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("schema"), []byte{0, 0, 0, 0, 0, 0, 0, 99})
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = boltstore.Open(path, boltstore.Options{})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("schema version 99, newer than this reserved understands (%d)", boltstore.SchemaVersion)) {
		t.Fatalf("open of newer schema: %v", err)
	}
}

// TestSchemaUpgrade: a version 1 file (JSON workshop records) is read by a
// read-only open as it is and marked with the current version by a writing
// open; its JSON workshop still reads and is rewritten in the binary layout.
func TestSchemaUpgrade(t *testing.T) {
	path := newFile(t)
	setRaw := func(bucket, key string, value []byte) {
		t.Helper()
		addRecord(t, path, bucket, key, value)
	}
	schema := func() uint64 {
		t.Helper()
		db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var v uint64
		db.View(func(tx *bolt.Tx) error {
			v = binary.BigEndian.Uint64(tx.Bucket([]byte("meta")).Get([]byte("schema")))
			return nil
		})
		return v
	}
	setRaw("meta", "schema", []byte{0, 0, 0, 0, 0, 0, 0, 1})
	setRaw("workshops", "go-basics", []byte(`{"id":"go-basics","title":"Go","capacity":3,"reserved":0,"max_quantity":2,"version":1}`))
	ctx := context.Background()
	ro, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	ro.Close()
	if v := schema(); v != 1 {
		t.Fatalf("a read-only open changed the schema version to %d", v)
	}
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out, err := engine.New(s).Reserve(ctx, "alice", engine.OperationKey(uuid.NewString()), engine.Request{Workshop: "go-basics", Quantity: 2})
	if err != nil || out.Answer.Status != engine.StatusReserved {
		t.Fatalf("reserve in the version 1 workshop: %+v %v", out, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if v := schema(); v != boltstore.SchemaVersion {
		t.Errorf("schema version after a writing open = %d, want %d", v, boltstore.SchemaVersion)
	}
}

// TestSchema2Records: a receipt and an outbox event as schema version 2
// wrote them (format 1, the answer and the payload kept as JSON) are
// answered and delivered byte for byte the same after the upgrade, also
// once the event is marked delivered (which writes it again).
func TestSchema2Records(t *testing.T) {
	path := newFile(t)
	req := engine.Request{Workshop: "go-basics", Quantity: 2}
	key := engine.OperationKey("f47ac10b-58cc-4372-a567-0e02b2c3d479")
	resID, eventID := "0192f0a1b2c3d4e5f60718293a4b5c6d", "0192f0a1b2c3d4e5f60718293a4b5c6e"
	created := time.Date(2026, 11, 29, 12, 0, 0, 123456789, time.UTC)
	body := `{"status":"reserved","reservation_id":"` + resID + `","workshop":"go-basics","quantity":2}`
	payload := `{"id":"` + eventID + `","type":"reservation.confirmed","reservation_id":"` + resID + `","owner":"alice","actor":"alice",` +
		`"operation":"` + string(key) + `","workshop":"go-basics","quantity":2,"at":"2026-11-29T12:00:00.123456789Z"}`
	bytesOf := func(b []byte, v string) []byte { return append(binary.AppendUvarint(b, uint64(len(v))), v...) }
	fp, _ := hex.DecodeString(engine.Fingerprint(req))
	receipt := binary.AppendUvarint([]byte{1}, uint64(engine.ReserveFingerprintV1))
	receipt = binary.AppendUvarint(append(receipt, fp...), 201)
	receipt = bytesOf(binary.AppendVarint(receipt, created.UnixNano()), "go-basics")
	receipt = bytesOf(bytesOf(binary.AppendUvarint(receipt, 2), resID), body)
	event := bytesOf(bytesOf(bytesOf(bytesOf([]byte{1}, engine.EventReserved), resID), "alice"), string(key))
	event = bytesOf(binary.AppendUvarint(binary.AppendVarint(event, created.UnixNano()), 0), payload)
	reservation := bytesOf(bytesOf(bytesOf([]byte{1}, "alice"), string(key)), "go-basics")
	reservation = binary.AppendVarint(binary.AppendUvarint(reservation, 2), created.UnixNano())
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, kv := range [][3]string{
			{"meta", "schema", "\x00\x00\x00\x00\x00\x00\x00\x02"},
			{"workshops", "go-basics", `{"id":"go-basics","title":"Go","capacity":3,"reserved":2,"max_quantity":2,"version":2}`},
			{"reservations", resID, string(reservation)},
			{"receipts", "alice\x00" + string(key), string(receipt)},
			{"events", eventID, string(event)},
			{"events_pending", eventID, ""},
		} {
			if err := tx.Bucket([]byte(kv[0])).Put([]byte(kv[1]), []byte(kv[2])); err != nil {
				return err
			}
		}
		return dropTimeIndexes(tx)
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	s := mustOpenPath(t, path)
	ctx := context.Background()
	eng := engine.New(s)
	out, err := eng.Reserve(ctx, "alice", key, req)
	if err != nil || !out.Replayed || server.StatusOfAnswer(out.Answer) != 201 || string(out.Answer.JSON()) != body {
		t.Fatalf("replay of a version 2 receipt = %+v (body %s), %v; want the stored answer %s", out, out.Answer.JSON(), err, body)
	}
	evs, err := eng.PendingEvents(ctx, 10)
	if err != nil || len(evs) != 1 || string(payloadOf(t, evs[0])) != payload {
		t.Fatalf("pending events = %+v, %v; want the version 2 payload %s", evs, err, payload)
	}
	if err := eng.MarkDelivered(ctx, eventID); err != nil {
		t.Fatal(err)
	}
	err = s.View(ctx, func(tx engine.Tx) error {
		ev, ok, err := tx.Event(eventID)
		if err != nil || !ok || !ev.Delivered() || string(payloadOf(t, ev)) != payload {
			t.Errorf("delivered event = %+v (payload %s), %v, %v", ev, payloadOf(t, ev), ok, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if findings, err := s.Check(ctx); err != nil || len(findings) != 0 {
		t.Errorf("check after the upgrade: %v, %v", findings, err)
	}
	// The upgrade indexed the receipt by its time: the operations view
	// shows it, and it expires.
	ops, _, err := eng.Operations(ctx, engine.OperationFilter{})
	if err != nil || len(ops) != 1 || ops[0].Operation != key || !ops[0].CreatedAt.Equal(created) {
		t.Fatalf("operations view after the upgrade = %+v, %v", ops, err)
	}
	later := engine.New(s, engine.WithClock(func() time.Time { return created.Add(48 * time.Hour) }))
	if n, err := later.ExpireReceipts(ctx, 24*time.Hour, 10); err != nil || n != 1 {
		t.Fatalf("ExpireReceipts after the upgrade = %d, %v; want 1", n, err)
	}
	if findings, err := s.Check(ctx); err != nil || len(findings) != 0 {
		t.Errorf("check after the expiry: %v, %v", findings, err)
	}
}

// TestSchema3FileGetsHolds: a file as schema version 3 wrote it (no hold
// buckets, a workshop of format 1, a receipt of format 2) reads as it is
// through a read-only open, holds included (there are none), and a writing
// open marks it version 4, after which holds work in its workshop and its
// receipt replays byte for byte.
func TestSchema3FileGetsHolds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reserved.db")
	req := engine.Request{Workshop: "go-basics", Quantity: 2}
	key := engine.OperationKey("f47ac10b-58cc-4372-a567-0e02b2c3d479")
	created := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	bytesOf := func(b []byte, v string) []byte { return append(binary.AppendUvarint(b, uint64(len(v))), v...) }
	workshop := bytesOf([]byte{1}, "Go")
	workshop = binary.AppendUvarint(binary.AppendVarint(binary.AppendVarint(binary.AppendVarint(workshop, 3), 0), 2), 4)
	fp, _ := hex.DecodeString(engine.Fingerprint(req))
	receipt := binary.AppendUvarint([]byte{2}, uint64(engine.ReserveFingerprintV1))
	receipt = binary.AppendUvarint(append(receipt, fp...), 409)
	receipt = bytesOf(binary.AppendVarint(receipt, created.UnixNano()), "go-basics")
	receipt = bytesOf(bytesOf(binary.AppendUvarint(receipt, 2), ""), engine.StatusUnavailable)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range []string{"meta", "workshops", "reservations", "receipts", "tokens", "tombstones", "events", "events_pending"} {
			if _, err := tx.CreateBucket([]byte(name)); err != nil {
				return err
			}
		}
		for _, kv := range [][3]string{
			{"meta", "schema", "\x00\x00\x00\x00\x00\x00\x00\x03"},
			{"workshops", "go-basics", string(workshop)},
			{"receipts", "alice\x00" + string(key), string(receipt)},
		} {
			if err := tx.Bucket([]byte(kv[0])).Put([]byte(kv[1]), []byte(kv[2])); err != nil {
				return err
			}
		}
		return nil
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	body := `{"status":"unavailable","workshop":"go-basics","quantity":2}`

	ro, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if findings, err := ro.Check(ctx); err != nil || len(findings) != 0 {
		t.Errorf("read-only check of a version 3 file: %v, %v", findings, err)
	}
	w, err := engine.New(ro).Workshop(ctx, "go-basics")
	if err != nil || w.Held != 0 || w.Available != 3 {
		t.Errorf("read-only workshop view = %+v, %v", w, err)
	}
	if _, err := engine.New(ro).HoldOf(ctx, engine.Principal{Actor: "alice"}, "0192f0a1b2c3d4e5f60718293a4b5c6d"); engine.ErrorCode(err) != engine.CodeUnknownHold {
		t.Errorf("read-only hold lookup = %v, want unknown_hold", err)
	}
	ro.Close()

	s := mustOpenPath(t, path)
	eng := engine.New(s)
	out, err := eng.Reserve(ctx, "alice", key, req)
	if err != nil || !out.Replayed || string(out.Answer.JSON()) != body {
		t.Fatalf("replay of a version 3 receipt = %+v (body %s), %v; want %s", out, out.Answer.JSON(), err, body)
	}
	held, err := eng.Hold(ctx, "bob", engine.OperationKey(uuid.NewString()), engine.HoldRequest{Workshop: "go-basics", Quantity: 2, TTLSeconds: 60})
	if err != nil || held.Answer.Status != engine.StatusHeld {
		t.Fatalf("hold in the version 3 workshop = %+v, %v", held, err)
	}
	if w, err := eng.Workshop(ctx, "go-basics"); err != nil || w.Held != 2 || w.Available != 1 || w.Version != 4 {
		t.Fatalf("workshop after a hold = %+v, %v", w, err)
	}
	if findings, err := s.Check(ctx); err != nil || len(findings) != 0 {
		t.Errorf("check after the upgrade: %v, %v", findings, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *bolt.Tx) error {
		if v := binary.BigEndian.Uint64(tx.Bucket([]byte("meta")).Get([]byte("schema"))); v != boltstore.SchemaVersion {
			t.Errorf("schema version after a writing open = %d, want %d", v, boltstore.SchemaVersion)
		}
		return nil
	})
}

func TestNotAReservedDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "other.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("meta")); return err })
	db.Close()
	if _, err := boltstore.Open(path, boltstore.Options{}); err == nil || !strings.Contains(err.Error(), "no readable schema version") {
		t.Fatalf("open of foreign database: %v", err)
	}
}

func TestReopenKeepsEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reserved.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Created() {
		t.Fatal("opening a new file does not say it created it")
	}
	ctx := context.Background()
	eng := engine.New(s)
	if _, _, err := eng.PutWorkshop(ctx, "go-basics", engine.WorkshopSpec{Capacity: 3, MaxQuantity: 2}, nil); err != nil {
		t.Fatal(err)
	}
	key := engine.OperationKey("f47ac10b-58cc-4372-a567-0e02b2c3d479")
	first, err := eng.Reserve(ctx, "alice", key, engine.Request{Workshop: "go-basics", Quantity: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A request that reaches a store closed at shutdown is undecided: the
	// client retries it with the same key.
	if _, err := eng.Reserve(ctx, "alice", key, engine.Request{Workshop: "go-basics", Quantity: 2}); engine.ErrorCode(err) != engine.CodeStoreUnavailable || !errors.Is(err, boltstore.ErrClosed) {
		t.Fatalf("Reserve on a closed store = %v, want store_unavailable with ErrClosed", err)
	}
	if _, _, err := eng.PutWorkshop(ctx, "go-more", engine.WorkshopSpec{Capacity: 3, MaxQuantity: 2}, nil); engine.ErrorCode(err) != engine.CodeStoreUnavailable {
		t.Fatalf("PutWorkshop on a closed store = %v, want store_unavailable", err)
	}
	s = mustOpenPath(t, path)
	if s.Created() {
		t.Fatal("reopening a file says it created it")
	}
	again, err := engine.New(s).Reserve(ctx, "alice", key, engine.Request{Workshop: "go-basics", Quantity: 2})
	if err != nil || !again.Replayed || string(again.Answer.JSON()) != string(first.Answer.JSON()) {
		t.Fatalf("replay after reopen = %+v %v, want %s", again, err, first.Answer.JSON())
	}
}

func mustOpenPath(tb testing.TB, path string) *boltstore.Store {
	tb.Helper()
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}
