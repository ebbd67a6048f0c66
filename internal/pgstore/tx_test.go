package pgstore_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/pgstore"
)

// TestRecordsRoundTrip writes one record of each kind and reads it back
// field for field: receipt bodies byte for byte (also bytes that are not
// UTF-8), times in UTC, an empty reservation id as such.
func TestRecordsRoundTrip(t *testing.T) {
	s := mustOpen(t, pgstore.Options{})
	// TIMESTAMPTZ keeps microseconds.
	at := time.Date(2026, 11, 29, 12, 0, 0, 123456000, time.FixedZone("CET", 3600))
	w := engine.Workshop{ID: "go-basics", Title: "Go, the basics ✓", Capacity: 1_000_000_000, Reserved: 7, MaxQuantity: 3, Version: 1 << 40}
	res := engine.Reservation{ID: fmt.Sprintf("%032x", 42), Actor: "alice", OperationKey: "f47ac10b-58cc-4372-a567-0e02b2c3d479", Workshop: "go-basics", Quantity: 2, CreatedAt: at}
	reserved := engine.Receipt{
		Actor: "alice", OperationKey: res.OperationKey, FingerprintVersion: 1, Fingerprint: "abc",
		Request:       engine.Request{Workshop: "go-basics", Quantity: 2},
		Answer:        engine.StoredAnswer(engine.OperationReserve, engine.StatusReserved, []byte{'{', 0x00, 0xff, 0xfe, '\n', '}'}),
		ReservationID: res.ID, CreatedAt: at,
	}
	unavailable := reserved
	unavailable.OperationKey, unavailable.ReservationID = "0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d3", ""
	unavailable.Answer = unavailable.AnswerOf(engine.StatusUnavailable)
	tok := engine.TokenRecord{Hash: engine.HashToken("rsv_x"), Actor: "ops", Admin: true, CreatedAt: at}

	err := s.Update(t.Context(), func(tx engine.Tx) error {
		return errors.Join(tx.PutWorkshop(w), tx.PutReservation(res), tx.PutReceipt(reserved), tx.PutReceipt(unavailable), tx.PutToken(tok))
	})
	if err != nil {
		t.Fatal(err)
	}
	// Times come back as the same instants, in UTC.
	at = at.UTC()
	res.CreatedAt, reserved.CreatedAt, unavailable.CreatedAt, tok.CreatedAt = at, at, at, at
	err = s.View(t.Context(), func(tx engine.Tx) error {
		gotW, okW, errW := tx.Workshop(w.ID)
		gotRes, okRes, errRes := tx.Reservation(res.ID)
		gotRec, okRec, errRec := tx.Receipt(reserved.Actor, reserved.OperationKey)
		gotUn, okUn, errUn := tx.Receipt(unavailable.Actor, unavailable.OperationKey)
		gotTok, okTok, errTok := tx.Token(tok.Hash)
		if err := errors.Join(errW, errRes, errRec, errUn, errTok); err != nil {
			return err
		}
		for _, c := range []struct {
			name      string
			got, want any
			ok        bool
		}{
			{"workshop", gotW, w, okW},
			{"reservation", gotRes, res, okRes},
			{"201 receipt", gotRec, reserved, okRec},
			{"409 receipt", gotUn, unavailable, okUn},
			{"token", gotTok, tok, okTok},
		} {
			if !c.ok || !reflect.DeepEqual(c.got, c.want) {
				t.Errorf("%s read back as %+v (found %v), want %+v", c.name, c.got, c.ok, c.want)
			}
		}
		if _, ok, err := tx.Receipt("bob", reserved.OperationKey); ok || err != nil {
			t.Errorf("bob's receipt of alice's key: found %v, %v", ok, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestScansPageInKeyOrder stores more workshops than one scan page holds and
// checks that ForEachWorkshop visits each once, in byte order, while its
// function reads through the same transaction.
func TestScansPageInKeyOrder(t *testing.T) {
	s := mustOpen(t, pgstore.Options{})
	const n = 1234
	err := s.Update(t.Context(), func(tx engine.Tx) error {
		for i := range n {
			if err := tx.PutWorkshop(engine.Workshop{ID: fmt.Sprintf("w-%05d", n-i), Capacity: i, Version: 1}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range []struct {
		name string
		tx   func(fn func(engine.Tx) error) error
	}{
		{"View", func(fn func(engine.Tx) error) error { return s.View(t.Context(), fn) }},
		{"Update", func(fn func(engine.Tx) error) error { return s.Update(t.Context(), fn) }},
	} {
		var seen []string
		err := run.tx(func(tx engine.Tx) error {
			seen = seen[:0]
			return tx.ForEachWorkshop(func(w engine.Workshop) error {
				seen = append(seen, w.ID)
				_, ok, err := tx.Workshop(w.ID)
				if !ok {
					return fmt.Errorf("workshop %s vanished during the scan (%v)", w.ID, err)
				}
				return err
			})
		})
		if err != nil {
			t.Fatalf("%s: %v", run.name, err)
		}
		if len(seen) != n {
			t.Fatalf("%s: scan saw %d workshops, want %d", run.name, len(seen), n)
		}
		for i, id := range seen {
			if want := fmt.Sprintf("w-%05d", i+1); id != want {
				t.Fatalf("%s: scan position %d is %s, want %s", run.name, i, id, want)
			}
		}
	}
	stop := errors.New("stop")
	visits := 0
	err = s.View(t.Context(), func(tx engine.Tx) error {
		return tx.ForEachWorkshop(func(engine.Workshop) error { visits++; return stop })
	})
	if !errors.Is(err, stop) || visits != 1 {
		t.Fatalf("scan whose function fails: %v after %d visits, want stop after 1", err, visits)
	}
}

func TestViewRefusesWrites(t *testing.T) {
	s := mustOpen(t, pgstore.Options{})
	err := s.View(t.Context(), func(tx engine.Tx) error {
		return tx.PutWorkshop(engine.Workshop{ID: "go-basics", Capacity: 1, Version: 1})
	})
	if !errors.Is(err, pgstore.ErrReadOnly) {
		t.Fatalf("write in View = %v, want ErrReadOnly", err)
	}
	wantNoWorkshop(t, s, "go-basics")
}

func TestClosedStoreRefuses(t *testing.T) {
	s := mustOpen(t, pgstore.Options{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	nop := func(engine.Tx) error { return nil }
	if err := s.Update(t.Context(), nop); !errors.Is(err, pgstore.ErrClosed) {
		t.Fatalf("Update on a closed store = %v", err)
	}
	if err := s.View(t.Context(), nop); !errors.Is(err, pgstore.ErrClosed) {
		t.Fatalf("View on a closed store = %v", err)
	}
}

func TestCheckIsClean(t *testing.T) {
	s := mustOpen(t, pgstore.Options{})
	eng := engine.New(s)
	mustWorkshops(t, eng, "go-basics")
	if _, err := eng.Reserve(t.Context(), "alice", "f47ac10b-58cc-4372-a567-0e02b2c3d479", engine.Request{Workshop: "go-basics", Quantity: 2}); err != nil {
		t.Fatal(err)
	}
	findings, err := s.Check(t.Context())
	if err != nil || len(findings) != 0 {
		t.Fatalf("Check = %v, %v; want no findings", findings, err)
	}
}
