package client_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server/servertest"
)

func ptr[T any](v T) *T { return &v }

// TestWorkshopAdminCalls drives PatchWorkshop, DeleteWorkshop, Attendees
// and AttendeesCSV against the real server.
func TestWorkshopAdminCalls(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	ctx := context.Background()
	c := h.SocketClient()
	starts := time.Date(2099, 3, 6, 9, 0, 0, 0, time.UTC)
	if _, _, err := c.PutWorkshop(ctx, "course", engine.WorkshopSpec{Capacity: 6, Schedule: engine.Schedule{Location: "Room 1", StartsAt: starts, MaxPerPerson: 3}}, nil); err != nil {
		t.Fatal(err)
	}
	w, err := c.PatchWorkshop(ctx, "course", engine.WorkshopPatch{Title: ptr("Course"), Location: ptr(""), MaxPerPerson: ptr(0)}, ptr(uint64(1)))
	if err != nil || w.Title != "Course" || w.Location != "" || w.MaxPerPerson != 0 || !w.StartsAt.Equal(starts) || w.Version != 2 {
		t.Fatalf("PatchWorkshop = %+v, %v; want the title set, location and limit cleared, the start kept, version 2", w, err)
	}
	if _, err := c.PatchWorkshop(ctx, "course", engine.WorkshopPatch{Capacity: ptr(7)}, ptr(uint64(1))); engine.ErrorCode(err) != engine.CodeVersionMismatch {
		t.Errorf("PatchWorkshop with a stale version: %v, want %s", err, engine.CodeVersionMismatch)
	}
	if _, err := c.PatchWorkshop(ctx, "no-such", engine.WorkshopPatch{Capacity: ptr(7)}, nil); engine.ErrorCode(err) != engine.CodeUnknownWorkshop {
		t.Errorf("PatchWorkshop of an unknown workshop: %v, want %s", err, engine.CodeUnknownWorkshop)
	}

	for _, actor := range []string{h.Alice, h.Bob} {
		if _, _, _, err := h.TCPClient(actor).Reserve(ctx, engine.OperationKey(uuid.NewString()), engine.Request{Workshop: "course", Quantity: 1}); err != nil {
			t.Fatal(err)
		}
	}
	page, err := c.Attendees(ctx, "course", engine.AttendeeFilter{Limit: 1})
	if err != nil || len(page.Attendees) != 1 || page.Attendees[0].Actor != "alice" || page.NextCursor == "" {
		t.Fatalf("Attendees page 1 = %+v, %v; want alice and a cursor", page, err)
	}
	page, err = c.Attendees(ctx, "course", engine.AttendeeFilter{Limit: 1, Cursor: page.NextCursor})
	if err != nil || len(page.Attendees) != 1 || page.Attendees[0].Actor != "bob" || page.NextCursor != "" {
		t.Fatalf("Attendees page 2 = %+v, %v; want bob and no cursor", page, err)
	}
	if _, err := h.TCPClient(h.Alice).Attendees(ctx, "course", engine.AttendeeFilter{}); engine.ErrorCode(err) != engine.CodeForbidden {
		t.Errorf("Attendees as alice: %v, want %s", err, engine.CodeForbidden)
	}
	var out bytes.Buffer
	n, err := c.AttendeesCSV(ctx, "course", "", &out)
	if err != nil || n != int64(out.Len()) {
		t.Fatalf("AttendeesCSV = %d, %v (%d bytes written)", n, err, out.Len())
	}
	records, err := csv.NewReader(&out).ReadAll()
	if err != nil || len(records) != 3 || records[1][1] != "alice" || records[2][1] != "bob" {
		t.Errorf("AttendeesCSV records = %q, %v; want a header, alice and bob", records, err)
	}
	out.Reset()
	if _, err := c.AttendeesCSV(ctx, "no-such", "", &out); engine.ErrorCode(err) != engine.CodeUnknownWorkshop || out.Len() != 0 {
		t.Errorf("AttendeesCSV of an unknown workshop: %v with %q, want %s and nothing written", err, out.String(), engine.CodeUnknownWorkshop)
	}

	if err := c.DeleteWorkshop(ctx, "course", nil); engine.ErrorCode(err) != engine.CodeWorkshopInUse {
		t.Errorf("DeleteWorkshop in use: %v, want %s", err, engine.CodeWorkshopInUse)
	}
	if _, _, err := c.PutWorkshop(ctx, "empty", engine.WorkshopSpec{Capacity: 1}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteWorkshop(ctx, "empty", ptr(uint64(2))); engine.ErrorCode(err) != engine.CodeVersionMismatch {
		t.Errorf("DeleteWorkshop with a stale version: %v, want %s", err, engine.CodeVersionMismatch)
	}
	if err := c.DeleteWorkshop(ctx, "empty", ptr(uint64(1))); err != nil {
		t.Errorf("DeleteWorkshop: %v", err)
	}
	if _, err := c.Workshop(ctx, "empty"); engine.ErrorCode(err) != engine.CodeUnknownWorkshop {
		t.Errorf("Workshop after the delete: %v, want %s", err, engine.CodeUnknownWorkshop)
	}
}

// TestAttendeesCSVCutShort: an answer that breaks off is an error after
// the bytes that came, and one that is not CSV is unexpected.
func TestAttendeesCSVCutShort(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") != api.MediaCSV {
			t.Errorf("Accept = %q, want %s", r.Header.Get("Accept"), api.MediaCSV)
		}
		if strings.HasSuffix(r.URL.Path, "/html/attendees") {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<p>a proxy's page</p>")
			return
		}
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		fmt.Fprint(w, strings.Join(api.AttendeeCSVHeader, ",")+"\r\n")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}))
	defer srv.Close()
	c := &client.Client{BaseURL: srv.URL}
	var out bytes.Buffer
	n, err := c.AttendeesCSV(context.Background(), "course", "all", &out)
	if err == nil || n == 0 || !strings.Contains(err.Error(), "cut short") {
		t.Errorf("AttendeesCSV of a broken answer = %d, %v; want the bytes that came and an error", n, err)
	}
	var ue *client.UnexpectedResponseError
	if _, err := c.AttendeesCSV(context.Background(), "html", "", &out); !errors.As(err, &ue) {
		t.Errorf("AttendeesCSV of an HTML answer: %v, want an UnexpectedResponseError", err)
	}
}

