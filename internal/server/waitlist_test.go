package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server/servertest"
)

// TestWaitlistJoinOfferLeave: a reservation request with "waitlist" that
// finds the workshop full is answered 202 waiting with its entry and
// position, without Location, and replayed byte for byte; the lists show
// the entries with their positions now, the organizer's in the order they
// joined; a freed place is offered to the first entry as a hold, which
// its owner confirms with the hold's route; leaving answers by the
// entry's state, and a workshop with people waiting cannot be deleted.
func TestWaitlistJoinOfferLeave(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, servertest.Options{})
	demo := servertest.Workshop
	full := `{"workshop":"` + demo + `","quantity":2}`
	join := `{"workshop":"` + demo + `","quantity":2,"waitlist":true}`
	resp, body := send(t, h, reservationCall(h.Alice, uuid.NewString(), full))
	var alices engine.Answer
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(body, &alices) != nil {
		t.Fatalf("alice's reservation = %d %s", resp.StatusCode, body)
	}

	kBob := uuid.NewString()
	resp, body = send(t, h, reservationCall(h.Bob, kBob, join))
	var bobs engine.Answer
	if err := json.Unmarshal(body, &bobs); err != nil || !engine.IsWaitEntryID(bobs.EntryID) {
		t.Fatalf("bob's answer %s: %v", body, err)
	}
	want := `{"status":"waiting","entry_id":"` + bobs.EntryID + `","workshop":"` + demo + `","quantity":2,"position":1}`
	wantAnswer(t, "bob joins", resp, body, http.StatusAccepted, want, false)
	if loc := resp.Header.Get("Location"); loc != "" {
		t.Errorf("a waiting answer has Location %q", loc)
	}
	resp, body = send(t, h, reservationCall(h.Bob, kBob, join))
	wantAnswer(t, "bob joins again", resp, body, http.StatusAccepted, want, true)
	resp, body = send(t, h, reservationCall(viaSocket, uuid.NewString(), join))
	var roots engine.Answer
	if resp.StatusCode != http.StatusAccepted || json.Unmarshal(body, &roots) != nil || roots.Position != 2 {
		t.Fatalf("the socket's actor joins = %d %s, want 202 at position 2", resp.StatusCode, body)
	}

	// The lists.
	page := waitlistPage(t, h, h.Bob, api.PathWaitlist)
	if len(page.Entries) != 1 || page.Entries[0].ID != bobs.EntryID || page.Entries[0].State != engine.WaitWaiting || page.Entries[0].Position != 1 {
		t.Fatalf("bob's list = %+v", page)
	}
	if page := waitlistPage(t, h, h.Alice, api.PathWaitlist); page.Entries == nil || len(page.Entries) != 0 {
		t.Errorf("alice's list = %+v, want an empty list", page)
	}
	resp, body = send(t, h, call{via: h.Alice, method: http.MethodGet, path: api.PathWaitlist})
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != `{"entries":[]}` {
		t.Errorf("alice's empty list = %d %s, want {\"entries\":[]}", resp.StatusCode, body)
	}
	organizers := waitlistPage(t, h, h.Admin, api.WorkshopWaitlistPath(demo))
	if len(organizers.Entries) != 2 || organizers.Entries[0].ID != bobs.EntryID || organizers.Entries[1].ID != roots.EntryID || organizers.Entries[1].Position != 2 {
		t.Fatalf("the organizer's list = %+v, want bob's entry, then the socket's actor's", organizers)
	}
	resp, body = send(t, h, call{via: h.Bob, method: http.MethodGet, path: api.WorkshopWaitlistPath(demo)})
	wantProblem(t, resp, body, http.StatusForbidden, engine.CodeForbidden)
	resp, body = send(t, h, call{via: h.Admin, method: http.MethodGet, path: api.WorkshopPath(demo)})
	var w engine.Workshop
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &w) != nil || w.Waiting != 2 {
		t.Errorf("the workshop = %d %s, want 200 with 2 waiting", resp.StatusCode, body)
	}

	// alice cancels: bob is offered her places, as a hold.
	resp, body = send(t, h, call{via: h.Alice, method: http.MethodPost, path: api.CancelPath(alices.ReservationID), header: http.Header{api.HeaderIdempotencyKey: {uuid.NewString()}}})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("alice cancels = %d %s", resp.StatusCode, body)
	}
	page = waitlistPage(t, h, h.Bob, api.PathWaitlist)
	offer := page.Entries[0]
	if offer.State != engine.WaitOffered || !engine.IsHoldID(offer.HoldID) || offer.Position != 0 || offer.OfferExpiresAt.IsZero() {
		t.Fatalf("bob's entry after the cancellation = %+v, want offered with its hold and deadline", offer)
	}
	if got := waitlistPage(t, h, viaSocket, api.PathWaitlist).Entries[0].Position; got != 1 {
		t.Errorf("the socket's actor's position after bob's offer = %d, want 1", got)
	}
	resp, body = send(t, h, settleCall(h.Bob, uuid.NewString(), api.ConfirmPath(offer.HoldID)))
	if resp.StatusCode != http.StatusCreated || !strings.Contains(string(body), `"status":"reserved"`) {
		t.Fatalf("bob confirms the offer = %d %s", resp.StatusCode, body)
	}

	// Leaving: the socket's actor leaves; bob's entry was reserved.
	kLeave := uuid.NewString()
	leaveWant := `{"status":"left","entry_id":"` + roots.EntryID + `","workshop":"` + demo + `","quantity":2}`
	resp, body = send(t, h, settleCall(viaSocket, kLeave, api.WaitlistLeavePath(roots.EntryID)))
	wantAnswer(t, "leave", resp, body, http.StatusOK, leaveWant, false)
	resp, body = send(t, h, settleCall(viaSocket, kLeave, api.WaitlistLeavePath(roots.EntryID)))
	wantAnswer(t, "leave again", resp, body, http.StatusOK, leaveWant, true)
	resp, body = send(t, h, settleCall(viaSocket, uuid.NewString(), api.WaitlistLeavePath(roots.EntryID)))
	wantAnswer(t, "leave under a new key", resp, body, http.StatusConflict, strings.Replace(leaveWant, `"left"`, `"already_left"`, 1), false)
	resp, body = send(t, h, settleCall(h.Bob, uuid.NewString(), api.WaitlistLeavePath(bobs.EntryID)))
	wantAnswer(t, "bob leaves", resp, body, http.StatusConflict, `{"status":"already_reserved","entry_id":"`+bobs.EntryID+`","workshop":"`+demo+`","quantity":2}`, false)
	resp, body = send(t, h, settleCall(h.Alice, uuid.NewString(), api.WaitlistLeavePath(bobs.EntryID)))
	wantProblem(t, resp, body, http.StatusNotFound, engine.CodeUnknownEntry)
	resp, body = send(t, h, call{via: h.Bob, method: http.MethodPost, path: api.WaitlistLeavePath(bobs.EntryID), header: http.Header{"Content-Type": {api.MediaJSON}}, body: "{}"})
	wantProblem(t, resp, body, http.StatusBadRequest, api.CodeMissingIdempotencyKey)
	h.MustCheckClean(t)
}

