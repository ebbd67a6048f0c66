package daemon_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server/servertest"
)

// TestRetentionTombstonesEndToEnd runs a real reserved with
// --receipt-retention 1s: its janitor (which runs at start and then every
// second) turns the receipts of a reservation and of a cancellation into
// tombstones. A late retry of either key with the same payload gets 410
// operation_expired and changes nothing; the key under another payload is
// still 409 operation_conflict; GET /api/v1/operations reports the expiry;
// and reserved check finds the database consistent.
func TestRetentionTombstonesEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	socket := filepath.Join(servertest.ShortTempDir(t), "r.sock")
	p := start(t, dir, socket, "--no-demo", "--receipt-retention", "1s")
	ctx := context.Background()
	c := p.socketClient()
	if _, _, err := c.PutWorkshop(ctx, "ret", engine.WorkshopSpec{Capacity: 5, MaxQuantity: 2}, nil); err != nil {
		t.Fatal(err)
	}
	me, err := c.WhoAmI(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// One reservation that stays, one that is cancelled.
	reserve := func(key engine.OperationKey, req engine.Request) string {
		t.Helper()
		status, body, _, err := c.Reserve(ctx, key, req)
		if err != nil || status != http.StatusCreated {
			t.Fatalf("reserve %+v: %d %s %v", req, status, body, err)
		}
		var a engine.Answer
		if err := json.Unmarshal(body, &a); err != nil {
			t.Fatal(err)
		}
		return a.ReservationID
	}
	key, req := engine.OperationKey(uuid.NewString()), engine.Request{Workshop: "ret", Quantity: 2}
	kept := reserve(key, req)
	other := reserve(engine.OperationKey(uuid.NewString()), engine.Request{Workshop: "ret", Quantity: 1})
	ckey := engine.OperationKey(uuid.NewString())
	if status, body, _, err := c.Cancel(ctx, ckey, other); err != nil || status != http.StatusOK {
		t.Fatalf("cancel %s: %d %s %v", other, status, body, err)
	}

	// The janitor turns both receipts into tombstones.
	for _, k := range []engine.OperationKey{key, ckey} {
		servertest.Eventually(t, startTimeout, "the receipt of "+string(k)+" expired", func() bool {
			_, err := c.Operation(ctx, k)
			if code := engine.ErrorCode(err); code != engine.CodeOperationExpired && err != nil {
				t.Fatalf("operation %s: %v", k, err)
			}
			return engine.ErrorCode(err) == engine.CodeOperationExpired
		})
	}
	// The janitor logs after its transaction commits, so the line may
	// trail the expiry the client just saw.
	servertest.Eventually(t, startTimeout, "the janitor logged the tombstones it made", func() bool {
		return p.logs.Find("receipts expired into tombstones") != nil
	})

	// Late retries: 410 with the same payload, 409 with another, nothing
	// done again.
	wantCode := func(what, code string, status int, body []byte, err error) {
		t.Helper()
		if engine.ErrorCode(err) != code {
			t.Errorf("%s: %d %s %v, want %s", what, status, body, err, code)
		}
	}
	status, body, _, err := c.Reserve(ctx, key, req)
	wantCode("retry of the expired reservation key", engine.CodeOperationExpired, status, body, err)
	if status != http.StatusGone {
		t.Errorf("retry of the expired reservation key answered %d, want 410", status)
	}
	if err != nil && !strings.Contains(err.Error(), kept) {
		t.Errorf("the 410 %q does not name the reservation %s", err, kept)
	}
	status, body, _, err = c.Reserve(ctx, key, engine.Request{Workshop: "ret", Quantity: 1})
	wantCode("the expired reservation key with another payload", engine.CodeOperationConflict, status, body, err)
	status, body, _, err = c.Cancel(ctx, ckey, other)
	wantCode("retry of the expired cancel key", engine.CodeOperationExpired, status, body, err)
	status, body, _, err = c.Cancel(ctx, ckey, kept)
	wantCode("the expired cancel key for another reservation", engine.CodeOperationConflict, status, body, err)
	status, body, _, err = c.Reserve(ctx, ckey, req)
	wantCode("the expired cancel key for a reservation", engine.CodeOperationConflict, status, body, err)
	if w, err := c.Workshop(ctx, "ret"); err != nil || w.Reserved != 2 {
		t.Errorf("workshop after the late retries: %+v %v, want 2 places reserved", w, err)
	}

	if code := p.stop(t); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d", code)
	}
	db := filepath.Join(dir, "reserved.db")
	s, err := boltstore.Open(db, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var reservations, receipts int
	tombstones := map[engine.OperationKey]engine.Tombstone{}
	err = s.View(ctx, func(tx engine.Tx) error {
		if err := tx.ForEachReservation(func(engine.Reservation) error { reservations++; return nil }); err != nil {
			return err
		}
		if err := tx.ForEachReceipt(func(engine.Receipt) error { receipts++; return nil }); err != nil {
			return err
		}
		return tx.ForEachTombstone(func(ts engine.Tombstone) error { tombstones[ts.OperationKey] = ts; return nil })
	})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	if reservations != 2 {
		t.Errorf("%d reservations stored, want 2 (no second effect of a late retry)", reservations)
	}
	if ts := tombstones[key]; ts.Actor != me.Actor || ts.Answer.Status != engine.StatusReserved || ts.Answer.ReservationID != kept || ts.Answer.Quantity != 2 || ts.PurgedAt.Before(ts.CreatedAt) {
		t.Errorf("tombstone of the reservation key: %+v", ts)
	}
	if ts := tombstones[ckey]; ts.Answer.Status != engine.StatusCancelled || ts.Answer.ReservationID != other {
		t.Errorf("tombstone of the cancel key: %+v", ts)
	}
	if receipts != 0 || len(tombstones) != 3 {
		t.Errorf("%d receipts and %d tombstones stored, want 0 and 3 (every receipt expired)", receipts, len(tombstones))
	}

	out, err := exec.Command(reservedBin, "check", "--db", db).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "no findings") {
		t.Errorf("reserved check: %v\n%s", err, out)
	}
}
