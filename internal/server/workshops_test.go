package server_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server/servertest"
)

// patchCall is a PATCH of workshop id with body as contentType.
func patchCall(via, id, contentType, body string) call {
	return call{via: via, method: http.MethodPatch, path: api.WorkshopPath(id), header: http.Header{"Content-Type": {contentType}}, body: body}
}

// getWorkshop reads workshop id as via sees it, as decoded JSON members.
func getWorkshop(t *testing.T, h *servertest.Harness, via, id string) map[string]any {
	t.Helper()
	resp, body := send(t, h, call{via: via, method: http.MethodGet, path: api.WorkshopPath(id)})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET workshop %s: %d %s", id, resp.StatusCode, body)
	}
	return jsonMembers(t, body)
}

func jsonMembers(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return m
}

// wantMembers checks that m has each member of want with its value (a nil
// value: that the member is absent).
func wantMembers(t *testing.T, what string, m map[string]any, want map[string]any) {
	t.Helper()
	for k, v := range want {
		got, ok := m[k]
		switch {
		case v == nil && ok:
			t.Errorf("%s: member %q = %v, want it absent", what, k, got)
		case v != nil && !reflect.DeepEqual(got, v):
			t.Errorf("%s: member %q = %#v, want %#v", what, k, got, v)
		}
	}
}

// TestWorkshopScheduleRoundTrips puts a workshop with every member, reads
// it back with its times in its own zone, and changes it by merge patches:
// a patch changes only the members it names, null clears an optional one,
// application/json is taken as a merge patch too, and a stale If-Match, a
// null for a member that cannot be cleared or another media type change
// nothing.
func TestWorkshopScheduleRoundTrips(t *testing.T) {
	t.Parallel()
	clock := newTestClock() // 2026-12-01: registration is open.
	h := servertest.Start(t, servertest.Options{Clock: clock.Now})
	resp, body := send(t, h, jsonCall(h.Admin, http.MethodPut, api.WorkshopPath("go-series"), "", scheduledBody))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("PUT: %d %s", resp.StatusCode, body)
	}
	full := map[string]any{
		"id": "go-series", "title": "Go, session 1", "capacity": 8.0, "max_quantity": 2.0, "version": 1.0,
		"description": "Bring a laptop.\nGo 1.26 installed.", "location": "Room 3.14, Hauptstraße 5",
		"starts_at": "2027-03-06T10:00:00+01:00", "ends_at": "2027-03-06T16:00:00+01:00", "time_zone": "Europe/Berlin",
		"registration_opens_at": "2026-11-01T10:00:00+01:00", "registration_closes_at": "2027-03-05T19:00:00+01:00",
		"max_per_person": 2.0, "registration": "open", "hidden": nil,
	}
	wantMembers(t, "PUT's answer", jsonMembers(t, body), full)
	wantMembers(t, "GET after PUT", getWorkshop(t, h, h.Alice, "go-series"), full)

	// A merge patch: the title changes, location and the limit are
	// cleared, the rest stays.
	resp, body = send(t, h, patchCall(h.Admin, "go-series", api.MediaMergePatch, `{"title":"Go, the series","location":null,"max_per_person":null}`))
	if resp.StatusCode != http.StatusOK || resp.Header.Get("ETag") != `"2"` {
		t.Fatalf("PATCH: %d ETag %q %s, want 200 with ETag \"2\"", resp.StatusCode, resp.Header.Get("ETag"), body)
	}
	patched := map[string]any{}
	for k, v := range full {
		patched[k] = v
	}
	patched["title"], patched["location"], patched["max_per_person"], patched["version"] = "Go, the series", nil, nil, 2.0
	wantMembers(t, "PATCH's answer", jsonMembers(t, body), patched)
	wantMembers(t, "GET after PATCH", getWorkshop(t, h, h.Bob, "go-series"), patched)

	// Refusals change nothing: a stale version, a null for a member that
	// cannot be cleared, another media type, a limit above the capacity.
	for _, c := range []struct {
		call   call
		status int
		code   string
	}{
		{withHeader(patchCall(h.Admin, "go-series", api.MediaMergePatch, `{"capacity":9}`), "If-Match", `"1"`), http.StatusPreconditionFailed, engine.CodeVersionMismatch},
		{patchCall(h.Admin, "go-series", api.MediaMergePatch, `{"title":null}`), http.StatusUnprocessableEntity, engine.CodeRequestContract},
		{patchCall(h.Admin, "go-series", "text/plain", `{"capacity":9}`), http.StatusUnsupportedMediaType, api.CodeUnsupportedMediaType},
		{patchCall(h.Admin, "go-series", "application/json-patch+json", `[{"op":"replace","path":"/capacity","value":9}]`), http.StatusUnsupportedMediaType, api.CodeUnsupportedMediaType},
		{patchCall(h.Admin, "go-series", api.MediaMergePatch, `{"max_per_person":9}`), http.StatusUnprocessableEntity, engine.CodeRequestContract},
		{patchCall(h.Admin, "go-series", api.MediaMergePatch, `{"ends_at":"2027-03-06T09:00:00+01:00"}`), http.StatusUnprocessableEntity, engine.CodeRequestContract},
		{patchCall(h.Admin, "no-such", api.MediaMergePatch, `{"capacity":9}`), http.StatusNotFound, engine.CodeUnknownWorkshop},
	} {
		resp, body := send(t, h, c.call)
		wantProblem(t, resp, body, c.status, c.code)
	}
	wantMembers(t, "GET after the refusals", getWorkshop(t, h, h.Alice, "go-series"), patched)

	// application/json is a merge patch too, and a current If-Match
	// passes.
	resp, body = send(t, h, withHeader(patchCall(h.Admin, "go-series", api.MediaJSON+"; charset=utf-8", `{"capacity":9}`), "If-Match", `"2"`))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PATCH as application/json: %d %s", resp.StatusCode, body)
	}
	patched["capacity"], patched["version"] = 9.0, 3.0
	wantMembers(t, "GET after the JSON patch", getWorkshop(t, h, h.Alice, "go-series"), patched)

	// Clearing every member of the schedule leaves a workshop as one
	// without a schedule shows: no registration state either.
	resp, body = send(t, h, patchCall(h.Admin, "go-series", api.MediaMergePatch, `{"description":null,"time_zone":null,"starts_at":null,"ends_at":null,"registration_opens_at":null,"registration_closes_at":null}`))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PATCH clearing the schedule: %d %s", resp.StatusCode, body)
	}
	wantMembers(t, "GET without a schedule", getWorkshop(t, h, h.Alice, "go-series"), map[string]any{
		"description": nil, "time_zone": nil, "starts_at": nil, "ends_at": nil, "registration_opens_at": nil,
		"registration_closes_at": nil, "registration": nil, "title": "Go, the series", "capacity": 9.0, "version": 4.0,
	})
}

