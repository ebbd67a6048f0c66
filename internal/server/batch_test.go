package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server/servertest"
)

// batchCall is a POST /api/v1/batches with body.
func batchCall(via, body string) call {
	return call{via: via, method: http.MethodPost, path: api.PathBatches, header: http.Header{"Content-Type": {api.MediaJSON}}, body: body}
}

// batchBody is the body of a batch of (key, workshop, quantity) items.
func batchBody(atomic bool, items ...[3]any) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"atomic":%t,"items":[`, atomic)
	for i, it := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"key":%q,"workshop":%q,"quantity":%d}`, it[0], it[1], it[2])
	}
	b.WriteString("]}")
	return b.String()
}

// sendBatch sends a batch and decodes its answer.
func sendBatch(t *testing.T, h *servertest.Harness, via, body string) (int, api.BatchAnswer) {
	t.Helper()
	resp, raw := send(t, h, batchCall(via, body))
	var a api.BatchAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatalf("batch answer %d %s: %v", resp.StatusCode, raw, err)
	}
	return resp.StatusCode, a
}

// TestBatchItemsAreSingleReservations: every item of a batch gets the
// status and the exact body its single reservation gets, and either
// endpoint replays the other's answer byte for byte; an invalid item is
// refused on its own; the same key twice is one operation.
func TestBatchItemsAreSingleReservations(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	demo := servertest.Workshop // 3 places, at most 2 per reservation.
	k1, k2, k3, k4 := uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString()
	status, a := sendBatch(t, h, h.Alice, batchBody(false,
		[3]any{k1, demo, 2}, [3]any{k1, demo, 2}, [3]any{k2, demo, 2}, [3]any{k3, "no-such", 1}, [3]any{"not-a-key", demo, 1}, [3]any{k1, demo, 1}, [3]any{k4, demo, 1}))
	if status != http.StatusOK || a.Status != "" || len(a.Results) != 7 {
		t.Fatalf("batch = %d %+v", status, a)
	}
	want := []struct {
		status   int
		replayed bool
		code     string
	}{{201, false, ""}, {201, true, ""}, {409, false, ""}, {404, false, engine.CodeUnknownWorkshop}, {400, false, engine.CodeInvalidIdempotencyKey}, {409, false, engine.CodeOperationConflict}, {201, false, ""}}
	for i, w := range want {
		r := a.Results[i]
		var p api.Problem
		json.Unmarshal(r.Body, &p)
		if r.Status != w.status || r.Replayed != w.replayed || p.Code != w.code {
			t.Errorf("item %d = %d replayed %t %s; want %d replayed %t code %q", i+1, r.Status, r.Replayed, r.Body, w.status, w.replayed, w.code)
		}
	}
	if string(a.Results[0].Body) != string(a.Results[1].Body) || !strings.Contains(string(a.Results[2].Body), `"status":"unavailable"`) {
		t.Errorf("bodies: %s / %s / %s", a.Results[0].Body, a.Results[1].Body, a.Results[2].Body)
	}
	// The single endpoint replays what the batch decided, byte for byte.
	for _, i := range []int{0, 2, 6} {
		req := map[int]string{0: `{"workshop":"workshop-demo","quantity":2}`, 2: `{"workshop":"workshop-demo","quantity":2}`, 6: `{"workshop":"workshop-demo","quantity":1}`}[i]
		resp, body := send(t, h, reservationCall(h.Alice, a.Results[i].Key, req))
		if resp.StatusCode != a.Results[i].Status || resp.Header.Get(api.HeaderReplayed) != "true" || string(body) != string(a.Results[i].Body) {
			t.Errorf("single replay of item %d = %d %s, want %d %s", i+1, resp.StatusCode, body, a.Results[i].Status, a.Results[i].Body)
		}
	}
	// And the batch replays what the single endpoint decided.
	k5 := uuid.NewString()
	resp, single := send(t, h, reservationCall(h.Bob, k5, `{"workshop":"workshop-demo","quantity":1}`))
	_, b := sendBatch(t, h, h.Bob, batchBody(false, [3]any{k5, demo, 1}))
	if r := b.Results[0]; r.Status != resp.StatusCode || !r.Replayed || string(r.Body) != string(single) {
		t.Errorf("batch replay of a single reservation = %d %t %s, want %d %s", r.Status, r.Replayed, r.Body, resp.StatusCode, single)
	}
	// Keys are per actor: bob's batch with alice's key is bob's own.
	if _, b := sendBatch(t, h, h.Bob, batchBody(false, [3]any{k1, demo, 2})); b.Results[0].Replayed {
		t.Errorf("bob replayed alice's key: %+v", b.Results[0])
	}
	h.MustCheckClean(t)
}

