package enginetest

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/reserve/reserve/internal/engine"
)

// entry is a batch entry of key for quantity places of workshop.
func entry(key engine.OperationKey, workshop string, quantity int) engine.BatchEntry {
	return engine.BatchEntry{Key: key, Request: engine.Request{Workshop: workshop, Quantity: quantity}}
}

// batch decides entries for actor and fails the test on an error.
func (h *harness) batch(t *testing.T, actor string, atomic bool, entries ...engine.BatchEntry) engine.BatchResult {
	t.Helper()
	res, err := h.eng.Batch(h.ctx, actor, entries, atomic)
	if err != nil {
		t.Fatalf("Batch: %v", err)
	}
	if len(res.Items) != len(entries) {
		t.Fatalf("Batch of %d entries gave %d results", len(entries), len(res.Items))
	}
	return res
}

// testBatchItems: a non-atomic batch decides every item as Reserve would,
// each on its own: an invalid item and a refusal store nothing and leave
// the others standing, an unavailable item is stored, the same key twice
// is one operation, and Reserve replays each stored answer byte for byte.
func testBatchItems(t *testing.T, h *harness) {
	h.workshop("go-basics", 3, 2)
	k1, k2, k3, k4 := newKey(), newKey(), newKey(), newKey()
	res := h.batch(t, "alice", false,
		entry(k1, "go-basics", 2), entry(k1, "go-basics", 2), entry(k2, "go-basics", 2),
		entry(k3, "nope", 1), entry("bad", "go-basics", 1), entry(k1, "go-basics", 1),
		entry(k4, "go-basics", 3), engine.BatchEntry{Key: newKey(), Invalid: engine.Errorf(engine.CodeRequestContract, "item 8: broken")})
	if res.Refused {
		t.Fatal("a non-atomic batch was refused")
	}
	want := []struct {
		status   string
		replayed bool
		code     string
	}{
		{engine.StatusReserved, false, ""}, {engine.StatusReserved, true, ""}, {engine.StatusUnavailable, false, ""},
		{"", false, engine.CodeUnknownWorkshop}, {"", false, engine.CodeInvalidIdempotencyKey}, {"", false, engine.CodeOperationConflict},
		{"", false, engine.CodeRequestContract}, {"", false, engine.CodeRequestContract},
	}
	for i, w := range want {
		it := res.Items[i]
		code := ""
		if it.Refusal != nil {
			code = engine.ErrorCode(it.Refusal)
		}
		if it.Outcome.Answer.Status != w.status || it.Outcome.Replayed != w.replayed || code != w.code {
			t.Errorf("item %d = %q replayed %t, %v; want %q replayed %t code %q", i+1, it.Outcome.Answer.Status, it.Outcome.Replayed, it.Refusal, w.status, w.replayed, w.code)
		}
	}
	if !bytes.Equal(res.Items[0].Outcome.Answer.JSON(), res.Items[1].Outcome.Answer.JSON()) {
		t.Errorf("the same key twice answered %s and %s", res.Items[0].Outcome.Answer.JSON(), res.Items[1].Outcome.Answer.JSON())
	}
	h.wantReserved("go-basics", 2)
	h.wantCounts(1, 2)
	for _, i := range []int{0, 2} {
		it := res.Items[i]
		out := h.mustReserve("alice", it.Key, "go-basics", 2)
		if !out.Replayed || !bytes.Equal(out.Answer.JSON(), it.Outcome.Answer.JSON()) {
			t.Errorf("Reserve's replay of item %d = %s, want %s", i+1, out.Answer.JSON(), it.Outcome.Answer.JSON())
		}
	}
	// Every key is the actor's own: bob's batch with alice's key is new.
	if res := h.batch(t, "bob", false, entry(k1, "go-basics", 1)); res.Items[0].Outcome.Replayed || res.Items[0].Outcome.Answer.Status != engine.StatusReserved {
		t.Errorf("bob's item under alice's key = %+v, %v", res.Items[0].Outcome, res.Items[0].Refusal)
	}
	for _, n := range []int{0, engine.MaxBatchItems + 1} {
		entries := make([]engine.BatchEntry, n)
		for i := range entries {
			entries[i] = entry(newKey(), "go-basics", 1)
		}
		if _, err := h.eng.Batch(h.ctx, "alice", entries, false); engine.ErrorCode(err) != engine.CodeRequestContract {
			t.Errorf("a batch of %d: %v, want request_contract", n, err)
		}
	}
	h.wantCounts(2, 3)
}