// reserveTwice sends the same reservation twice under one key and checks
// that the first answer has want as status and body, and the second is
// its byte-identical replay.
func reserveTwice(t *testing.T, h *servertest.Harness, via, body string, status int, want string) {
	t.Helper()
	key := uuid.NewString()
	first, firstBody := send(t, h, reservationCall(via, key, body))
	if first.StatusCode != status || (want != "" && string(firstBody) != want) || first.Header.Get(api.HeaderReplayed) != "false" {
		t.Errorf("reserve %s: %d %s (replayed %q), want %d %s, not replayed", body, first.StatusCode, firstBody, first.Header.Get(api.HeaderReplayed), status, want)
	}
	again, againBody := send(t, h, reservationCall(via, key, body))
	if again.StatusCode != status || !bytes.Equal(againBody, firstBody) || again.Header.Get(api.HeaderReplayed) != "true" {
		t.Errorf("repeat of reserve %s: %d %s (replayed %q), want the replay %d %s", body, again.StatusCode, againBody, again.Header.Get(api.HeaderReplayed), status, firstBody)
	}
}

// TestRegistrationWindowAndLimitRefusals: a reservation before the
// registration opens, after it closes, or over the limit per person is a
// decided 409 refusal, stored and replayed byte for byte, also once the
// window or the actor's places have changed; the limit is per person and
// counts open holds.
func TestRegistrationWindowAndLimitRefusals(t *testing.T) {
	t.Parallel()
	clock := newTestClock() // 2026-12-01T10:00:00.25Z
	h := servertest.Start(t, servertest.Options{Clock: clock.Now})
	for id, body := range map[string]string{
		"later":   `{"capacity":5,"starts_at":"2027-01-10T09:00:00Z","registration_opens_at":"2026-12-02T09:00:00Z"}`,
		"earlier": `{"capacity":5,"starts_at":"2026-11-30T09:00:00Z"}`,
		"limited": `{"capacity":5,"max_per_person":2}`,
	} {
		if resp, b := send(t, h, jsonCall(h.Admin, http.MethodPut, api.WorkshopPath(id), "", body)); resp.StatusCode != http.StatusCreated {
			t.Fatalf("PUT %s: %d %s", id, resp.StatusCode, b)
		}
	}
	notOpenKey := uuid.NewString()
	notOpen := `{"workshop":"later","quantity":1}`
	first, firstBody := send(t, h, reservationCall(h.Alice, notOpenKey, notOpen))
	if first.StatusCode != http.StatusConflict || string(firstBody) != `{"status":"registration_not_open","workshop":"later","quantity":1}` {
		t.Fatalf("reserve before the registration opens: %d %s", first.StatusCode, firstBody)
	}
	reserveTwice(t, h, h.Alice, `{"workshop":"earlier","quantity":1}`, http.StatusConflict, `{"status":"registration_closed","workshop":"earlier","quantity":1}`)

	// Within the limit for alice, and bob's places do not count for her.
	reserveTwice(t, h, h.Alice, `{"workshop":"limited","quantity":2}`, http.StatusCreated, "")
	reserveTwice(t, h, h.Bob, `{"workshop":"limited","quantity":2}`, http.StatusCreated, "")
	reserveTwice(t, h, h.Alice, `{"workshop":"limited","quantity":1}`, http.StatusConflict, `{"status":"limit_reached","workshop":"limited","quantity":1,"max_per_person":2,"already":2}`)
	resp, body := send(t, h, holdCall(h.Alice, uuid.NewString(), `{"workshop":"limited","quantity":1,"ttl_seconds":60}`))
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(body), `"status":"limit_reached"`) {
		t.Errorf("hold over the limit: %d %s, want 409 limit_reached", resp.StatusCode, body)
	}

	// Once the registration has opened, the stored refusal still
	// replays; a new key reserves.
	clock.Advance(24 * time.Hour)
	again, againBody := send(t, h, reservationCall(h.Alice, notOpenKey, notOpen))
	if again.StatusCode != http.StatusConflict || !bytes.Equal(againBody, firstBody) || again.Header.Get(api.HeaderReplayed) != "true" {
		t.Errorf("replay after the registration opened: %d %s (replayed %q), want the stored refusal %s", again.StatusCode, againBody, again.Header.Get(api.HeaderReplayed), firstBody)
	}
	if resp, body := send(t, h, reservationCall(h.Alice, uuid.NewString(), notOpen)); resp.StatusCode != http.StatusCreated {
		t.Errorf("reserve once the registration is open: %d %s, want 201", resp.StatusCode, body)
	}
}

