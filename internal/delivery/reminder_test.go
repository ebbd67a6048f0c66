package delivery_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/delivery"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/mail/mailtest"
)

// reminderLead is how long before a deadline the reminders of these
// tests are due.
const reminderLead = 30 * time.Minute

// claimWithReminders routes the events not routed yet, with mail and
// reminders, and claims the due mails and reminders.
func (h *harness) claimWithReminders() (mails, reminders []engine.DeliveryJob) {
	h.t.Helper()
	if _, _, err := h.eng.RouteEvents(h.ctx, 100, engine.RouteOptions{Mail: true, HoldReminder: reminderLead}); err != nil {
		h.t.Fatal(err)
	}
	all, err := h.eng.ClaimDueDeliveries(h.ctx, 100, time.Minute)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, j := range all {
		if j.Delivery.Channel == engine.ChannelReminder {
			reminders = append(reminders, j)
		} else {
			mails = append(mails, j)
		}
	}
	return mails, reminders
}

// TestHoldReminderMails: the reminder of a new hold reaches a real SMTP
// server as a mail of its own, after the hold's mail: its Message-ID is
// the event's with ".reminder" (the hold's mail keeps ".mail"), its Date
// the time it came due, and it names the deadline in the workshop's time
// zone, in the person's language, without the workshop's description or
// a calendar entry. Sent again (a daemon that died before recording the
// attempt), it is the same bytes.
func TestHoldReminderMails(t *testing.T) {
	h := newHarness(t)
	sink := mailtest.Start(t)
	c := h.channel(sink, "")
	alice := h.emailActor("alice@example.org")
	jörg := h.providerActor("joerg", "joerg@example.org", "Jörg Müller", "de")
	var holds []engine.Answer
	for _, who := range []string{alice, jörg} {
		out, err := h.eng.Hold(h.ctx, who, key(), engine.HoldRequest{Workshop: "pottery", Quantity: 2, TTLSeconds: 7200})
		if err != nil || out.Answer.Status != engine.StatusHeld {
			t.Fatalf("hold: %+v, %v", out, err)
		}
		holds = append(holds, out.Answer)
	}
	mails, jobs := h.claimWithReminders()
	if len(mails) != 2 || len(jobs) != 0 {
		t.Fatalf("%d mails and %d reminders due at once, want the 2 holds' mails", len(mails), len(jobs))
	}
	created := mails[0]
	for _, j := range mails {
		h.send(c, j)
	}
	h.advance(2*time.Hour - reminderLead)
	if mails, jobs = h.claimWithReminders(); len(mails) != 0 || len(jobs) != 2 {
		t.Fatalf("%d mails and %d reminders due, want the 2 reminders", len(mails), len(jobs))
	}
	byEvent := map[string]engine.DeliveryJob{}
	for _, j := range jobs {
		byEvent[j.Event.Owner] = j
	}
	h.send(c, byEvent[jörg])
	// The server takes alice's reminder, but the daemon dies before it
	// records that: the claim runs out, and the reminder is claimed and
	// sent again.
	if r := c.Send(h.ctx, byEvent[alice]); !r.Delivered {
		t.Fatalf("send alice's reminder: %+v", r)
	}
	h.advance(2 * time.Minute)
	_, again := h.claimWithReminders()
	if len(again) != 1 || again[0].Delivery.ID != byEvent[alice].Delivery.ID || again[0].Delivery.Attempts != 2 {
		t.Fatalf("claimed again: %+v; want alice's reminder, a second time", again)
	}
	h.send(c, again[0])
	msgs := sink.Wait(t, 5)
	var first, english, german mailtest.Mail
	for _, raw := range msgs {
		m := mailtest.Parse(t, raw)
		switch {
		case m.Header.Get("Message-ID") == "<"+created.Event.ID+".mail@example.org>":
			first = m
		case m.Header.Get("Content-Language") == "de" && strings.HasSuffix(m.Header.Get("Message-ID"), ".reminder@example.org>"):
			german = m
		case strings.HasSuffix(m.Header.Get("Message-ID"), ".reminder@example.org>"):
			english = m
		}
	}
	if first.Subject != "Places held for you: "+potteryTitle || english.Subject == "" || german.Subject == "" {
		t.Fatalf("the hold's mail %q, the English reminder %q and the German one %q; want all three", first.Subject, english.Subject, german.Subject)
	}
	for _, tc := range []struct {
		m           mailtest.Mail
		job         engine.DeliveryJob
		hold        engine.Answer
		subj, until string
		wants       []string
	}{
		{english, byEvent[alice], holds[0], "Your hold ends soon: " + potteryTitle, "Sunday, 1 February 2026, ",
			[]string{"your hold of 2 places in “" + potteryTitle + "” lasts until ", "Confirm it before then", "nothing more is needed", "Hold: " + holds[0].HoldID, "When: Monday, 2 March 2026"}},
		{german, byEvent[jörg], holds[1], "Ihre Vormerkung läuft bald ab: " + potteryTitle, "Sonntag, 1. Februar 2026, ",
			[]string{"Guten Tag Jörg Müller,", "Ihre Vormerkung über 2 Plätze für „" + potteryTitle + "“ gilt noch bis ", "ist nichts weiter zu tun", "Vormerkung: " + holds[1].HoldID}},
	} {
		deadline := tc.hold.ExpiresAt.In(berlin)
		if tc.m.Subject != tc.subj {
			t.Errorf("subject %q, want %q", tc.m.Subject, tc.subj)
		}
		for _, want := range append(tc.wants, tc.until+deadline.Format("15:04")) {
			if !strings.Contains(tc.m.Text, want) {
				t.Errorf("%q does not say %q:\n%s", tc.subj, want, tc.m.Text)
			}
		}
		if id := tc.m.Header.Get("Message-ID"); id != "<"+tc.job.Event.ID+".reminder@example.org>" {
			t.Errorf("%q: Message-ID %q, want the event's with .reminder", tc.subj, id)
		}
		if d, err := tc.m.Header.Date(); err != nil || !d.Equal(tc.hold.ExpiresAt.Add(-reminderLead)) {
			t.Errorf("%q: Date %v (%v), want the time it came due, %s", tc.subj, d, err, tc.hold.ExpiresAt.Add(-reminderLead))
		}
		if tc.m.Calendar != nil || strings.Contains(tc.m.Text, "Bring old clothes") {
			t.Errorf("%q carries a calendar entry or the description:\n%s", tc.subj, tc.m.Text)
		}
	}

	var resent [][]byte
	for _, raw := range msgs {
		if bytes.Contains(raw, []byte("Message-ID: <"+byEvent[alice].Event.ID+".reminder@")) {
			resent = append(resent, raw)
		}
	}
	if len(resent) != 2 || !bytes.Equal(resent[0], resent[1]) {
		t.Fatalf("alice's reminder arrived %d times, want twice the same bytes", len(resent))
	}
}

