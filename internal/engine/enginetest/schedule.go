package enginetest

import (
	"bytes"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// scheduled creates workshop id with capacity and schedule s.
func (h *harness) scheduled(id string, capacity int, s engine.Schedule) engine.Workshop {
	h.t.Helper()
	w, created, err := h.eng.PutWorkshop(h.ctx, id, engine.WorkshopSpec{Capacity: capacity, Title: "Workshop " + id, Schedule: s}, nil)
	if err != nil || !created {
		h.t.Fatalf("PutWorkshop(%s): created=%v err=%v", id, created, err)
	}
	return w
}

// wantStatus checks that out is a first answer (or a replay, when
// replayed) with status.
func wantStatus(t testing.TB, what string, out engine.Outcome, err error, status string, replayed bool) {
	t.Helper()
	if err != nil || out.Answer.Status != status || out.Replayed != replayed {
		t.Fatalf("%s = %+v (body %s), %v; want %s (replayed %v)", what, out, out.Answer.JSON(), err, status, replayed)
	}
}

func testScheduleRoundTrips(t *testing.T, h *harness) {
	berlin := time.FixedZone("CET", 3600)
	s := engine.Schedule{
		Description: "Throwing bowls.\nBring an apron.", Location: "Studio 3, Hafenstraße 12",
		StartsAt: time.Date(2026, 12, 5, 10, 0, 0, 0, berlin), EndsAt: time.Date(2026, 12, 5, 13, 0, 0, 0, berlin),
		TimeZone: "Europe/Berlin", RegistrationOpensAt: Now.Add(-time.Hour), MaxPerPerson: 2,
	}
	w := h.scheduled("pottery", 6, s)
	if !w.StartsAt.Equal(s.StartsAt) || !w.EndsAt.Equal(s.EndsAt) || w.Description != s.Description || w.Location != s.Location ||
		w.TimeZone != s.TimeZone || !w.RegistrationOpensAt.Equal(s.RegistrationOpensAt) || w.MaxPerPerson != 2 {
		t.Fatalf("PUT gave %+v, want the schedule %+v", w, s)
	}
	if _, off := w.StartsAt.Zone(); off != 3600 || w.Registration != engine.RegistrationOpen {
		t.Fatalf("view shows starts_at %s (offset %d) and registration %q; want the Berlin offset and open", w.StartsAt, off, w.Registration)
	}
	got, err := h.eng.Workshop(h.ctx, "pottery")
	if err != nil || got != w {
		t.Fatalf("GET = %+v, %v; want what PUT gave %+v", got, err, w)
	}

	// A patch changes only what it names; a pointer to a zero value
	// clears an optional member.
	title, empty, zero := "Pottery for beginners", "", 0
	p, err := h.eng.PatchWorkshop(h.ctx, "pottery", engine.WorkshopPatch{Title: &title, Location: &empty, MaxPerPerson: &zero}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Title != title || p.Location != "" || p.MaxPerPerson != 0 || p.Description != s.Description || !p.StartsAt.Equal(s.StartsAt) ||
		p.Capacity != 6 || p.Version != w.Version+1 {
		t.Fatalf("PATCH gave %+v", p)
	}
	stale := w.Version
	if _, err := h.eng.PatchWorkshop(h.ctx, "pottery", engine.WorkshopPatch{Title: &title}, &stale); engine.ErrorCode(err) != engine.CodeVersionMismatch {
		t.Fatalf("PATCH with a stale If-Match: %v, want %s", err, engine.CodeVersionMismatch)
	}
	if _, err := h.eng.PatchWorkshop(h.ctx, "nowhere", engine.WorkshopPatch{Title: &title}, nil); engine.ErrorCode(err) != engine.CodeUnknownWorkshop {
		t.Fatalf("PATCH of a missing workshop: %v, want %s", err, engine.CodeUnknownWorkshop)
	}
	if _, err := h.eng.Workshop(h.ctx, "nowhere"); engine.ErrorCode(err) != engine.CodeUnknownWorkshop {
		t.Fatalf("a refused PATCH created the workshop: %v", err)
	}

	// Refusals change nothing. A time outside the range every store
	// keeps as it is (engine.EarliestScheduleTime to
	// engine.LatestScheduleTime) is refused.
	early := s.StartsAt.Add(-time.Hour)
	seven, big := 7, 7
	for name, bad := range map[string]engine.WorkshopPatch{
		"ends before it starts":          {EndsAt: &early},
		"registration opens after start": {OpensAt: &s.EndsAt},
		"max_quantity above capacity":    {MaxQuantity: &seven},
		"max_per_person above capacity":  {MaxPerPerson: &big},
		"unknown time zone":              {TimeZone: ptr("Mars/Olympus")},
		"description too long":           {Description: ptr(string(bytes.Repeat([]byte("ä"), engine.MaxDescriptionChars+1)))},
		"control character in location":  {Location: ptr("a\x00b")},
		"fraction of a second":           {StartsAt: ptr(s.StartsAt.Add(time.Millisecond))},
		"the Unix epoch":                 {OpensAt: ptr(time.Unix(0, 0).UTC())},
		"after the latest time":          {EndsAt: ptr(engine.LatestScheduleTime.Add(time.Second))},
		"in the year 3000":               {EndsAt: ptr(time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC))},
	} {
		if _, err := h.eng.PatchWorkshop(h.ctx, "pottery", bad, nil); engine.ErrorCode(err) != engine.CodeRequestContract {
			t.Errorf("PATCH %s: %v, want %s", name, err, engine.CodeRequestContract)
		}
	}
	if now, _ := h.eng.Workshop(h.ctx, "pottery"); now != p {
		t.Fatalf("refused patches changed the workshop: %+v, want %+v", now, p)
	}
	// The earliest and the latest time read back as they were set.
	bounds := engine.WorkshopPatch{OpensAt: ptr(engine.EarliestScheduleTime), EndsAt: ptr(engine.LatestScheduleTime)}
	if b, err := h.eng.PatchWorkshop(h.ctx, "pottery", bounds, nil); err != nil || !b.RegistrationOpensAt.Equal(engine.EarliestScheduleTime) || !b.EndsAt.Equal(engine.LatestScheduleTime) {
		t.Fatalf("PATCH with the earliest and the latest time = %+v, %v", b, err)
	}
	if b, err := h.eng.Workshop(h.ctx, "pottery"); err != nil || !b.RegistrationOpensAt.Equal(engine.EarliestScheduleTime) || !b.EndsAt.Equal(engine.LatestScheduleTime) {
		t.Fatalf("the earliest and the latest time read back as %s and %s, %v", b.RegistrationOpensAt, b.EndsAt, err)
	}
	// Lowering the capacity keeps a larger max_quantity: only a limit
	// that is set is held to the capacity.
	two := 2
	if w, err := h.eng.PatchWorkshop(h.ctx, "pottery", engine.WorkshopPatch{Capacity: &two}, nil); err != nil || w.MaxQuantity != 6 {
		t.Fatalf("PATCH capacity 2 = %+v, %v; want max_quantity 6 kept", w, err)
	}
}

func ptr[T any](v T) *T { return &v }

func testRegistrationWindow(t *testing.T, h *harness) {
	h.scheduled("later", 5, engine.Schedule{RegistrationOpensAt: Now.Add(time.Hour), StartsAt: Now.Add(48 * time.Hour)})
	key := newKey()
	first, err := h.reserve("alice", key, "later", 1)
	wantStatus(t, "reserve before registration opens", first, err, engine.StatusRegistrationNotOpen, false)
	want := `{"status":"registration_not_open","workshop":"later","quantity":1}`
	if got := string(first.Answer.JSON()); got != want {
		t.Fatalf("answer %s, want %s", got, want)
	}
	hold, err := h.hold(alice, newKey(), "later", 1, ttl)
	wantStatus(t, "hold before registration opens", hold, err, engine.StatusRegistrationNotOpen, false)
	h.wantCounts(0, 2)
	h.wantPlaces("later", 0, 0)

	// Once registration opens, the stored answer stays; a new key reserves.
	h.advance(2 * time.Hour)
	again, err := h.reserve("alice", key, "later", 1)
	wantStatus(t, "replay once registration is open", again, err, engine.StatusRegistrationNotOpen, true)
	if !bytes.Equal(again.Answer.JSON(), first.Answer.JSON()) {
		t.Fatalf("replay %s, want %s", again.Answer.JSON(), first.Answer.JSON())
	}
	out, err := h.reserve("alice", newKey(), "later", 1)
	wantStatus(t, "reserve while open", out, err, engine.StatusReserved, false)

	// Registration closes at the start when no closing time is set.
	h.advance(47 * time.Hour)
	closedKey := newKey()
	closed, err := h.reserve("bob", closedKey, "later", 1)
	wantStatus(t, "reserve at the start", closed, err, engine.StatusRegistrationClosed, false)
	h.advance(-72 * time.Hour) // A replay does not judge the window again.
	replay, err := h.reserve("bob", closedKey, "later", 1)
	wantStatus(t, "replay before the window", replay, err, engine.StatusRegistrationClosed, true)
	h.advance(72 * time.Hour)
	h.wantPlaces("later", 1, 0)
	h.wantCounts(1, 4)

	// An explicit closing time comes before the start.
	h.scheduled("early-close", 5, engine.Schedule{StartsAt: h.now().Add(48 * time.Hour), RegistrationClosesAt: h.now().Add(time.Hour)})
	h.advance(time.Hour)
	out, err = h.reserve("alice", newKey(), "early-close", 1)
	wantStatus(t, "reserve at the closing time", out, err, engine.StatusRegistrationClosed, false)
	if w, _ := h.eng.Workshop(h.ctx, "early-close"); w.Registration != engine.RegistrationClosed {
		t.Fatalf("view says registration %q, want closed", w.Registration)
	}
}

func testLimitPerPerson(t *testing.T, h *harness) {
	h.scheduled("clay", 10, engine.Schedule{MaxPerPerson: 3})
	first := h.mustReserve("alice", newKey(), "clay", 2)
	h.mustHold(alice, "clay", 1)
	key := newKey()
	over, err := h.reserve("alice", key, "clay", 1)
	wantStatus(t, "a fourth place", over, err, engine.StatusLimitReached, false)
	want := `{"status":"limit_reached","workshop":"clay","quantity":1,"max_per_person":3,"already":3}`
	if got := string(over.Answer.JSON()); got != want {
		t.Fatalf("answer %s, want %s", got, want)
	}
	overHold, err := h.hold(alice, newKey(), "clay", 1, ttl)
	wantStatus(t, "a hold over the limit", overHold, err, engine.StatusLimitReached, false)
	// Others are not limited by alice's places.
	h.mustReserve("bob", newKey(), "clay", 3)

	// The stored refusal replays byte for byte, also after places free.
	h.mustCancel(alice, newKey(), first.Answer.ReservationID)
	again, err := h.reserve("alice", key, "clay", 1)
	wantStatus(t, "replay after a cancellation", again, err, engine.StatusLimitReached, true)
	if got := string(again.Answer.JSON()); got != want {
		t.Fatalf("replay %s, want %s", got, want)
	}
	// The cancelled places no longer count; a hold past its deadline
	// neither.
	out, err := h.reserve("alice", newKey(), "clay", 2)
	wantStatus(t, "two places beside a hold", out, err, engine.StatusReserved, false)
	h.advance(ttl * time.Second)
	out, err = h.reserve("alice", newKey(), "clay", 1)
	wantStatus(t, "a place once the hold passed its deadline", out, err, engine.StatusReserved, false)
	out, err = h.reserve("alice", newKey(), "clay", 1)
	wantStatus(t, "a place over the limit again", out, err, engine.StatusLimitReached, false)
	h.wantPlaces("clay", 6, 0)

	// A batch counts its own earlier items.
	h.scheduled("glaze", 10, engine.Schedule{MaxPerPerson: 2})
	res := h.batch(t, "carol", false,
		engine.BatchEntry{Key: newKey(), Request: engine.Request{Workshop: "glaze", Quantity: 2}},
		engine.BatchEntry{Key: newKey(), Request: engine.Request{Workshop: "glaze", Quantity: 1}})
	if len(res.Items) != 2 || res.Items[0].Outcome.Answer.Status != engine.StatusReserved || res.Items[1].Outcome.Answer.Status != engine.StatusLimitReached {
		t.Fatalf("batch = %+v; want reserved, then limit_reached", res.Items)
	}
}

func testDeleteWorkshop(t *testing.T, h *harness) {
	h.workshop("kiln", 4, 2)
	key := newKey()
	out := h.mustReserve("alice", key, "kiln", 2)
	if err := h.eng.DeleteWorkshop(h.ctx, "kiln", nil); engine.ErrorCode(err) != engine.CodeWorkshopInUse {
		t.Fatalf("delete with a reservation: %v, want %s", err, engine.CodeWorkshopInUse)
	}
	h.mustCancel(alice, newKey(), out.Answer.ReservationID)
	hold := h.mustHold(alice, "kiln", 1)
	if err := h.eng.DeleteWorkshop(h.ctx, "kiln", nil); engine.ErrorCode(err) != engine.CodeWorkshopInUse {
		t.Fatalf("delete with an open hold: %v, want %s", err, engine.CodeWorkshopInUse)
	}
	h.advance(ttl * time.Second) // The hold passes its deadline.
	stale := uint64(7)           // The workshop is at version 1.
	if err := h.eng.DeleteWorkshop(h.ctx, "kiln", &stale); engine.ErrorCode(err) != engine.CodeVersionMismatch {
		t.Fatalf("delete with a stale If-Match: %v, want %s", err, engine.CodeVersionMismatch)
	}
	if err := h.eng.DeleteWorkshop(h.ctx, "kiln", nil); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := h.eng.Workshop(h.ctx, "kiln"); engine.ErrorCode(err) != engine.CodeUnknownWorkshop {
		t.Fatalf("deleted workshop reads as %v", err)
	}
	if err := h.eng.DeleteWorkshop(h.ctx, "kiln", nil); engine.ErrorCode(err) != engine.CodeUnknownWorkshop {
		t.Fatalf("second delete: %v, want %s", err, engine.CodeUnknownWorkshop)
	}
	if h.holdState(hold.Answer.HoldID) != engine.HoldExpired {
		t.Fatalf("the expired hold was not stored as expired")
	}
	// Stored answers that name it replay as before; a new request is
	// refused as for any unknown workshop.
	again := h.mustReserve("alice", key, "kiln", 2)
	if !again.Replayed || !bytes.Equal(again.Answer.JSON(), out.Answer.JSON()) {
		t.Fatalf("replay after delete = %+v (body %s), want %s", again, again.Answer.JSON(), out.Answer.JSON())
	}
	if _, err := h.reserve("alice", newKey(), "kiln", 1); engine.ErrorCode(err) != engine.CodeUnknownWorkshop {
		t.Fatalf("reserve in a deleted workshop: %v", err)
	}
}

func testAttendees(t *testing.T, h *harness) {
	h.workshop("wheel", 20, 5)
	h.workshop("other", 20, 5)
	var want []string
	for _, actor := range []string{"dora", "bob", "carol"} {
		for q := 1; q <= 2; q++ {
			out := h.mustReserve(actor, newKey(), "wheel", q)
			want = append(want, out.Answer.ReservationID)
		}
	}
	h.mustReserve("bob", newKey(), "other", 1)
	cancelled := want[1] // dora's second.
	h.mustCancel(engine.Principal{Actor: "dora"}, newKey(), cancelled)
	admin := engine.Principal{Actor: "ops", Admin: true}
	list := func(status string, limit int) []engine.Attendee {
		t.Helper()
		var all []engine.Attendee
		cursor := ""
		for range 20 {
			page, next, err := h.eng.Attendees(h.ctx, admin, "wheel", engine.AttendeeFilter{Status: status, Limit: limit, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			if len(page) > limit {
				t.Fatalf("page of %d with limit %d", len(page), limit)
			}
			all = append(all, page...)
			if next == "" {
				return all
			}
			cursor = next
		}
		t.Fatal("the pages do not end")
		return nil
	}
	for _, limit := range []int{1, 2, 50} {
		active := list("", limit)
		var got []string
		for _, a := range active {
			got = append(got, a.Actor+"/"+a.ReservationID)
			if a.Status != engine.AttendeeActive || a.Quantity < 1 || !a.CancelledAt.IsZero() {
				t.Fatalf("active attendee %+v", a)
			}
		}
		wantActive := []string{"bob/" + want[2], "bob/" + want[3], "carol/" + want[4], "carol/" + want[5], "dora/" + want[0]}
		if len(got) != len(wantActive) {
			t.Fatalf("limit %d: attendees %v, want %v", limit, got, wantActive)
		}
		for i := range got {
			if got[i] != wantActive[i] {
				t.Fatalf("limit %d: attendees %v, want %v", limit, got, wantActive)
			}
		}
		if all := list(engine.ListAll, limit); len(all) != 6 {
			t.Fatalf("limit %d: all = %d attendees, want 6", limit, len(all))
		}
		c := list(engine.ListCancelled, limit)
		if len(c) != 1 || c[0].ReservationID != cancelled || c[0].CancelledAt.IsZero() || c[0].Status != engine.AttendeeCancelled {
			t.Fatalf("limit %d: cancelled = %+v", limit, c)
		}
	}
	if _, _, err := h.eng.Attendees(h.ctx, alice, "wheel", engine.AttendeeFilter{}); engine.ErrorCode(err) != engine.CodeForbidden {
		t.Fatalf("a person's attendee list: %v, want %s", err, engine.CodeForbidden)
	}
	if _, _, err := h.eng.Attendees(h.ctx, admin, "nowhere", engine.AttendeeFilter{}); engine.ErrorCode(err) != engine.CodeUnknownWorkshop {
		t.Fatalf("attendees of a missing workshop: %v", err)
	}
	if _, _, err := h.eng.Attendees(h.ctx, admin, "wheel", engine.AttendeeFilter{Cursor: "bm9wZQ"}); engine.ErrorCode(err) != engine.CodeRequestContract {
		t.Fatalf("a forged cursor: %v", err)
	}
}

func testAtomicBatchNamesScheduleRefusals(t *testing.T, h *harness) {
	h.scheduled("limited", 10, engine.Schedule{MaxPerPerson: 1})
	h.scheduled("closed", 10, engine.Schedule{StartsAt: Now.Add(-time.Hour)})
	h.workshop("open", 10, 5)
	res := h.batch(t, "dora", true,
		engine.BatchEntry{Key: newKey(), Request: engine.Request{Workshop: "open", Quantity: 1}},
		engine.BatchEntry{Key: newKey(), Request: engine.Request{Workshop: "limited", Quantity: 2}},
		engine.BatchEntry{Key: newKey(), Request: engine.Request{Workshop: "closed", Quantity: 1}})
	want := []string{engine.ReasonOtherItemRefused, engine.StatusLimitReached, engine.StatusRegistrationClosed}
	if !res.Refused || len(res.Items) != len(want) {
		t.Fatalf("atomic batch = %+v; want refused", res)
	}
	for i, it := range res.Items {
		if it.Reason != want[i] || engine.ErrorCode(it.Refusal) != engine.CodeBatchRefused {
			t.Errorf("item %d: reason %q (%v), want %q", i+1, it.Reason, it.Refusal, want[i])
		}
	}
	h.wantCounts(0, 0)
}

func testCheckFindsBrokenLimits(t *testing.T, h *harness) {
	h.scheduled("limited", 10, engine.Schedule{MaxPerPerson: 2})
	h.mustReserve("alice", newKey(), "limited", 2)
	key := newKey()
	out, err := h.reserve("alice", key, "limited", 1)
	wantStatus(t, "over the limit", out, err, engine.StatusLimitReached, false)
	h.mustCheckClean()
	rec, err := h.eng.Operation(h.ctx, "alice", key)
	if err != nil {
		t.Fatal(err)
	}
	// A stored limit that would not have refused the request is broken.
	rec.Limit.Already = 0
	rec.Answer = rec.AnswerOf(rec.Answer.Status)
	if err := h.store.Update(h.ctx, func(tx engine.Tx) error { return tx.PutReceipt(rec) }); err != nil {
		t.Fatal(err)
	}
	h.wantFindings("a limit that does not refuse", []string{engine.FindingMalformedReceipt})
}

func testCheckFindsBrokenProfiles(t *testing.T, h *harness) {
	name := "Ada"
	if _, err := h.eng.ChangeProfile(h.ctx, "ada", engine.ProfileChange{DisplayName: &name}); err != nil {
		t.Fatal(err)
	}
	h.mustCheckClean()
	err := h.store.Update(h.ctx, func(tx engine.Tx) error {
		return tx.PutProfile(engine.Profile{Actor: "bob", Language: "klingon"})
	})
	if err != nil {
		t.Fatal(err)
	}
	h.wantFindings("a profile with an unknown language", []string{engine.FindingProfile})
}