// reserveOK reserves quantity places of workshop as via and returns the
// answer's key and reservation id.
func reserveOK(t *testing.T, h *servertest.Harness, via, workshop string, quantity int) (string, string) {
	t.Helper()
	key := uuid.NewString()
	resp, body := send(t, h, reservationCall(via, key, fmt.Sprintf(`{"workshop":%q,"quantity":%d}`, workshop, quantity)))
	var a engine.Answer
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(body, &a) != nil {
		t.Fatalf("reserve %d of %s: %d %s", quantity, workshop, resp.StatusCode, body)
	}
	return key, a.ReservationID
}

// TestDeleteWorkshop: a workshop with an active reservation is refused
// (workshop_in_use) and stays; without one it is deleted (also with a
// current If-Match, not with a stale one); then it is unknown, and every
// stored answer that names it still replays byte for byte.
func TestDeleteWorkshop(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, servertest.Options{})
	demo := servertest.Workshop
	key, id := reserveOK(t, h, h.Alice, demo, 1)
	_, reserved := send(t, h, reservationCall(h.Alice, key, `{"workshop":"workshop-demo","quantity":1}`))
	resp, body := send(t, h, call{via: h.Admin, method: http.MethodDelete, path: api.WorkshopPath(demo)})
	wantProblem(t, resp, body, http.StatusConflict, engine.CodeWorkshopInUse)
	getWorkshop(t, h, h.Alice, demo)

	cancelKey := uuid.NewString()
	resp, cancelled := send(t, h, cancelCall(h.Alice, cancelKey, id))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("cancel: %d %s", resp.StatusCode, cancelled)
	}
	version := fmt.Sprint(getWorkshop(t, h, h.Alice, demo)["version"])
	resp, body = send(t, h, call{via: h.Admin, method: http.MethodDelete, path: api.WorkshopPath(demo), header: http.Header{"If-Match": {`"99"`}}})
	wantProblem(t, resp, body, http.StatusPreconditionFailed, engine.CodeVersionMismatch)
	resp, body = send(t, h, call{via: h.Admin, method: http.MethodDelete, path: api.WorkshopPath(demo), header: http.Header{"If-Match": {`"` + version + `"`}}})
	if resp.StatusCode != http.StatusNoContent || len(body) != 0 {
		t.Fatalf("DELETE: %d %q, want 204 without a body", resp.StatusCode, body)
	}
	resp, body = send(t, h, call{via: h.Alice, method: http.MethodGet, path: api.WorkshopPath(demo)})
	wantProblem(t, resp, body, http.StatusNotFound, engine.CodeUnknownWorkshop)
	resp, body = send(t, h, call{via: h.Admin, method: http.MethodDelete, path: api.WorkshopPath(demo)})
	wantProblem(t, resp, body, http.StatusNotFound, engine.CodeUnknownWorkshop)
	resp, body = send(t, h, reservationCall(h.Alice, uuid.NewString(), `{"workshop":"workshop-demo","quantity":1}`))
	wantProblem(t, resp, body, http.StatusNotFound, engine.CodeUnknownWorkshop)

	// The stored answers replay as before.
	for _, c := range []struct {
		call   call
		status int
		want   []byte
	}{
		{reservationCall(h.Alice, key, `{"workshop":"workshop-demo","quantity":1}`), http.StatusCreated, reserved},
		{cancelCall(h.Alice, cancelKey, id), http.StatusOK, cancelled},
	} {
		resp, body := send(t, h, c.call)
		if resp.StatusCode != c.status || !bytes.Equal(body, c.want) || resp.Header.Get(api.HeaderReplayed) != "true" {
			t.Errorf("%s %s after the delete: %d %s (replayed %q), want the replay %d %s", c.call.method, c.call.path, resp.StatusCode, body, resp.Header.Get(api.HeaderReplayed), c.status, c.want)
		}
	}
}