// testBatchAtomicRefusal: an atomic batch with any item that would not be
// reserved stores nothing at all; the items that caused it keep their
// reason and the others get batch_refused; decided again later it is
// decided afresh, and once made it replays as a whole.
func testBatchAtomicRefusal(t *testing.T, h *harness) {
	h.workshop("course", 4, 2)
	h.workshop("other", 10, 2)
	taken, unavailableKey := newKey(), newKey()
	h.mustReserve("alice", taken, "other", 1)
	k1, k2, k3 := newKey(), newKey(), newKey()
	for name, tc := range map[string]struct {
		entries []engine.BatchEntry
		reasons map[int]string // Item index to its reason: an error code, or "unavailable".
	}{
		"unavailable":    {[]engine.BatchEntry{entry(k1, "course", 2), entry(k2, "course", 2), entry(k3, "course", 1)}, map[int]string{}},
		"unknown":        {[]engine.BatchEntry{entry(k1, "course", 1), entry(k2, "nope", 1)}, map[int]string{1: engine.CodeUnknownWorkshop}},
		"conflict":       {[]engine.BatchEntry{entry(k1, "course", 1), entry(taken, "other", 2)}, map[int]string{1: engine.CodeOperationConflict}},
		"same key":       {[]engine.BatchEntry{entry(k1, "course", 1), entry(k1, "course", 2)}, map[int]string{1: engine.CodeOperationConflict}},
		"replay kept":    {[]engine.BatchEntry{entry(taken, "other", 1), entry(k2, "course", 2), entry(k3, "course", 3)}, map[int]string{0: "replayed " + engine.StatusReserved, 2: engine.CodeRequestContract}},
		"invalid":        {[]engine.BatchEntry{entry(k1, "course", 1), entry("bad", "course", 1)}, map[int]string{1: engine.CodeInvalidIdempotencyKey}},
		"over max":       {[]engine.BatchEntry{entry(k1, "course", 3)}, map[int]string{0: engine.CodeRequestContract}},
		"stored refusal": {[]engine.BatchEntry{entry(k1, "course", 1), entry(unavailableKey, "full", 1)}, map[int]string{1: engine.CodeUnknownWorkshop}},
	} {
		before, beforeReceipts := h.counts()
		res := h.batch(t, "alice", true, tc.entries...)
		if !res.Refused {
			t.Errorf("%s: the atomic batch was not refused: %+v", name, res.Items)
			continue
		}
		for i, it := range res.Items {
			reason, ok := tc.reasons[i]
			got := engine.ErrorCode(it.Refusal)
			switch {
			case it.Refusal == nil && it.Outcome.Replayed:
				got = "replayed " + it.Outcome.Answer.Status
			case it.Refusal == nil:
				got = it.Outcome.Answer.Status // Never: an item not stored before looks decided.
			}
			if !ok {
				reason = engine.CodeBatchRefused
			}
			if got != reason {
				t.Errorf("%s: item %d = %q, want %q", name, i+1, got, reason)
			}
			// Every refused item names its reason: its own code, or one
			// of the engine's reason words for batch_refused.
			switch {
			case it.Refusal == nil:
				if it.Reason != "" {
					t.Errorf("%s: item %d is answered and has the reason %q", name, i+1, it.Reason)
				}
			case got == engine.CodeBatchRefused:
				if !slices.Contains(engine.RefusalReasons, it.Reason) {
					t.Errorf("%s: item %d is batch_refused with the reason %q, want one of %v", name, i+1, it.Reason, engine.RefusalReasons)
				}
			case it.Reason != got:
				t.Errorf("%s: item %d is refused with %s and the reason %q", name, i+1, got, it.Reason)
			}
		}
		if name == "unavailable" && res.Items[2].Reason != engine.ReasonUnavailable {
			t.Errorf("unavailable: the item without places has the reason %q", res.Items[2].Reason)
		}
		if name == "unavailable" && !strings.Contains(engine.ErrorMessage(res.Items[2].Refusal), "too few places") {
			t.Errorf("unavailable: the item without places says %v", res.Items[2].Refusal)
		}
		if name == "same key" && !strings.Contains(engine.ErrorMessage(res.Items[1].Refusal), "item 2 has the operation key of item 1") {
			t.Errorf("same key: the conflict says %v", res.Items[1].Refusal)
		}
		if after, afterReceipts := h.counts(); after != before || afterReceipts != beforeReceipts {
			t.Errorf("%s: a refused atomic batch stored %d reservations and %d receipts", name, after-before, afterReceipts-beforeReceipts)
		}
		h.wantReserved("course", 0)
	}
	// A stored unavailable answer refuses an atomic batch that replays it.
	h.workshop("full", 0, 1)
	if out := h.mustReserve("alice", unavailableKey, "full", 1); out.Answer.Status != engine.StatusUnavailable {
		t.Fatalf("reserve in a full workshop = %+v", out)
	}
	res := h.batch(t, "alice", true, entry(k1, "course", 1), entry(unavailableKey, "full", 1))
	if !res.Refused || res.Items[1].Refusal != nil || res.Items[1].Outcome.Answer.Status != engine.StatusUnavailable || !res.Items[1].Outcome.Replayed {
		t.Errorf("atomic batch replaying an unavailable answer = %+v", res)
	}
	// The first batch again once there is room: all reserved, and replayed
	// as a whole when sent once more.
	if _, _, err := h.eng.PutWorkshop(h.ctx, "course", engine.WorkshopSpec{Capacity: 5}, nil); err != nil {
		t.Fatal(err)
	}
	entries := []engine.BatchEntry{entry(k1, "course", 2), entry(k2, "course", 2), entry(k3, "course", 1)}
	made := h.batch(t, "alice", true, entries...)
	again := h.batch(t, "alice", true, entries...)
	for i := range entries {
		if made.Refused || made.Items[i].Outcome.Answer.Status != engine.StatusReserved || made.Items[i].Outcome.Replayed {
			t.Errorf("item %d of the atomic batch with room = %+v, %v", i+1, made.Items[i].Outcome, made.Items[i].Refusal)
		}
		if again.Refused || !again.Items[i].Outcome.Replayed || !bytes.Equal(again.Items[i].Outcome.Answer.JSON(), made.Items[i].Outcome.Answer.JSON()) {
			t.Errorf("replay of item %d = %+v, %v", i+1, again.Items[i].Outcome, again.Items[i].Refusal)
		}
	}
	h.wantReserved("course", 5)
}