// TestWaitlistCalls: a reservation with Waitlist on a full workshop is the
// decided 202 waiting, replayed with the same key; the lists show the
// entry, the organizer's only to an admin; LeaveWaitlist takes it off the
// list, and a batch item joins as a single reservation does.
func TestWaitlistCalls(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	ctx := context.Background()
	alice, bob, admin := h.TCPClient(h.Alice), h.TCPClient(h.Bob), h.SocketClient()
	demo := servertest.Workshop
	if status, body, _, err := alice.Reserve(ctx, engine.OperationKey(uuid.NewString()), engine.Request{Workshop: demo, Quantity: servertest.WorkshopMaxQuantity}); err != nil || status != http.StatusCreated {
		t.Fatalf("alice reserves = %d %s, %v", status, body, err)
	}
	join := engine.Request{Workshop: demo, Quantity: 2, Waitlist: true}
	key := engine.OperationKey(uuid.NewString())
	res, err := bob.Send(ctx, key, client.Reserving(join))
	if err != nil || !res.Decided || res.Answer.Status != engine.StatusWaiting || res.Status != http.StatusAccepted || res.Answer.Position != 1 || res.Err() != nil {
		t.Fatalf("bob joins = %+v, %v; want the decided 202 waiting at position 1", res, err)
	}
	again, err := bob.Send(ctx, key, client.Reserving(join))
	if err != nil || !again.Replayed || !bytes.Equal(again.Body, res.Body) {
		t.Fatalf("bob joins again = %+v, %v; want the replay", again, err)
	}
	page, err := bob.Waitlist(ctx, engine.ListFilter{Status: string(engine.WaitWaiting)})
	if err != nil || len(page.Entries) != 1 || page.Entries[0].ID != res.Answer.EntryID || page.Entries[0].Position != 1 {
		t.Fatalf("bob's list = %+v, %v", page, err)
	}
	if page, err := alice.Waitlist(ctx, engine.ListFilter{}); err != nil || page.Entries == nil || len(page.Entries) != 0 {
		t.Fatalf("alice's list = %+v, %v; want an empty list", page, err)
	}
	if _, err := bob.WorkshopWaitlist(ctx, demo, engine.ListFilter{}); engine.ErrorCode(err) != engine.CodeForbidden {
		t.Fatalf("bob reads the organizer's list: %v, want forbidden", err)
	}
	reply, err := bob.ReserveBatch(ctx, []client.BatchItem{{Key: engine.OperationKey(uuid.NewString()), Request: engine.Request{Workshop: demo, Quantity: 1, Waitlist: true}}}, false)
	if err != nil || !reply.Decided || len(reply.Items) != 1 || reply.Items[0].Answer.Status != engine.StatusWaiting || reply.Items[0].Answer.Position != 2 {
		t.Fatalf("a batch item joins = %+v, %v", reply, err)
	}
	all, err := admin.WorkshopWaitlist(ctx, demo, engine.ListFilter{Actor: "ignored", Workshop: "ignored"})
	if err != nil || len(all.Entries) != 2 || all.Entries[0].ID != res.Answer.EntryID {
		t.Fatalf("the organizer's list = %+v, %v; want bob's two entries, the first one first", all, err)
	}
	status, body, replayed, err := bob.LeaveWaitlist(ctx, engine.OperationKey(uuid.NewString()), res.Answer.EntryID)
	if err != nil || status != http.StatusOK || replayed || !strings.Contains(string(body), `"status":"left"`) {
		t.Fatalf("bob leaves = %d %s %v, %v", status, body, replayed, err)
	}
	if _, _, _, err := alice.LeaveWaitlist(ctx, engine.OperationKey(uuid.NewString()), res.Answer.EntryID); engine.ErrorCode(err) != engine.CodeUnknownEntry {
		t.Fatalf("alice leaves bob's entry: %v, want unknown_entry", err)
	}
}
