package intent_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/intent"
)

const testEntryID = "0190a1b2c3d4e5f60718293a4b5c6d71"

// waitingBody is the body of a "waiting" answer to testRequest with
// "waitlist".
const waitingBody = `{"status":"waiting","entry_id":"` + testEntryID + `","workshop":"workshop-demo","quantity":1,"position":2}`

// TestReserveOfVersion3ReadsWithoutWaitlist reads an open reserve intent
// exactly as reservectl wrote it at schema version 3, before waiting
// lists: its request does not ask to wait, so a retry sends the payload it
// recorded; saved again, only the schema version changes.
func TestReserveOfVersion3ReadsWithoutWaitlist(t *testing.T) {
	written, err := os.ReadFile(filepath.Join("testdata", "state-reserve-open-v3.json"))
	if err != nil {
		t.Fatal(err)
	}
	in, got := resaved(t, written)
	req, err := in.Request()
	if err != nil || req != (engine.Request{Workshop: "workshop-demo", Quantity: 2}) || string(in.Payload) != `{"workshop":"workshop-demo","quantity":2}` {
		t.Fatalf("Request() = %+v, %v (payload %s); want 2 places in workshop-demo, without waitlist", req, err, in.Payload)
	}
	want := bytes.Replace(written, []byte(`"schema": 3,`), []byte(fmt.Sprintf(`"schema": %d,`, intent.SchemaVersion)), 1)
	if !bytes.Equal(got, want) {
		t.Errorf("saved again:\n%s\nwant:\n%s", got, want)
	}
}

// TestWaitlistInAVersion3RecordIsCorrupt refuses records that claim a
// version before waiting lists but hold what only version 4 writes: no
// reservectl wrote them.
func TestWaitlistInAVersion3RecordIsCorrupt(t *testing.T) {
	written, err := os.ReadFile(filepath.Join("testdata", "state-reserve-open-v3.json"))
	if err != nil {
		t.Fatal(err)
	}
	for name, record := range map[string][]byte{
		"waitlist payload": bytes.Replace(written, []byte(`"quantity": 2`), []byte(`"quantity": 2, "waitlist": true`), 1),
		"leave kind": bytes.Replace(bytes.Replace(written, []byte(`"kind": "reserve"`), []byte(`"kind": "leave_waitlist"`), 1),
			[]byte(`{
    "workshop": "workshop-demo",
    "quantity": 2
  }`), []byte(`{"entry_id": "`+testEntryID+`"}`), 1),
	} {
		_, err := mustOpen(t, writeState(t, record)).Load()
		if !errors.Is(err, intent.ErrCorrupt) || !strings.Contains(err.Error(), "waiting lists are not part of schema version 3") {
			t.Errorf("%s: Load() = %v, want it corrupt: waiting lists are not part of schema version 3", name, err)
		}
	}
}