// TestWaitlistDeleteAndOfferTTL: the organizer's offer time to live is
// set, shown and set back to the default; a workshop nobody has places
// in but with people waiting cannot be deleted until they leave.
func TestWaitlistDeleteAndOfferTTL(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	h := servertest.Start(t, servertest.Options{Clock: clock.Now})
	put := call{via: h.Admin, method: http.MethodPut, path: api.WorkshopPath("empty"), header: http.Header{"Content-Type": {api.MediaJSON}}, body: `{"capacity":0,"offer_ttl_seconds":3600}`}
	resp, body := send(t, h, put)
	if resp.StatusCode != http.StatusCreated || !strings.Contains(string(body), `"offer_ttl_seconds":3600`) {
		t.Fatalf("PUT = %d %s, want 201 with offer_ttl_seconds 3600", resp.StatusCode, body)
	}
	resp, body = send(t, h, reservationCall(h.Alice, uuid.NewString(), `{"workshop":"empty","quantity":1,"waitlist":true}`))
	var a engine.Answer
	if resp.StatusCode != http.StatusAccepted || json.Unmarshal(body, &a) != nil {
		t.Fatalf("join = %d %s", resp.StatusCode, body)
	}
	resp, body = send(t, h, call{via: h.Admin, method: http.MethodDelete, path: api.WorkshopPath("empty")})
	wantProblem(t, resp, body, http.StatusConflict, engine.CodeWorkshopInUse)
	// A capacity raised offers the place, with the organizer's deadline.
	patch := func(body string) []byte {
		resp, out := send(t, h, call{via: h.Admin, method: http.MethodPatch, path: api.WorkshopPath("empty"), header: http.Header{"Content-Type": {api.MediaMergePatch}}, body: body})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("PATCH %s = %d %s", body, resp.StatusCode, out)
		}
		return out
	}
	patch(`{"capacity":1}`)
	entry := waitlistPage(t, h, h.Alice, api.PathWaitlist).Entries[0]
	if want := clock.Now().Truncate(time.Second).Add(time.Hour); entry.State != engine.WaitOffered || !entry.OfferExpiresAt.Equal(want) {
		t.Fatalf("alice's entry = %+v, want offered until %s", entry, want)
	}
	if out := patch(`{"offer_ttl_seconds":null}`); strings.Contains(string(out), "offer_ttl_seconds") {
		t.Errorf("after null the workshop still shows offer_ttl_seconds: %s", out)
	}
	resp, body = send(t, h, settleCall(h.Alice, uuid.NewString(), api.WaitlistLeavePath(a.EntryID)))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("leave = %d %s", resp.StatusCode, body)
	}
	resp, body = send(t, h, call{via: h.Admin, method: http.MethodDelete, path: api.WorkshopPath("empty")})
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE once nobody waits = %d %s", resp.StatusCode, body)
	}
}

// waitlistPage gets one page of a waiting list at path as via.
func waitlistPage(t *testing.T, h *servertest.Harness, via, path string) api.WaitlistPage {
	t.Helper()
	resp, body := send(t, h, call{via: via, method: http.MethodGet, path: path})
	var page api.WaitlistPage
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &page) != nil {
		t.Fatalf("GET %s = %d %s", path, resp.StatusCode, body)
	}
	return page
}
