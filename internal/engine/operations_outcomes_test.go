package engine

import (
	"encoding/json"
	"slices"
	"testing"
	"time"
)

// TestAnswersTable: every row of the table of answers is one (kind, status)
// of a known kind, and the members the row names are exactly the members
// the answer's one encoding writes, which DecodeAnswer reads back.
func TestAnswersTable(t *testing.T) {
	seen := map[OperationKind][]string{}
	const id = "0190a1b2c3d4e5f60718293a4b5c6d7e"
	for _, row := range Answers {
		if slices.Contains(seen[row.Kind], row.Status) {
			t.Errorf("(%s, %s) has two rows", row.Kind, row.Status)
		}
		seen[row.Kind] = append(seen[row.Kind], row.Status)
		if row.Effect < EffectMade || row.Effect > EffectQueued {
			t.Errorf("(%s, %s) has no effect", row.Kind, row.Status)
		}
		a := Answer{Kind: row.Kind, Status: row.Status, Workshop: "w-1", Quantity: 2}
		if row.Members.ReservationID {
			a.ReservationID = id
		}
		if row.Members.HoldID {
			a.HoldID = id
		}
		if row.Members.DeliveryID {
			a.DeliveryID = id + "-mail"
		}
		if row.Members.ExpiresAt {
			a.ExpiresAt = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		}
		if row.Members.EntryID {
			a.EntryID = id
		}
		if row.Members.Position {
			a.Position = 3
		}
		if row.Members.Limit {
			a.Limit = Limit{MaxPerPerson: 2, Already: 1}
		}
		body := a.JSON()
		var members map[string]json.RawMessage
		if err := json.Unmarshal(body, &members); err != nil {
			t.Fatalf("(%s, %s) encodes as %s: %v", row.Kind, row.Status, body, err)
		}
		names := row.Members.Names()
		if len(members) != len(names) {
			t.Errorf("(%s, %s) encodes as %s, want the members %v", row.Kind, row.Status, body, names)
		}
		for _, n := range names {
			if _, ok := members[n]; !ok {
				t.Errorf("(%s, %s) encodes as %s, without %q", row.Kind, row.Status, body, n)
			}
		}
		if got, err := DecodeAnswer(row.Kind, body); err != nil || got.Status != row.Status {
			t.Errorf("DecodeAnswer(%s, %s) = %+v, %v", row.Kind, body, got, err)
		}
	}
	for _, kind := range []OperationKind{OperationReserve, OperationCancel, OperationHold, OperationConfirm, OperationRelease,
		OperationRetryDelivery, OperationSkipDelivery, OperationLeaveWaitlist} {
		if len(seen[kind]) == 0 {
			t.Errorf("kind %s has no answers", kind)
		}
	}
}

// TestOperationOutcomesAreEveryStatus: the operations view filters by
// every status some kind of operation answers with, each once.
func TestOperationOutcomesAreEveryStatus(t *testing.T) {
	for _, row := range Answers {
		if n := len(slices.DeleteFunc(slices.Clone(OperationOutcomes), func(s string) bool { return s != row.Status })); n != 1 {
			t.Errorf("OperationOutcomes = %v has %s %d times, want once", OperationOutcomes, row.Status, n)
		}
	}
}