// TestAttendeeList lists exactly a workshop's active reservations, with
// actor, quantity and time, as JSON pages (three pages of one through
// their cursors) and as CSV, whose rows are the same; status=all adds the
// cancelled ones with their time of cancellation.
func TestAttendeeList(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	h := servertest.Start(t, servertest.Options{Clock: clock.Now})
	carol, err := h.Engine.CreateToken(t.Context(), "carol", false)
	if err != nil {
		t.Fatal(err)
	}
	if resp, body := send(t, h, jsonCall(h.Admin, http.MethodPut, api.WorkshopPath("course"), "", `{"capacity":10,"max_quantity":3}`)); resp.StatusCode != http.StatusCreated {
		t.Fatalf("PUT: %d %s", resp.StatusCode, body)
	}
	type row struct {
		actor    string
		quantity int
		at       time.Time
	}
	var want []row
	ids := map[string]string{}
	for _, r := range []struct {
		via, actor string
		quantity   int
	}{{carol, "carol", 3}, {h.Alice, "alice", 2}, {h.Bob, "bob", 1}} {
		clock.Advance(time.Minute)
		_, ids[r.actor] = reserveOK(t, h, r.via, "course", r.quantity)
		want = append(want, row{r.actor, r.quantity, clock.Now()})
	}
	want[0], want[1] = want[1], want[0] // By actor: alice, bob, carol.
	want[1], want[2] = want[2], want[1]
	clock.Advance(time.Minute)
	_, gone := reserveOK(t, h, h.Bob, "course", 1) // Cancelled: not on the list.
	clock.Advance(time.Minute)
	if resp, body := send(t, h, cancelCall(h.Bob, uuid.NewString(), gone)); resp.StatusCode != http.StatusOK {
		t.Fatalf("cancel: %d %s", resp.StatusCode, body)
	}
	cancelledAt := clock.Now()
	reserveOK(t, h, h.Alice, servertest.Workshop, 1) // Another workshop's.

	// JSON, one attendee a page.
	var got []engine.Attendee
	cursor := ""
	for page := 1; ; page++ {
		path := api.AttendeesPath("course") + "?limit=1"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		resp, body := send(t, h, call{via: h.Admin, method: http.MethodGet, path: path})
		var p api.AttendeePage
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &p) != nil || len(p.Attendees) != 1 {
			t.Fatalf("page %d: %d %s, want 200 with one attendee", page, resp.StatusCode, body)
		}
		got = append(got, p.Attendees...)
		if cursor = p.NextCursor; cursor == "" {
			break
		}
		if page > len(want) {
			t.Fatalf("page %d still has a next cursor", page)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d attendees on the pages, want %d: %+v", len(got), len(want), got)
	}
	for i, a := range got {
		w := want[i]
		if a.Actor != w.actor || a.Quantity != w.quantity || !a.CreatedAt.Equal(w.at) || a.Status != engine.AttendeeActive || a.ReservationID != ids[w.actor] || !a.CancelledAt.IsZero() {
			t.Errorf("attendee %d = %+v, want %s with %d places reserved at %s, active, reservation %s", i, a, w.actor, w.quantity, w.at, ids[w.actor])
		}
	}

	// CSV: the same list.
	records := attendeeCSV(t, h, "")
	if len(records) != len(want)+1 {
		t.Fatalf("CSV has %d records, want a header and %d rows: %q", len(records), len(want), records)
	}
	for i, a := range got {
		wantRow := []string{a.ReservationID, a.Actor, "", "", fmt.Sprint(a.Quantity), "active", a.CreatedAt.UTC().Format(time.RFC3339Nano), ""}
		if !reflect.DeepEqual(records[i+1], wantRow) {
			t.Errorf("CSV row %d = %q, want %q", i+1, records[i+1], wantRow)
		}
	}
	all := attendeeCSV(t, h, "?status=all")
	if len(all) != len(want)+2 {
		t.Fatalf("CSV of status=all has %d records, want a header and %d rows: %q", len(all), len(want)+1, all)
	}
	found := false
	for _, r := range all[1:] {
		if r[0] == gone {
			found = true
			if r[1] != "bob" || r[5] != "cancelled" || r[7] != cancelledAt.UTC().Format(time.RFC3339Nano) {
				t.Errorf("cancelled row = %q, want bob's, cancelled at %s", r, cancelledAt.UTC().Format(time.RFC3339Nano))
			}
		}
	}
	if !found {
		t.Errorf("CSV of status=all has no row of the cancelled reservation %s: %q", gone, all)
	}

	// The CSV is the whole list: a page's parameters are refused, before
	// the answer starts.
	resp, body := send(t, h, call{via: h.Admin, method: http.MethodGet, path: api.AttendeesPath("course") + "?limit=1", header: http.Header{"Accept": {api.MediaCSV}}})
	wantProblem(t, resp, body, http.StatusUnprocessableEntity, engine.CodeRequestContract)
	resp, body = send(t, h, call{via: h.Admin, method: http.MethodGet, path: api.AttendeesPath("no-such"), header: http.Header{"Accept": {api.MediaCSV}}})
	wantProblem(t, resp, body, http.StatusNotFound, engine.CodeUnknownWorkshop)
}