// testBatchMixedReplay: a batch of keys already decided (by Reserve and by
// an earlier batch) and new ones replays the decided ones byte for byte
// and decides the new ones.
func testBatchMixedReplay(t *testing.T, h *harness) {
	h.workshop("go-basics", 10, 2)
	single := newKey()
	first := h.mustReserve("alice", single, "go-basics", 2)
	earlier := h.batch(t, "alice", false, entry(newKey(), "go-basics", 1), entry(newKey(), "go-basics", 1))
	entries := []engine.BatchEntry{entry(single, "go-basics", 2), entry(newKey(), "go-basics", 2)}
	for _, it := range earlier.Items {
		entries = append(entries, entry(it.Key, "go-basics", 1))
	}
	entries = append(entries, entry(newKey(), "go-basics", 1))
	res := h.batch(t, "alice", false, entries...)
	wantReplay := map[int][]byte{0: first.Answer.JSON(), 2: earlier.Items[0].Outcome.Answer.JSON(), 3: earlier.Items[1].Outcome.Answer.JSON()}
	for i, it := range res.Items {
		want, replay := wantReplay[i]
		switch {
		case it.Refusal != nil || it.Outcome.Answer.Status != engine.StatusReserved:
			t.Errorf("item %d = %+v, %v", i+1, it.Outcome, it.Refusal)
		case it.Outcome.Replayed != replay:
			t.Errorf("item %d replayed %t, want %t", i+1, it.Outcome.Replayed, replay)
		case replay && !bytes.Equal(it.Outcome.Answer.JSON(), want):
			t.Errorf("item %d replayed %s, want %s", i+1, it.Outcome.Answer.JSON(), want)
		}
	}
	h.wantReserved("go-basics", 7)
	h.wantCounts(5, 5)
}

