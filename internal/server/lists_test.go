package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server/servertest"
)

// TestListsOfOnesOwn: GET /api/v1/reservations and /api/v1/holds list the
// caller's own, newest first, one page at a time, with the documented
// members; another actor's only for an admin; bad queries are 422.
func TestListsOfOnesOwn(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, servertest.Options{})
	var ids []string
	for range 3 {
		resp, body := send(t, h, reservationCall(h.Alice, uuid.NewString(), fmt.Sprintf(`{"workshop":%q,"quantity":1}`, servertest.Workshop)))
		var a engine.Answer
		if err := json.Unmarshal(body, &a); err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("reserve: %d %s", resp.StatusCode, body)
		}
		ids = append(ids, a.ReservationID)
	}
	// Newest first is descending id order: ids start with their
	// millisecond, and within one they are in id order.
	slices.Sort(ids)
	slices.Reverse(ids)
	send(t, h, cancelCall(h.Alice, uuid.NewString(), ids[1]))

	get := func(via, path string) (int, []byte) {
		t.Helper()
		resp, body := send(t, h, call{via: via, method: http.MethodGet, path: path})
		return resp.StatusCode, body
	}
	status, body := get(h.Alice, "/api/v1/reservations?status=all&limit=2")
	var page api.ReservationPage
	if err := json.Unmarshal(body, &page); err != nil || status != http.StatusOK || len(page.Reservations) != 2 || page.NextCursor == "" ||
		page.Reservations[0].ID != ids[0] || page.Reservations[1].ID != ids[1] || page.Reservations[1].Status != "cancelled" || page.Reservations[1].CancelledAt.IsZero() {
		t.Fatalf("first page = %d %s", status, body)
	}
	status, body = get(h.Alice, "/api/v1/reservations?status=all&limit=2&cursor="+page.NextCursor)
	page = api.ReservationPage{}
	if err := json.Unmarshal(body, &page); err != nil || status != http.StatusOK || len(page.Reservations) != 1 || page.NextCursor != "" || page.Reservations[0].ID != ids[2] {
		t.Fatalf("second page = %d %s", status, body)
	}
	status, body = get(h.Alice, "/api/v1/reservations")
	if want := fmt.Sprintf(`{"reservations":[{"id":%q,"workshop":%q,"quantity":1,"status":"active","created_at":`, ids[0], servertest.Workshop); status != http.StatusOK || len(body) < len(want) || string(body[:len(want)]) != want {
		t.Fatalf("active reservations = %d %s", status, body)
	}
	if status, body := get(h.Bob, "/api/v1/reservations?status=all"); status != http.StatusOK || strings.TrimSpace(string(body)) != `{"reservations":[]}` {
		t.Fatalf("bob's reservations = %d %s", status, body)
	}
	resp, body := send(t, h, call{via: h.Bob, method: http.MethodGet, path: "/api/v1/reservations?actor=alice"})
	wantProblem(t, resp, body, http.StatusForbidden, engine.CodeForbidden)
	for _, q := range []string{"?status=gone", "?limit=0", "?limit=x", "?cursor=nope", "?color=red", "?status=all&status=all"} {
		resp, body := send(t, h, call{via: h.Alice, method: http.MethodGet, path: "/api/v1/reservations" + q})
		wantProblem(t, resp, body, http.StatusUnprocessableEntity, engine.CodeRequestContract)
	}

	hold := call{via: h.Alice, method: http.MethodPost, path: "/api/v1/holds", header: http.Header{api.HeaderIdempotencyKey: {uuid.NewString()}, "Content-Type": {api.MediaJSON}},
		body: fmt.Sprintf(`{"workshop":%q,"quantity":1,"ttl_seconds":600}`, servertest.Workshop)}
	if resp, body := send(t, h, hold); resp.StatusCode != http.StatusCreated {
		t.Fatalf("hold: %d %s", resp.StatusCode, body)
	}
	status, body = get(h.Alice, "/api/v1/holds")
	var holds api.HoldPage
	if err := json.Unmarshal(body, &holds); err != nil || status != http.StatusOK || len(holds.Holds) != 1 || holds.Holds[0].State != engine.HoldHeld {
		t.Fatalf("alice's holds = %d %s", status, body)
	}
	if status, body := get(h.Bob, "/api/v1/holds"); status != http.StatusOK || strings.TrimSpace(string(body)) != `{"holds":[]}` {
		t.Fatalf("bob's holds = %d %s", status, body)
	}
}