// attendeeCSV asks for the attendee list of workshop "course" as CSV and
// returns its records, after checking the media type, the header row and
// that every line ends in CRLF.
func attendeeCSV(t *testing.T, h *servertest.Harness, query string) [][]string {
	t.Helper()
	resp, body := send(t, h, call{via: h.Admin, method: http.MethodGet, path: api.AttendeesPath("course") + query, header: http.Header{"Accept": {"text/csv"}}})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/csv; charset=utf-8; header=present" {
		t.Fatalf("CSV: %d %q %s, want 200 text/csv", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if !bytes.HasSuffix(body, []byte("\r\n")) || bytes.Count(body, []byte("\n")) != bytes.Count(body, []byte("\r\n")) {
		t.Errorf("CSV lines do not all end in CRLF: %q", body)
	}
	records, err := csv.NewReader(bytes.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatalf("CSV %q: %v", body, err)
	}
	if len(records) == 0 || !reflect.DeepEqual(records[0], api.AttendeeCSVHeader) {
		t.Fatalf("CSV header = %q, want %q", records, api.AttendeeCSVHeader)
	}
	return records
}

// TestWorkshopAdminRoutesNeedAnAdmin: a person who is not an admin may not
// change, delete or list the attendees of a workshop, and nothing changes.
func TestWorkshopAdminRoutesNeedAnAdmin(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, servertest.Options{})
	demo := servertest.Workshop
	before := getWorkshop(t, h, h.Alice, demo)
	for _, c := range []call{
		patchCall(h.Alice, demo, api.MediaMergePatch, `{"title":"Mine"}`),
		{via: h.Alice, method: http.MethodDelete, path: api.WorkshopPath(demo)},
		{via: h.Alice, method: http.MethodGet, path: api.AttendeesPath(demo)},
		{via: h.Alice, method: http.MethodGet, path: api.AttendeesPath(demo), header: http.Header{"Accept": {api.MediaCSV}}},
	} {
		resp, body := send(t, h, c)
		wantProblem(t, resp, body, http.StatusForbidden, engine.CodeForbidden)
	}
	if after := getWorkshop(t, h, h.Alice, demo); !reflect.DeepEqual(after, before) {
		t.Errorf("workshop after the refusals = %v, want %v", after, before)
	}
}