// testBatchFailReceiptWrite: a receipt write that fails inside a batch
// rolls back every item, atomic or not; the same batch then decides
// every item once.
func testBatchFailReceiptWrite(t *testing.T, h *harness) {
	h.workshop("go-basics", 10, 2)
	entries := []engine.BatchEntry{entry(newKey(), "go-basics", 1), entry(newKey(), "go-basics", 2), entry(newKey(), "go-basics", 1)}
	for _, atomic := range []bool{false, true} {
		h.failReceiptWrites(1)
		if _, err := h.eng.Batch(h.ctx, "alice", entries, atomic); err == nil {
			t.Fatalf("atomic %t: a batch whose receipt write failed succeeded", atomic)
		}
		h.wantReserved("go-basics", 0)
		h.wantCounts(0, 0)
	}
	res := h.batch(t, "alice", false, entries...)
	for i, it := range res.Items {
		if it.Refusal != nil || it.Outcome.Replayed || it.Outcome.Answer.Status != engine.StatusReserved {
			t.Errorf("item %d after the failures = %+v, %v", i+1, it.Outcome, it.Refusal)
		}
	}
	h.wantReserved("go-basics", 4)
	h.wantCounts(3, 3)
}

// testConcurrentOverlappingBatches: 64 goroutines send batches whose keys
// overlap (each key in several batches of two actors, atomic and not)
// against a workshop with fewer places than keys: capacity holds, every
// (actor, key) has one effect, and every answer to it is the same bytes.
func testConcurrentOverlappingBatches(t *testing.T, h *harness) {
	const places, keys, senders, perBatch = 60, 100, 64, 10
	h.workshop("go-basics", places, 1)
	pool := make([]engine.OperationKey, keys)
	for i := range pool {
		pool[i] = newKey()
	}
	var mu sync.Mutex
	answers := map[string][]byte{} // actor/key to its answer.
	var wg sync.WaitGroup
	for g := range senders {
		wg.Go(func() {
			actor := fmt.Sprintf("user%d", g%2)
			entries := make([]engine.BatchEntry, perBatch)
			for i := range entries {
				entries[i] = entry(pool[(g*7+i*13)%keys], "go-basics", 1)
			}
			res, err := h.eng.Batch(h.ctx, actor, entries, g%4 == 0)
			if err != nil {
				t.Errorf("batch %d: %v", g, err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, it := range res.Items {
				switch {
				case res.Refused && it.Refusal != nil:
					continue // Nothing stored; the reason is the item's own or batch_refused.
				case it.Refusal != nil:
					t.Errorf("batch %d: item %s: %v", g, it.Key, it.Refusal)
					continue
				}
				id := actor + "/" + string(it.Key)
				body := it.Outcome.Answer.JSON()
				if prev, ok := answers[id]; ok && !bytes.Equal(prev, body) {
					t.Errorf("%s answered %s and %s", id, prev, body)
				}
				answers[id] = body
			}
		})
	}
	wg.Wait()
	reserved := 0
	for _, body := range answers {
		if bytes.Contains(body, []byte(`"status":"reserved"`)) {
			reserved++
		}
	}
	w, err := h.eng.Workshop(h.ctx, "go-basics")
	if err != nil || w.Reserved > places || w.Available < 0 || w.Reserved != reserved {
		t.Fatalf("workshop after the batches = %+v, %v; %d reserved answers", w, err, reserved)
	}
	reservations, receipts := h.counts()
	if reservations != reserved || receipts != len(answers) {
		t.Fatalf("%d reservations and %d receipts for %d reserved answers to %d operations", reservations, receipts, reserved, len(answers))
	}
}