// TestOfferReminderMail: the reminder of an offer from the waiting list
// says until when the offer still lasts and where to accept it.
func TestOfferReminderMail(t *testing.T) {
	h := newHarness(t)
	sink := mailtest.Start(t)
	c := h.channel(sink, "")
	first := h.fillPottery()
	alice := h.emailActor("alice@example.org")
	h.join(alice, 2)
	h.cancel(filler, first)
	mails, _ := h.claimWithReminders()
	var offer engine.DeliveryJob
	for _, j := range mails {
		if j.Event.Type == engine.EventWaitlistOffered {
			offer = j
		}
		h.finish(j, delivery.Result{Delivered: true})
	}
	hd, err := h.eng.HoldOf(h.ctx, engine.Principal{Actor: alice}, offer.Event.HoldID)
	if err != nil {
		t.Fatal(err)
	}
	h.advance(hd.ExpiresAt.Sub(h.clock()) - reminderLead)
	_, jobs := h.claimWithReminders()
	if len(jobs) != 1 || jobs[0].Event.ID != offer.Event.ID {
		t.Fatalf("reminders due: %+v; want the offer's", jobs)
	}
	h.send(c, jobs[0])
	m := mailtest.Parse(t, sink.Wait(t, 1)[0])
	if m.Subject != "Your offer from the waiting list ends soon: "+potteryTitle {
		t.Errorf("subject %q", m.Subject)
	}
	for _, want := range []string{"the waiting list of “" + potteryTitle + "” still offers you 2 places, until Monday, 2 February 2026, " + hd.ExpiresAt.In(berlin).Format("15:04") + " (Europe/Berlin)",
		"Accept the offer on the page before then", "Hold: " + hd.ID, "https://reserve.example.org/"} {
		if !strings.Contains(m.Text, want) {
			t.Errorf("the offer's reminder does not say %q:\n%s", want, m.Text)
		}
	}
}

// TestReminderOfAnEventWithoutOne: a reminder of an event whose hold gets
// none, or without a deadline, fails for good, and nothing is sent.
func TestReminderOfAnEventWithoutOne(t *testing.T) {
	sent := &capture{}
	c := newChannel(t, delivery.MailConfig{Sender: sent, From: from})
	at := time.Date(2026, 2, 1, 8, 30, 0, 0, time.UTC)
	for _, ev := range []engine.Event{
		{ID: "0190aabbccddeeff0011223344556677", Type: engine.EventReserved, Owner: "alice", Workshop: "pottery", Quantity: 1, CreatedAt: at},
		{ID: "0190aabbccddeeff0011223344556678", Type: engine.EventHoldCreated, HoldID: "h", Owner: "alice", Workshop: "pottery", Quantity: 1, CreatedAt: at},
	} {
		job := engine.DeliveryJob{Delivery: engine.Delivery{ID: ev.ID + "-reminder", Channel: engine.ChannelReminder, Recipient: "alice@example.org"}, Event: ev}
		if r := c.Send(context.Background(), job); !r.Permanent || r.Err == "" {
			t.Errorf("a reminder of %s: %+v, want a permanent failure", ev.Type, r)
		}
	}
	if len(sent.msgs) != 0 {
		t.Errorf("%d mails sent", len(sent.msgs))
	}
}