// TestAdminLoginLink: an admin's login link asked for with "admin": true
// opens a session that whoami calls an admin's and that may change a
// workshop; an ordinary link's session may not. (A person who is not an
// admin asking for such a link is refused: TestSocketPeerIsNotAdmin.)
func TestAdminLoginLink(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, servertest.Options{})
	link, err := h.SocketClient().LoginLinkFor(t.Context(), api.LoginLinkRequest{Admin: true})
	if err != nil {
		t.Fatal(err)
	}
	if !link.Admin {
		t.Errorf("admin login link answer %+v does not say admin", link)
	}
	u, err := url.Parse(link.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp, body := redeem(t, h, u.Query().Get("code"), nil)
	var s api.SessionResponse
	if resp.StatusCode != http.StatusCreated || json.Unmarshal([]byte(body), &s) != nil {
		t.Fatalf("redeem: %d %s", resp.StatusCode, body)
	}
	who, err := h.TCPClient(s.Session).WhoAmI(t.Context())
	if err != nil || !who.Admin {
		t.Fatalf("whoami with the admin session: %+v, %v; want an admin", who, err)
	}
	if resp, body := send(t, h, patchCall(s.Session, servertest.Workshop, api.MediaMergePatch, `{"title":"Demo, renamed"}`)); resp.StatusCode != http.StatusOK {
		t.Errorf("PATCH with the admin session: %d %s, want 200", resp.StatusCode, body)
	}

	plain := signIn(t, h, "")
	if who, err := h.TCPClient(plain).WhoAmI(t.Context()); err != nil || who.Admin {
		t.Errorf("whoami with an ordinary session: %+v, %v; want no admin", who, err)
	}
	resp2, body2 := send(t, h, patchCall(plain, servertest.Workshop, api.MediaMergePatch, `{"title":"x"}`))
	wantProblem(t, resp2, body2, http.StatusForbidden, engine.CodeForbidden)
}