// TestWaitlistIntents: a reservation that asks to wait keeps "waitlist" in
// its payload, which a retry sends again, and settles on "waiting", whose
// entry it names; one that does not ask to wait never settles on it.
// Leaving a waiting list is an intent with its entry as its payload,
// settled on each of its answers.
func TestWaitlistIntents(t *testing.T) {
	join := engine.Request{Workshop: "workshop-demo", Quantity: 1, Waitlist: true}
	in, err := intent.NewReserve(join, testServer, testActor)
	if err != nil {
		t.Fatal(err)
	}
	j := mustOpen(t, statePath(t))
	waiting := intent.Outcome{Status: engine.StatusWaiting, HTTPStatus: 202, Body: []byte(waitingBody)}
	mustSettled(t, j, in, waiting)
	back := reloaded(t, j)
	if req, err := back.Request(); err != nil || req != join || string(back.Payload) != `{"workshop":"workshop-demo","quantity":1,"waitlist":true}` {
		t.Errorf("Request() = %+v, %v (payload %s)", req, err, back.Payload)
	}
	if id, ok := back.WaitingEntry(); !ok || id != testEntryID {
		t.Errorf("WaitingEntry() = %q, %v; want %s", id, ok, testEntryID)
	}
	if back.Effect() != engine.EffectQueued {
		t.Errorf("Effect() = %d, want EffectQueued", back.Effect())
	}
	if _, ok := back.HeldHold(); ok {
		t.Error("HeldHold() of a waiting intent reports a hold")
	}

	plain, err := intent.NewReserve(testRequest, testServer, testActor)
	if err != nil {
		t.Fatal(err)
	}
	checkSettleSent(t, plain, waiting, "answers only a reservation that asked to join the waiting list")
	if _, ok := plain.WaitingEntry(); ok {
		t.Error("WaitingEntry() of an open intent reports an entry")
	}
	for _, tc := range []struct {
		o   intent.Outcome
		why string
	}{
		{intent.Outcome{Status: engine.StatusWaiting, HTTPStatus: 201, Body: []byte(waitingBody)}, "202"},
		{intent.Outcome{Status: engine.StatusWaiting, HTTPStatus: 202, Body: []byte(strings.Replace(waitingBody, testEntryID, "abc", 1))}, "body of the entry made"},
		{intent.Outcome{Status: engine.StatusWaiting, HTTPStatus: 202, Body: []byte(strings.Replace(waitingBody, `,"position":2`, "", 1))}, "body of the entry made"},
		{intent.Outcome{Status: engine.StatusUnavailable, HTTPStatus: 409, Body: []byte(`{"status":"unavailable","workshop":"workshop-demo","quantity":1}`)}, ""},
	} {
		in, err := intent.NewReserve(join, testServer, testActor)
		if err != nil {
			t.Fatal(err)
		}
		checkSettleSent(t, in, tc.o, tc.why)
	}

	body := func(status string) []byte {
		return []byte(`{"status":"` + status + `","entry_id":"` + testEntryID + `","workshop":"workshop-demo","quantity":1}`)
	}
	for _, tc := range []struct {
		o   intent.Outcome
		why string
	}{
		{intent.Outcome{Status: engine.StatusLeft, HTTPStatus: 200, Body: body("left")}, ""},
		{intent.Outcome{Status: engine.StatusExpired, HTTPStatus: 409, Body: body("expired")}, ""},
		{intent.Outcome{Status: engine.StatusAlreadyLeft, HTTPStatus: 409, Body: body("already_left")}, ""},
		{intent.Outcome{Status: engine.StatusAlreadyReserved, HTTPStatus: 409, Body: body("already_reserved")}, ""},
		{intent.Outcome{Status: intent.StatusRejected, HTTPStatus: 404, Body: []byte(`{"code":"unknown_entry"}`)}, ""},
		{intent.Outcome{Status: engine.StatusLeft, HTTPStatus: 409, Body: body("left")}, "200"},
		{intent.Outcome{Status: engine.StatusReleased, HTTPStatus: 200, Body: body("released")}, "is not one of"},
	} {
		in, err := intent.NewLeaveWaitlist(testEntryID, testServer, testActor)
		if err != nil {
			t.Fatal(err)
		}
		back := checkSettleSent(t, in, tc.o, tc.why)
		if ref, err := back.EntryRef(); err != nil || ref.EntryID != testEntryID || string(back.Payload) != `{"entry_id":"`+testEntryID+`"}` {
			t.Errorf("EntryRef() = %+v, %v (payload %s)", ref, err, back.Payload)
		}
	}
	if _, err := intent.NewLeaveWaitlist("abc", testServer, testActor); err == nil {
		t.Error("an intent to leave entry \"abc\" was made")
	}
	if _, err := in.EntryRef(); err == nil {
		t.Error("EntryRef() of a reserve intent succeeded")
	}
}

// checkSettleSent records one attempt of in in a new journal and checks
// Settle on o as checkSettle does; it returns in as the journal reads it
// back.
func checkSettleSent(t *testing.T, in *intent.Intent, o intent.Outcome, why string) *intent.Intent {
	t.Helper()
	j := mustOpen(t, statePath(t))
	if err := j.RecordAttempt(in); err != nil {
		t.Fatal(err)
	}
	checkSettle(t, j, in, o, why)
	return reloaded(t, j)
}

// writeState writes data as a new state file and returns its path.
func writeState(t *testing.T, data []byte) string {
	t.Helper()
	path := statePath(t)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
