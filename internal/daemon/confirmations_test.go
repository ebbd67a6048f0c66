package daemon_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	goical "github.com/emersion/go-ical"
	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/mail/mailtest"
	"github.com/reserve/reserve/internal/server/servertest"
)

// TestConfirmationMailsFromTheDaemon: a person signed in by email
// reserves a place in a scheduled workshop and cancels it; the daemon's
// delivery dispatcher mails a confirmation with a calendar invitation and
// then a cancellation of the same calendar entry (METHOD:CANCEL, the same
// UID, a higher SEQUENCE), both through a real SMTP server process, each
// under a Message-ID made from its event.
func TestConfirmationMailsFromTheDaemon(t *testing.T) {
	ctx := t.Context()
	s := mailtest.Start(t)
	p := startMailDaemon(t, "smtp://"+s.Addr, nil, "--no-demo")
	starts := time.Date(2030, 3, 14, 9, 0, 0, 0, time.UTC)
	spec := engine.WorkshopSpec{Capacity: 5, MaxQuantity: 2, Title: "Pottery", Schedule: engine.Schedule{
		Location: "Studio 3", StartsAt: starts, EndsAt: starts.Add(2 * time.Hour), TimeZone: "Europe/Berlin"}}
	if _, _, err := p.socketClient().PutWorkshop(ctx, "pottery", spec, nil); err != nil {
		t.Fatal(err)
	}
	if resp, body := signInByEmail(t, p, `{"email":"ada@example.org"}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("sign-in: %d %s", resp.StatusCode, body)
	}
	link := mailtest.Parse(t, s.Wait(t, 1)[0]).Link
	resp, session := redeem(t, p, codeOf(t, link))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("redeem: %d", resp.StatusCode)
	}
	ada := &client.Client{BaseURL: p.url, Token: session.Session}
	res, err := ada.Send(ctx, engine.OperationKey(uuid.NewString()), client.Reserving(engine.Request{Workshop: "pottery", Quantity: 2}))
	out := res.Answer
	if err != nil || out.Status != engine.StatusReserved {
		t.Fatalf("reserve: %+v, %v", res, err)
	}
	confirmation := mailtest.Parse(t, s.Wait(t, 2)[1])
	if res, err := ada.Send(ctx, engine.OperationKey(uuid.NewString()), client.Cancelling(out.ReservationID)); err != nil || res.Answer.Status != engine.StatusCancelled {
		t.Fatalf("cancel: %+v, %v", res, err)
	}
	cancellation := mailtest.Parse(t, s.Wait(t, 3)[2])

	uid := func(m mailtest.Mail, method string) (string, int) {
		t.Helper()
		if m.CalendarMethod != method || !bytes.Equal(m.Calendar, m.Attachment) {
			t.Fatalf("mail %q: calendar method %q, want %s (attachment equal: %v)", m.Subject, m.CalendarMethod, method, bytes.Equal(m.Calendar, m.Attachment))
		}
		cal, err := goical.NewDecoder(bytes.NewReader(m.Calendar)).Decode()
		if err != nil {
			t.Fatalf("parse the calendar of %q: %v\n%s", m.Subject, err, m.Calendar)
		}
		evs := cal.Events()
		if len(evs) != 1 {
			t.Fatalf("%d events in %s", len(evs), m.Calendar)
		}
		ev := evs[0]
		id, _ := ev.Props.Text(goical.PropUID)
		seq, _ := ev.Props.Get(goical.PropSequence).Int()
		start, err := ev.DateTimeStart(time.UTC)
		if err != nil || !start.Equal(starts) {
			t.Errorf("%s: DTSTART %v (%v), want %v", method, start, err, starts)
		}
		if loc, _ := ev.Props.Text(goical.PropLocation); loc != "Studio 3" {
			t.Errorf("%s: LOCATION %q", method, loc)
		}
		return id, seq
	}
	uid1, seq1 := uid(confirmation, "REQUEST")
	uid2, seq2 := uid(cancellation, "CANCEL")
	if uid1 == "" || uid1 != uid2 || seq2 <= seq1 || !strings.HasPrefix(uid1, out.ReservationID) {
		t.Fatalf("UIDs %q and %q, SEQUENCE %d then %d: want one UID from reservation %s and a higher SEQUENCE", uid1, uid2, seq1, seq2, out.ReservationID)
	}
	for _, m := range []mailtest.Mail{confirmation, cancellation} {
		if id := m.Header.Get("Message-ID"); !strings.HasSuffix(id, ".mail@example.org>") {
			t.Errorf("Message-ID %q is not made from the event", id)
		}
		if to := m.Header.Get("Delivered-To"); to != "ada@example.org" {
			t.Errorf("delivered to %q", to)
		}
	}
	// The daemon marks a delivery delivered once the mail server has
	// accepted the mail, a moment after the sink has it.
	servertest.Eventually(t, time.Minute, "both mail deliveries delivered", func() bool {
		page, err := p.socketClient().Deliveries(ctx, engine.DeliveryFilter{State: engine.DeliveryDelivered, Channel: engine.ChannelMail})
		return err == nil && len(page.Deliveries) == 2
	})
}