// TestAtomicBatch: an atomic batch that an item refuses stores nothing and
// names every item's reason; the same batch is decided afresh later, and
// once made, replayed as a whole.
func TestAtomicBatch(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	putWorkshop(t, h, "course", 4, 2)
	k1, k2, k3 := uuid.NewString(), uuid.NewString(), uuid.NewString()
	body := batchBody(true, [3]any{k1, "course", 2}, [3]any{k2, "course", 2}, [3]any{k3, "course", 1})
	status, a := sendBatch(t, h, h.Alice, body)
	if status != http.StatusConflict || a.Status != engine.CodeBatchRefused || len(a.Results) != 3 {
		t.Fatalf("atomic batch over capacity = %d %+v", status, a)
	}
	// Nothing was stored, so no item looks decided: the one without places
	// says so in its batch_refused problem.
	for i := range 3 {
		var p api.Problem
		if json.Unmarshal(a.Results[i].Body, &p); p.Code != engine.CodeBatchRefused || a.Results[i].Status != http.StatusConflict || a.Results[i].Replayed {
			t.Errorf("item %d = %d %s, want batch_refused", i+1, a.Results[i].Status, a.Results[i].Body)
		}
	}
	if r := a.Results[2]; !strings.Contains(string(r.Body), "too few places") {
		t.Errorf("the item without places = %d %s", r.Status, r.Body)
	}
	wantReasons(t, a, engine.ReasonOtherItemRefused, engine.ReasonOtherItemRefused, engine.ReasonUnavailable)
	if n := reserved(t, h, "course"); n != 0 {
		t.Fatalf("a refused atomic batch reserved %d places", n)
	}
	for _, k := range []string{k1, k2, k3} {
		resp, body := send(t, h, call{via: h.Alice, method: http.MethodGet, path: api.OperationPath(engine.OperationKey(k))})
		wantProblem(t, resp, body, http.StatusNotFound, engine.CodeUnknownOperation)
	}
	putWorkshop(t, h, "course", 5, 2)
	status, a = sendBatch(t, h, h.Alice, body)
	if status != http.StatusOK || a.Results[0].Status != 201 || a.Results[2].Status != 201 {
		t.Fatalf("the same atomic batch with room = %d %+v", status, a)
	}
	status, again := sendBatch(t, h, h.Alice, body)
	for i := range again.Results {
		if status != http.StatusOK || !again.Results[i].Replayed || string(again.Results[i].Body) != string(a.Results[i].Body) {
			t.Errorf("replay of item %d = %d %+v", i+1, status, again.Results[i])
		}
	}
	// A refused atomic batch keeps the replay of an item stored before.
	status, a = sendBatch(t, h, h.Alice, batchBody(true, [3]any{k1, "course", 2}, [3]any{uuid.NewString(), "course", 1}))
	if status != http.StatusConflict || a.Results[0].Status != 201 || !a.Results[0].Replayed || string(a.Results[0].Body) != string(again.Results[0].Body) {
		t.Errorf("atomic batch with a replay and no places = %d %+v", status, a)
	}
	// An atomic batch with an invalid item stores nothing either.
	k4 := uuid.NewString()
	status, a = sendBatch(t, h, h.Alice, `{"atomic":true,"items":[{"key":"`+k4+`","workshop":"workshop-demo","quantity":1},{"key":"`+uuid.NewString()+`","workshop":"workshop-demo","quantity":"1"}]}`)
	if status != http.StatusConflict || a.Results[1].Status != http.StatusUnprocessableEntity || reserved(t, h, servertest.Workshop) != 0 {
		t.Errorf("atomic batch with an invalid item = %d %+v", status, a)
	}
	h.MustCheckClean(t)
}

// TestBatchWholeProblems: a body that is not a batch is one problem and
// stores nothing.
func TestBatchWholeProblems(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	item := func() string {
		return `{"key":"` + uuid.NewString() + `","workshop":"workshop-demo","quantity":1}`
	}
	many := make([]string, engine.MaxBatchItems+1)
	for i := range many {
		many[i] = item()
	}
	for name, body := range map[string]string{
		"not JSON":         `{"items":[` + item() + `,`,
		"an array":         `[` + item() + `]`,
		"no items":         `{"atomic":false}`,
		"empty items":      `{"items":[]}`,
		"items not array":  `{"items":{}}`,
		"unknown member":   `{"items":[` + item() + `],"dry_run":true}`,
		"atomic not bool":  `{"atomic":"yes","items":[` + item() + `]}`,
		"items twice":      `{"items":[` + item() + `],"items":[` + item() + `]}`,
		"trailing data":    `{"items":[` + item() + `]} {}`,
		"too many items":   `{"items":[` + strings.Join(many, ",") + `]}`,
		"broken item JSON": `{"items":[{"key":}]}`,
	} {
		resp, raw := send(t, h, batchCall(h.Alice, body))
		wantProblem(t, resp, raw, http.StatusUnprocessableEntity, engine.CodeRequestContract)
		_ = name
	}
	big := `{"items":[` + strings.Repeat(item()+",", api.MaxBatchBytes/len(item())) + item() + `]}`
	resp, raw := send(t, h, batchCall(h.Alice, big))
	wantProblem(t, resp, raw, http.StatusRequestEntityTooLarge, api.CodeBodyTooLarge)
	resp, raw = send(t, h, call{via: h.Alice, method: http.MethodPost, path: api.PathBatches, header: http.Header{"Content-Type": {"text/plain"}}, body: `{"items":[` + item() + `]}`})
	wantProblem(t, resp, raw, http.StatusUnsupportedMediaType, api.CodeUnsupportedMediaType)
	resp, raw = send(t, h, batchCall(viaNoToken, `{"items":[`+item()+`]}`))
	wantProblem(t, resp, raw, http.StatusUnauthorized, engine.CodeUnauthenticated)
	if n := reserved(t, h, servertest.Workshop); n != 0 {
		t.Errorf("refused batches reserved %d places", n)
	}
	h.MustCheckClean(t)
}

// putWorkshop creates or updates workshop id through the engine.
func putWorkshop(t *testing.T, h *servertest.Harness, id string, capacity, maxQuantity int) {
	t.Helper()
	if _, _, err := h.Engine.PutWorkshop(t.Context(), id, engine.WorkshopSpec{Capacity: capacity, MaxQuantity: maxQuantity}, nil); err != nil {
		t.Fatal(err)
	}
}

// reserved returns the places reserved in workshop id.
func reserved(t *testing.T, h *servertest.Harness, id string) int {
	t.Helper()
	w, err := h.Engine.Workshop(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return w.Reserved
}

// TestBatchItemChecksInOrder: an invalid item is checked as the single
// reservation is, its operation key first, and refused on its own.
func TestBatchItemChecksInOrder(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	good := uuid.NewString()
	status, a := sendBatch(t, h, h.Alice, `{"items":[{"workshop":"workshop-demo","quantity":1},{"key":"nope","quantity":"x"},5,{"key":"`+uuid.NewString()+`","workshop":"workshop-demo","quantity":"1"},{"key":"`+good+`","workshop":"workshop-demo","quantity":1}]}`)
	if status != http.StatusOK || len(a.Results) != 5 {
		t.Fatalf("batch = %d %+v", status, a)
	}
	for i, want := range []struct {
		status int
		code   string
		detail string
	}{
		{400, api.CodeMissingIdempotencyKey, `item 1 has no member "key"`},
		{400, engine.CodeInvalidIdempotencyKey, `item 2: member "key" must be`},
		{422, engine.CodeRequestContract, "item 3 must be a JSON object"},
		{422, engine.CodeRequestContract, `item 4: member "quantity" must be`},
		{201, "", ""},
	} {
		var p api.Problem
		json.Unmarshal(a.Results[i].Body, &p)
		if a.Results[i].Status != want.status || p.Code != want.code || !strings.HasPrefix(p.Detail, want.detail) {
			t.Errorf("item %d = %d %s; want %d %s %q…", i+1, a.Results[i].Status, a.Results[i].Body, want.status, want.code, want.detail)
		}
	}
	if a.Results[1].Key != "nope" || a.Results[4].Key != good {
		t.Errorf("keys = %q, %q", a.Results[1].Key, a.Results[4].Key)
	}
	if n := reserved(t, h, servertest.Workshop); n != 1 {
		t.Errorf("reserved %d places, want 1", n)
	}
}

// wantReasons checks the reason member of every item of the refused atomic
// batch a.
func wantReasons(t *testing.T, a api.BatchAnswer, want ...string) {
	t.Helper()
	for i, r := range a.Results {
		var p api.Problem
		if err := json.Unmarshal(r.Body, &p); err != nil || i >= len(want) || p.Reason != want[i] {
			t.Errorf("item %d of the refused batch = %s, want the reason %q", i+1, r.Body, want[min(i, len(want)-1)])
		}
	}
}

// TestAtomicBatchReasons: every item of a refused atomic batch names why it
// was not reserved in its reason member: its own refusal's code, or that
// another item refused the batch before it was decided.
func TestAtomicBatchReasons(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	putWorkshop(t, h, "course", 4, 2)
	for _, c := range []struct {
		name  string
		items [][3]any
		want  []string
	}{
		{"an unknown workshop", [][3]any{{uuid.NewString(), "course", 1}, {uuid.NewString(), "no-such-course", 1}},
			[]string{engine.ReasonOtherItemRefused, engine.CodeUnknownWorkshop}},
		{"an invalid item", [][3]any{{uuid.NewString(), "course", 1}, {uuid.NewString(), "course", 0}},
			[]string{engine.ReasonNotDecided, engine.CodeRequestContract}},
		{"over the maximum per request", [][3]any{{uuid.NewString(), "course", 3}, {uuid.NewString(), "course", 1}},
			[]string{engine.CodeRequestContract, engine.ReasonOtherItemRefused}},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, a := sendBatch(t, h, h.Alice, batchBody(true, c.items...))
			if status != http.StatusConflict || a.Status != engine.CodeBatchRefused {
				t.Fatalf("atomic batch = %d %+v, want 409 batch_refused", status, a)
			}
			wantReasons(t, a, c.want...)
		})
	}
	if n := reserved(t, h, "course"); n != 0 {
		t.Fatalf("refused atomic batches reserved %d places", n)
	}
}
