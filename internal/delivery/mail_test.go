package delivery_test

import (
	"bytes"
	"context"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	goical "github.com/emersion/go-ical"
	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/delivery"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/engine/memstore"
	rmail "github.com/reserve/reserve/internal/mail"
	"github.com/reserve/reserve/internal/mail/mailtest"
)

var berlin, _ = time.LoadLocation("Europe/Berlin")

// The pottery workshop: a schedule in Berlin time, a title and texts with
// the characters calendars must escape.
var (
	potteryStart = time.Date(2026, 3, 2, 9, 0, 0, 0, berlin)
	potteryEnd   = time.Date(2026, 3, 2, 12, 30, 0, 0, berlin)
)

const (
	potteryTitle    = "Töpfern, Glasieren; Brennen"
	potteryLocation = "Werkstatt 3, Hinterhof; Eingang B"
	potteryText     = "Bring old clothes.\nClay, glazes; the kiln \\ all provided."
)

var from = mail.Address{Name: "Reserve", Address: "reserve@example.org"}

// harness is an engine on a memory store with a clock the test moves,
// and the workshops "pottery" (scheduled) and "open-studio" (no date).
type harness struct {
	t   *testing.T
	ctx context.Context
	eng *engine.Engine

	mu  sync.Mutex
	now time.Time
}

func newHarness(t *testing.T) *harness {
	h := &harness{t: t, ctx: context.Background(), now: time.Date(2026, 2, 1, 8, 30, 0, 0, time.UTC)}
	h.eng = engine.New(memstore.New(memstore.Options{}), engine.WithClock(h.clock))
	spec := engine.WorkshopSpec{Capacity: 10, MaxQuantity: 3, Title: potteryTitle, Schedule: engine.Schedule{
		Description: potteryText, Location: potteryLocation, StartsAt: potteryStart.UTC(), EndsAt: potteryEnd.UTC(), TimeZone: "Europe/Berlin",
	}}
	if _, _, err := h.eng.PutWorkshop(h.ctx, "pottery", spec, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.eng.PutWorkshop(h.ctx, "open-studio", engine.WorkshopSpec{Capacity: 10, Title: "Open studio"}, nil); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) clock() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.now
}

func (h *harness) advance(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.now = h.now.Add(d)
}

// emailActor signs addr in by a mailed link, which binds it to an actor,
// and returns that actor.
func (h *harness) emailActor(addr string) string {
	h.t.Helper()
	code, _, err := h.eng.CreateEmailCode(h.ctx, addr)
	if err != nil {
		h.t.Fatal(err)
	}
	_, who, _, err := h.eng.RedeemLoginCode(h.ctx, code, time.Hour)
	if err != nil {
		h.t.Fatal(err)
	}
	return who.Actor
}

// providerActor is actor with the address an identity provider verified,
// its display name and language.
func (h *harness) providerActor(actor, addr, name, lang string) string {
	h.t.Helper()
	if err := h.eng.KeepVerifiedEmail(h.ctx, actor, addr); err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.eng.ChangeProfile(h.ctx, actor, engine.ProfileChange{DisplayName: &name, Language: &lang}); err != nil {
		h.t.Fatal(err)
	}
	return actor
}

func key() engine.OperationKey { return engine.OperationKey(uuid.NewString()) }

func (h *harness) reserve(actor, workshop string, quantity int) string {
	h.t.Helper()
	out, err := h.eng.Reserve(h.ctx, actor, key(), engine.Request{Workshop: workshop, Quantity: quantity})
	if err != nil || out.Answer.Status != engine.StatusReserved {
		h.t.Fatalf("reserve: %+v, %v", out, err)
	}
	return out.Answer.ReservationID
}

func (h *harness) cancel(actor, id string) {
	h.t.Helper()
	if _, err := h.eng.Cancel(h.ctx, engine.Principal{Actor: actor}, key(), id); err != nil {
		h.t.Fatal(err)
	}
}

// jobs routes the events not routed yet, mails included, and claims the
// due mail deliveries.
func (h *harness) jobs() []engine.DeliveryJob {
	h.t.Helper()
	if _, _, err := h.eng.RouteEvents(h.ctx, 100, engine.RouteOptions{Mail: true}); err != nil {
		h.t.Fatal(err)
	}
	all, err := h.eng.ClaimDueDeliveries(h.ctx, 100, time.Minute)
	if err != nil {
		h.t.Fatal(err)
	}
	var jobs []engine.DeliveryJob
	for _, j := range all {
		if j.Delivery.Channel == engine.ChannelMail {
			jobs = append(jobs, j)
		}
	}
	return jobs
}

// job is the one mail job jobs returns.
func (h *harness) job() engine.DeliveryJob {
	h.t.Helper()
	jobs := h.jobs()
	if len(jobs) != 1 {
		h.t.Fatalf("%d mail deliveries due, want 1: %+v", len(jobs), jobs)
	}
	return jobs[0]
}

// finish records r as the attempt's outcome, as the dispatcher does.
func (h *harness) finish(job engine.DeliveryJob, r delivery.Result) {
	h.t.Helper()
	a := engine.Attempt{State: engine.DeliveryDelivered, Status: r.Status, Error: r.Err}
	switch {
	case r.Permanent:
		a.State = engine.DeliveryFailed
	case !r.Delivered:
		a.State, a.NextAttemptAt = engine.DeliveryPending, h.clock().Add(time.Minute)
	}
	if err := h.eng.FinishDelivery(h.ctx, job.Delivery, a); err != nil {
		h.t.Fatal(err)
	}
}

// channel returns a mail channel to the sink's SMTP server.
func (h *harness) channel(sink *mailtest.Sink, url string) *delivery.MailChannel {
	h.t.Helper()
	if url == "" {
		url = "smtp://" + sink.Addr
	}
	srv, err := rmail.ParseURL(url, "")
	if err != nil {
		h.t.Fatal(err)
	}
	return newChannel(h.t, delivery.MailConfig{Sender: srv, From: from, PublicURL: "https://reserve.example.org/", Holds: h.eng, Now: h.clock})
}

func newChannel(t *testing.T, cfg delivery.MailConfig) *delivery.MailChannel {
	t.Helper()
	c, err := delivery.NewMailChannel(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// send sends job and wants it delivered.
func (h *harness) send(c *delivery.MailChannel, job engine.DeliveryJob) {
	h.t.Helper()
	r := c.Send(h.ctx, job)
	if !r.Delivered || r.Permanent || r.Err != "" {
		h.t.Fatalf("send %s: %+v", job.Delivery.ID, r)
	}
	h.finish(job, r)
}

// event parses a mail's calendar object with a real iCalendar parser and
// returns its one event, after checking that the attachment is the same
// object and that both name the method the Content-Type does.
func event(t *testing.T, m mailtest.Mail) (method string, ev goical.Event) {
	t.Helper()
	if !bytes.Equal(m.Calendar, m.Attachment) {
		t.Errorf("the attachment differs from the calendar alternative:\n%s\n---\n%s", m.Calendar, m.Attachment)
	}
	cal, err := goical.NewDecoder(bytes.NewReader(m.Calendar)).Decode()
	if err != nil {
		t.Fatalf("parse the calendar: %v\n%s", err, m.Calendar)
	}
	evs := cal.Events()
	if len(evs) != 1 {
		t.Fatalf("%d events in the calendar, want 1", len(evs))
	}
	method = cal.Props.Get(goical.PropMethod).Value
	if method != m.CalendarMethod {
		t.Errorf("METHOD %s, but the Content-Type says method=%s", method, m.CalendarMethod)
	}
	return method, evs[0]
}

func prop(t *testing.T, ev goical.Event, name string) string {
	t.Helper()
	p := ev.Props.Get(name)
	if p == nil {
		t.Fatalf("the event has no %s", name)
	}
	if p.ValueType() != goical.ValueText {
		return p.Value
	}
	s, err := p.Text()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

// TestConfirmationAndCancellationReachTheMailbox: a person bound to an
// email address reserves and cancels; both mails arrive at a real SMTP
// server, the confirmation with an invitation to the workshop's times and
// place, the cancellation with METHOD:CANCEL under the same UID and a
// higher SEQUENCE.
func TestConfirmationAndCancellationReachTheMailbox(t *testing.T) {
	h := newHarness(t)
	sink := mailtest.Start(t)
	c := h.channel(sink, "")
	alice := h.emailActor("alice@example.org")
	id := h.reserve(alice, "pottery", 2)
	confirm := h.job()
	if confirm.Delivery.Recipient != "alice@example.org" || confirm.Event.Type != engine.EventReserved {
		t.Fatalf("job %+v", confirm.Delivery)
	}
	h.send(c, confirm)
	h.advance(time.Hour)
	h.cancel(alice, id)
	cancel := h.job()
	h.send(c, cancel)

	msgs := sink.Wait(t, 2)
	if len(msgs) != 2 {
		t.Fatalf("%d mails, want 2", len(msgs))
	}
	first, second := mailtest.Parse(t, msgs[0]), mailtest.Parse(t, msgs[1])
	for _, tc := range []struct {
		m    mailtest.Mail
		job  engine.DeliveryJob
		subj string
	}{{first, confirm, "Reservation confirmed: " + potteryTitle}, {second, cancel, "Reservation cancelled: " + potteryTitle}} {
		if tc.m.Subject != tc.subj {
			t.Errorf("subject %q, want %q", tc.m.Subject, tc.subj)
		}
		if got, want := tc.m.Header.Get("Message-ID"), "<"+tc.job.Event.ID+".mail@example.org>"; got != want {
			t.Errorf("Message-ID %q, want %q", got, want)
		}
		if d, err := tc.m.Header.Date(); err != nil || !d.Equal(tc.job.Event.CreatedAt.Truncate(time.Second)) {
			t.Errorf("Date %v (%v), want the event's time %v", d, err, tc.job.Event.CreatedAt)
		}
		if to := tc.m.Header.Get("To"); to != "<alice@example.org>" {
			t.Errorf("To %q", to)
		}
		for _, want := range []string{"2 places", "“" + potteryTitle + "”", "When: Monday, 2 March 2026, 09:00 to 12:30 (Europe/Berlin)",
			"Where: " + potteryLocation, "Reservation: " + id, "Your reservations: https://reserve.example.org/"} {
			if !strings.Contains(tc.m.Text, want) {
				t.Errorf("the %s mail does not say %q:\n%s", tc.job.Event.Type, want, tc.m.Text)
			}
		}
		if !strings.Contains(tc.m.HTML, `<a href="https://reserve.example.org/">`) {
			t.Errorf("the HTML part has no link to the page:\n%s", tc.m.HTML)
		}
	}
	if !strings.Contains(first.Text, "Bring old clothes.\r\nClay") || strings.Contains(second.Text, "Bring old clothes") {
		t.Errorf("the description belongs in the confirmation only:\n%s\n---\n%s", first.Text, second.Text)
	}
	if !strings.Contains(first.Text, "attached as a calendar entry") || !strings.Contains(second.Text, "marks it as cancelled") {
		t.Errorf("the mails do not say what the calendar part does:\n%s\n---\n%s", first.Text, second.Text)
	}

	m1, ev1 := event(t, first)
	m2, ev2 := event(t, second)
	if m1 != "REQUEST" || m2 != "CANCEL" {
		t.Errorf("methods %s, %s; want REQUEST, CANCEL", m1, m2)
	}
	if u1, u2 := prop(t, ev1, "UID"), prop(t, ev2, "UID"); u1 != id+"@example.org" || u2 != u1 {
		t.Errorf("UIDs %q and %q, want both %s@example.org", u1, u2, id)
	}
	s1, _ := ev1.Props.Get("SEQUENCE").Int()
	s2, _ := ev2.Props.Get("SEQUENCE").Int()
	if s2 <= s1 {
		t.Errorf("SEQUENCE %d then %d: the cancellation must be higher", s1, s2)
	}
	for _, ev := range []goical.Event{ev1, ev2} {
		start, err := ev.DateTimeStart(nil)
		if err != nil || !start.Equal(potteryStart) {
			t.Errorf("DTSTART %v (%v), want %v", start, err, potteryStart)
		}
		end, err := ev.DateTimeEnd(nil)
		if err != nil || !end.Equal(potteryEnd) {
			t.Errorf("DTEND %v (%v), want %v", end, err, potteryEnd)
		}
		if got := prop(t, ev, "LOCATION"); got != potteryLocation {
			t.Errorf("LOCATION %q", got)
		}
		if got := prop(t, ev, "SUMMARY"); got != potteryTitle {
			t.Errorf("SUMMARY %q", got)
		}
		if got := prop(t, ev, "DESCRIPTION"); got != potteryText {
			t.Errorf("DESCRIPTION %q", got)
		}
		if o, a := ev.Props.Get("ORGANIZER"), ev.Props.Get("ATTENDEE"); o == nil || a == nil || o.Value != "mailto:reserve@example.org" || a.Value != "mailto:alice@example.org" {
			t.Errorf("ORGANIZER %v, ATTENDEE %v", o, a)
		}
	}
	if st, _ := ev1.Status(); st != goical.EventConfirmed {
		t.Errorf("confirmation STATUS %v", st)
	}
	if st, _ := ev2.Status(); st != goical.EventCancelled {
		t.Errorf("cancellation STATUS %v", st)
	}
	if ds, _ := h.eng.Deliveries(h.ctx, engine.Principal{Actor: "root", Admin: true}, engine.DeliveryFilter{State: engine.DeliveryDelivered}); len(ds.Deliveries) != 2 {
		t.Errorf("%d deliveries delivered, want 2", len(ds.Deliveries))
	}
}

// TestResendIsTheSameMail: a daemon that sent a mail and died before
// recording it sends it again: the receiver gets the same bytes under the
// same Message-ID, also later and from another channel value.
func TestResendIsTheSameMail(t *testing.T) {
	h := newHarness(t)
	sink := mailtest.Start(t)
	alice := h.emailActor("alice@example.org")
	h.reserve(alice, "pottery", 1)
	job := h.job()
	if r := h.channel(sink, "").Send(h.ctx, job); !r.Delivered {
		t.Fatalf("first send: %+v", r)
	}
	h.advance(10 * time.Minute) // The claim runs out; another attempt takes it.
	again := h.job()
	if again.Delivery.ID != job.Delivery.ID || again.Delivery.Attempts != 2 {
		t.Fatalf("the delivery claimed again: %+v", again.Delivery)
	}
	h.send(h.channel(sink, ""), again)
	msgs := sink.Wait(t, 2)
	if !bytes.Equal(msgs[0], msgs[1]) {
		t.Fatalf("the resend differs:\n%s\n---\n%s", msgs[0], msgs[1])
	}
	if id := mailtest.Parse(t, msgs[0]).Header.Get("Message-ID"); id != "<"+job.Event.ID+".mail@example.org>" {
		t.Errorf("Message-ID %q", id)
	}
}

// TestSMTPRefusals: a 4xx reply is tried again, with its code as the
// status, and the next attempt delivers; a 5xx reply fails for good; a
// server that cannot be reached is tried again without a status; a
// refused login fails for good and its error holds no password.
func TestSMTPRefusals(t *testing.T) {
	h := newHarness(t)
	alice := h.emailActor("alice@example.org")
	h.reserve(alice, "pottery", 1)
	job := h.job()

	later := mailtest.Start(t, "--refuse", "451", "--refuse-count", "1")
	c := h.channel(later, "")
	if r := c.Send(h.ctx, job); r.Delivered || r.Permanent || r.Status != 451 || !strings.Contains(r.Err, "451") {
		t.Errorf("a 451 reply: %+v, want a retry with status 451", r)
	}
	if r := c.Send(h.ctx, job); !r.Delivered {
		t.Errorf("the attempt after the 451: %+v", r)
	}
	later.Wait(t, 1)

	never := mailtest.Start(t, "--refuse", "550", "--refuse-count", "-1")
	if r := h.channel(never, "").Send(h.ctx, job); r.Delivered || !r.Permanent || r.Status != 550 {
		t.Errorf("a 550 reply: %+v, want a permanent failure with status 550", r)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	if r := h.channel(nil, "smtp://"+closed).Send(h.ctx, job); r.Delivered || r.Permanent || r.Status != 0 || r.Err == "" {
		t.Errorf("an unreachable server: %+v, want a retry without status", r)
	}

	const wrong = "s3cret-not-this-one"
	authed := mailtest.Start(t, "--user", "ada", "--password", "right")
	r := h.channel(authed, "smtp://ada:"+wrong+"@"+authed.Addr).Send(h.ctx, job)
	if r.Delivered || !r.Permanent || r.Status != 535 {
		t.Errorf("a refused login: %+v, want a permanent failure with status 535", r)
	}
	if strings.Contains(r.Err, wrong) {
		t.Errorf("the error shows the password: %s", r.Err)
	}
	h.finish(job, r)
	if ds, _ := h.eng.Deliveries(h.ctx, engine.Principal{Actor: "root", Admin: true}, engine.DeliveryFilter{State: engine.DeliveryFailed}); len(ds.Deliveries) != 1 || ds.Deliveries[0].LastStatus != 535 {
		t.Errorf("failed deliveries %+v", ds.Deliveries)
	}
}

// TestGermanMails: a person whose profile chose German gets German mails:
// subject, greeting, the dates with German names, the notes on the
// calendar, and no calendar for a workshop without a date.
func TestGermanMails(t *testing.T) {
	h := newHarness(t)
	sink := mailtest.Start(t)
	c := h.channel(sink, "")
	jörg := h.providerActor("joerg", "joerg@example.org", "Jörg Müller", "de")
	h.reserve(jörg, "pottery", 1)
	h.send(c, h.job())
	h.reserve(jörg, "open-studio", 2)
	h.send(c, h.job())
	msgs := sink.Wait(t, 2)
	scheduled, open := mailtest.Parse(t, msgs[0]), mailtest.Parse(t, msgs[1])
	if scheduled.Subject != "Reservierung bestätigt: "+potteryTitle || scheduled.Header.Get("Content-Language") != "de" {
		t.Errorf("subject %q, Content-Language %q", scheduled.Subject, scheduled.Header.Get("Content-Language"))
	}
	if to, err := scheduled.Header.AddressList("To"); err != nil || to[0].Name != "Jörg Müller" || to[0].Address != "joerg@example.org" {
		t.Errorf("To %v (%v)", to, err)
	}
	for _, want := range []string{"Guten Tag Jörg Müller,", "Ihre Reservierung über 1 Platz für „" + potteryTitle + "“ ist bestätigt.",
		"Wann: Montag, 2. März 2026, 09:00 bis 12:30 Uhr (Europe/Berlin)", "Wo: " + potteryLocation, "als Kalendereintrag angehängt"} {
		if !strings.Contains(scheduled.Text, want) {
			t.Errorf("the German confirmation does not say %q:\n%s", want, scheduled.Text)
		}
	}
	if _, ev := event(t, scheduled); prop(t, ev, "SUMMARY") != potteryTitle {
		t.Errorf("SUMMARY %q", prop(t, ev, "SUMMARY"))
	}
	if open.Calendar != nil || open.Attachment != nil {
		t.Errorf("a workshop without a date got a calendar entry:\n%s", open.Calendar)
	}
	for _, want := range []string{"2 Plätze für „Open studio“", "kein Termin fest, daher ist kein Kalendereintrag angehängt"} {
		if !strings.Contains(open.Text, want) {
			t.Errorf("the confirmation of an undated workshop does not say %q:\n%s", want, open.Text)
		}
	}
	if strings.Contains(open.Text, "Wann:") {
		t.Errorf("the confirmation of an undated workshop says when:\n%s", open.Text)
	}
}

// TestHoldMails: a new hold's mail names its deadline in the workshop's
// time zone; its expiry has a mail of its own; a new hold's mail that
// could only go out after its deadline is not sent, and says why.
func TestHoldMails(t *testing.T) {
	h := newHarness(t)
	sink := mailtest.Start(t)
	c := h.channel(sink, "")
	alice := h.emailActor("alice@example.org")
	out, err := h.eng.Hold(h.ctx, alice, key(), engine.HoldRequest{Workshop: "pottery", Quantity: 2, TTLSeconds: 900})
	if err != nil || out.Answer.Status != engine.StatusHeld {
		t.Fatalf("hold: %+v, %v", out, err)
	}
	held := h.job()
	h.send(c, held)
	h.advance(901 * time.Second)
	if n, _, err := h.eng.ExpireHolds(h.ctx, 10); err != nil || n != 1 {
		t.Fatalf("ExpireHolds = %d, %v", n, err)
	}
	h.send(c, h.job())
	msgs := sink.Wait(t, 2)
	created, expired := mailtest.Parse(t, msgs[0]), mailtest.Parse(t, msgs[1])
	deadline := out.Answer.ExpiresAt.In(berlin).Format("15:04")
	for _, tc := range []struct {
		m     mailtest.Mail
		subj  string
		wants []string
	}{
		{created, "Places held for you: " + potteryTitle, []string{"your hold of 2 places in “" + potteryTitle + "” lasts until Sunday, 1 February 2026, " + deadline + " (Europe/Berlin)", "Confirm it before then", "Hold: " + out.Answer.HoldID}},
		{expired, "Hold expired: " + potteryTitle, []string{"was not confirmed in time and has expired", "Hold: " + out.Answer.HoldID}},
	} {
		if tc.m.Subject != tc.subj {
			t.Errorf("subject %q, want %q", tc.m.Subject, tc.subj)
		}
		for _, want := range tc.wants {
			if !strings.Contains(tc.m.Text, want) {
				t.Errorf("%q does not say %q:\n%s", tc.subj, want, tc.m.Text)
			}
		}
		if tc.m.Calendar != nil {
			t.Errorf("%q carries a calendar entry", tc.subj)
		}
	}
	// The same new hold's mail, after the deadline.
	if r := c.Send(h.ctx, held); r.Delivered || !r.Permanent || !strings.Contains(r.Err, "expired") {
		t.Errorf("a new hold's mail after its deadline: %+v, want a permanent failure that says why", r)
	}
}

// capture is a mail server that keeps what it is handed.
type capture struct{ msgs [][]byte }

func (c *capture) Send(_ context.Context, _, _ string, msg []byte) error {
	c.msgs = append(c.msgs, msg)
	return nil
}

// TestMailOfAGoneWorkshop: a workshop removed before its mail goes out
// still gets the mail, with what the event says (its id, the places),
// and a cancellation still carries METHOD:CANCEL for the entry a
// calendar may hold.
func TestMailOfAGoneWorkshop(t *testing.T) {
	sent := &capture{}
	c := newChannel(t, delivery.MailConfig{Sender: sent, From: from})
	at := time.Date(2026, 2, 1, 8, 30, 0, 0, time.UTC)
	job := engine.DeliveryJob{
		Delivery: engine.Delivery{ID: "0190aa-mail", Channel: engine.ChannelMail, Recipient: "alice@example.org"},
		Event: engine.Event{ID: "0190aabbccddeeff0011223344556677", Type: engine.EventCancelled, ReservationID: "0190aabbccddeeff0011223344556600",
			Owner: "alice", Workshop: "pottery", Quantity: 3, CreatedAt: at},
	}
	if r := c.Send(context.Background(), job); !r.Delivered {
		t.Fatalf("send: %+v", r)
	}
	m := mailtest.Parse(t, sent.msgs[0])
	for _, want := range []string{"3 places in “pottery” is cancelled", "The workshop “pottery” no longer exists"} {
		if !strings.Contains(m.Text, want) {
			t.Errorf("the mail does not say %q:\n%s", want, m.Text)
		}
	}
	if strings.Contains(m.Text, "Your reservations") {
		t.Errorf("a mail without a public URL links to a page:\n%s", m.Text)
	}
	method, ev := event(t, m)
	if method != "CANCEL" || prop(t, ev, "UID") != job.Event.ReservationID+"@example.org" || ev.Props.Get("DTSTART") != nil {
		t.Errorf("calendar %s UID %q DTSTART %v", method, prop(t, ev, "UID"), ev.Props.Get("DTSTART"))
	}
}

// TestNoHeaderInjection: a workshop title with a line break (which title
// validation refuses, and which a mail must survive anyway) adds no
// header field and no calendar property.
func TestNoHeaderInjection(t *testing.T) {
	sent := &capture{}
	c := newChannel(t, delivery.MailConfig{Sender: sent, From: from})
	at := time.Date(2026, 2, 1, 8, 30, 0, 0, time.UTC)
	evil := "Pottery\r\nBcc: eve@example.org\r\n\r\nFake body"
	job := engine.DeliveryJob{
		Delivery: engine.Delivery{ID: "x-mail", Channel: engine.ChannelMail, Recipient: "alice@example.org"},
		Event: engine.Event{ID: "0190aabbccddeeff0011223344556677", Type: engine.EventReserved, ReservationID: "0190aabbccddeeff0011223344556600",
			Owner: "alice", Workshop: "pottery", Quantity: 1, CreatedAt: at},
		Workshop: engine.Workshop{ID: "pottery", Title: evil, Schedule: engine.Schedule{
			StartsAt: potteryStart, Location: "Room 1\r\nATTENDEE:mailto:eve@example.org",
		}},
		WorkshopFound: true,
		Profile:       engine.Profile{DisplayName: "Alice\r\nBcc: eve@example.org"},
	}
	if r := c.Send(context.Background(), job); !r.Delivered {
		t.Fatalf("send: %+v", r)
	}
	raw := sent.msgs[0]
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if msg.Header.Get("Bcc") != "" || len(msg.Header["Subject"]) != 1 || len(msg.Header["To"]) != 1 {
		t.Fatalf("the title or name added a header field:\n%s", raw)
	}
	m := mailtest.Parse(t, raw)
	if strings.ContainsAny(m.Subject, "\r\n") {
		t.Errorf("the subject holds a line break: %q", m.Subject)
	}
	if to, err := msg.Header.AddressList("To"); err != nil || len(to) != 1 || to[0].Address != "alice@example.org" {
		t.Errorf("To %v (%v)", to, err)
	}
	_, ev := event(t, m)
	if atts := ev.Props.Values("ATTENDEE"); len(atts) != 1 || atts[0].Value != "mailto:alice@example.org" {
		t.Errorf("attendees %v", atts)
	}
	if got := prop(t, ev, "SUMMARY"); got != "Pottery\nBcc: eve@example.org\n\nFake body" {
		t.Errorf("SUMMARY %q", got)
	}
}

// TestChannelRefusesOtherDeliveries: a webhook delivery or an event type
// without a mail fails for good, and nothing is sent.
func TestChannelRefusesOtherDeliveries(t *testing.T) {
	sent := &capture{}
	c := newChannel(t, delivery.MailConfig{Sender: sent, From: from})
	for _, job := range []engine.DeliveryJob{
		{Delivery: engine.Delivery{ID: "a", Channel: engine.ChannelWebhook, Endpoint: "w"}},
		{Delivery: engine.Delivery{ID: "b", Channel: engine.ChannelMail, Recipient: "a@example.org"}, Event: engine.Event{ID: "e", Type: engine.EventHoldReleased}},
	} {
		if r := c.Send(context.Background(), job); !r.Permanent || r.Err == "" {
			t.Errorf("%s: %+v, want a permanent failure", job.Delivery.ID, r)
		}
	}
	if len(sent.msgs) != 0 {
		t.Errorf("%d mails sent", len(sent.msgs))
	}
	if _, err := delivery.NewMailChannel(delivery.MailConfig{Sender: sent, From: mail.Address{Address: "nodomain"}}); err == nil {
		t.Error("a sender without a domain was accepted")
	}
}

// TestWaitlistOffer: the offer from the waiting list has its mail ready,
// in German too, without a calendar entry.
func TestWaitlistOffer(t *testing.T) {
	sent := &capture{}
	c := newChannel(t, delivery.MailConfig{Sender: sent, From: from})
	job := engine.DeliveryJob{
		Delivery: engine.Delivery{ID: "o-mail", Channel: engine.ChannelMail, Recipient: "joerg@example.org"},
		Event: engine.Event{ID: "0190aabbccddeeff0011223344556677", Type: engine.WebhookWaitlistOffered, Owner: "joerg", Workshop: "pottery",
			Quantity: 1, CreatedAt: time.Date(2026, 2, 1, 8, 30, 0, 0, time.UTC)},
		Workshop:      engine.Workshop{ID: "pottery", Title: potteryTitle, Schedule: engine.Schedule{StartsAt: potteryStart.UTC(), TimeZone: "Europe/Berlin"}},
		WorkshopFound: true,
		Profile:       engine.Profile{Language: "de"},
	}
	if r := c.Send(context.Background(), job); !r.Delivered {
		t.Fatalf("send: %+v", r)
	}
	m := mailtest.Parse(t, sent.msgs[0])
	if strings.Contains(m.Text, "\r\n\r\n\r\n") || strings.Contains(m.HTML, "<p></p>") {
		t.Errorf("the mail has an empty paragraph:\n%s\n%s", m.Text, m.HTML)
	}
	job.Workshop.StartsAt = time.Time{}
	if r := c.Send(context.Background(), job); !r.Delivered {
		t.Fatalf("send: %+v", r)
	}
	if bare := mailtest.Parse(t, sent.msgs[1]); strings.Contains(bare.Text, "\r\n\r\n\r\n") || strings.Contains(bare.HTML, "<p></p>") {
		t.Errorf("the mail of an undated workshop has an empty paragraph:\n%s\n%s", bare.Text, bare.HTML)
	}
	if m.Subject != "Angebot von der Warteliste: "+potteryTitle || m.Calendar != nil {
		t.Errorf("subject %q, calendar %q", m.Subject, m.Calendar)
	}
	for _, want := range []string{"Guten Tag,", "die Warteliste für „" + potteryTitle + "“ bietet Ihnen 1 Platz an.", "Wann: Montag, 2. März 2026, 09:00 Uhr (Europe/Berlin)"} {
		if !strings.Contains(m.Text, want) {
			t.Errorf("the offer does not say %q:\n%s", want, m.Text)
		}
	}
}

// filler is the actor who takes every place of pottery.
const filler = "filler"

// fillPottery reserves all 10 places of pottery for filler, 3 in the
// first reservation, whose id it returns.
func (h *harness) fillPottery() string {
	h.t.Helper()
	first := h.reserve(filler, "pottery", 3)
	for _, n := range []int{3, 3, 1} {
		h.reserve(filler, "pottery", n)
	}
	return first
}

// join puts actor on the waiting list of pottery for quantity places.
func (h *harness) join(actor string, quantity int) {
	h.t.Helper()
	out, err := h.eng.Reserve(h.ctx, actor, key(), engine.Request{Workshop: "pottery", Quantity: quantity, Waitlist: true})
	if err != nil || out.Answer.Status != engine.StatusWaiting {
		h.t.Fatalf("join: %+v, %v", out, err)
	}
}

// TestOfferMailNamesItsDeadline: the mail of an offer from the waiting
// list says until when the offer lasts, in the workshop's time zone, and
// names the offer; one that could only go out after that is not sent,
// and says why.
func TestOfferMailNamesItsDeadline(t *testing.T) {
	h := newHarness(t)
	sink := mailtest.Start(t)
	c := h.channel(sink, "")
	first := h.fillPottery()
	alice := h.emailActor("alice@example.org")
	h.join(alice, 2)
	h.cancel(filler, first)
	offer := h.job()
	if offer.Event.Type != engine.EventWaitlistOffered {
		t.Fatalf("the mail due is of a %s event", offer.Event.Type)
	}
	hd, err := h.eng.HoldOf(h.ctx, engine.Principal{Actor: alice}, offer.Event.HoldID)
	if err != nil {
		t.Fatal(err)
	}
	h.send(c, offer)
	m := mailtest.Parse(t, sink.Wait(t, 1)[0])
	deadline := hd.ExpiresAt.In(berlin).Format("15:04")
	for _, want := range []string{"the waiting list of “" + potteryTitle + "” offers you 2 places until Monday, 2 February 2026, " + deadline + " (Europe/Berlin)",
		"Accept the offer on the page before then", "Hold: " + hd.ID} {
		if !strings.Contains(m.Text, want) {
			t.Errorf("the offer does not say %q:\n%s", want, m.Text)
		}
	}
	h.advance(25 * time.Hour)
	if r := c.Send(h.ctx, offer); r.Delivered || !r.Permanent || !strings.Contains(r.Err, "ran out") {
		t.Errorf("an offer's mail after its deadline: %+v, want a permanent failure that says why", r)
	}
}

// TestExpiredOfferMails: an offer from the waiting list that runs out has
// a mail of its own, in English and German: the offer ran out and its
// places went on to the next person waiting, and the person may join the
// list again. It does not suggest reserving again, as the mail of an
// expired hold does: places freed go to the people waiting first.
func TestExpiredOfferMails(t *testing.T) {
	h := newHarness(t)
	sink := mailtest.Start(t)
	c := h.channel(sink, "")
	first := h.fillPottery()
	alice := h.emailActor("alice@example.org")
	jörg := h.providerActor("joerg", "joerg@example.org", "Jörg Müller", "de")
	h.join(alice, 2)
	h.join(jörg, 1)
	h.cancel(filler, first) // 3 places: 2 offered to alice, 1 to Jörg.
	offers := h.jobs()
	if len(offers) != 2 {
		t.Fatalf("%d mails due, want the 2 offers: %+v", len(offers), offers)
	}
	holds := map[string]string{} // Address → the offer's hold.
	for _, j := range offers {
		if j.Event.Type != engine.EventWaitlistOffered {
			t.Fatalf("the mail due is of a %s event", j.Event.Type)
		}
		holds[j.Delivery.Recipient] = j.Event.HoldID
		h.send(c, j)
	}
	h.advance(25 * time.Hour) // An offer lasts a day.
	if n, _, err := h.eng.ExpireHolds(h.ctx, 10); err != nil || n != 2 {
		t.Fatalf("ExpireHolds = %d, %v", n, err)
	}
	expired := h.jobs()
	if len(expired) != 2 {
		t.Fatalf("%d mails due, want the 2 expiries: %+v", len(expired), expired)
	}
	for _, j := range expired {
		h.send(c, j)
	}
	mails := map[string]mailtest.Mail{}
	for _, raw := range sink.Wait(t, 4)[2:] {
		m := mailtest.Parse(t, raw)
		to, err := m.Header.AddressList("To")
		if err != nil || len(to) != 1 {
			t.Fatalf("To %v (%v)", to, err)
		}
		mails[to[0].Address] = m
	}
	for _, tc := range []struct {
		to, subj string
		wants    []string
		never    string
	}{
		{"alice@example.org", "Offer expired: " + potteryTitle, []string{
			"the offer of 2 places in “" + potteryTitle + "” from the waiting list was not accepted in time and has run out",
			"the places went on to the next person waiting", "you can join the waiting list again", "Hold: " + holds["alice@example.org"],
		}, "reserve again"},
		{"joerg@example.org", "Angebot abgelaufen: " + potteryTitle, []string{
			"Guten Tag Jörg Müller,", "das Angebot der Warteliste über 1 Platz für „" + potteryTitle + "“ wurde nicht rechtzeitig angenommen und ist abgelaufen",
			"die Plätze gingen an die nächste Person auf der Liste", "erneut auf die Warteliste setzen", "Vormerkung: " + holds["joerg@example.org"],
		}, "erneut reservieren"},
	} {
		m, ok := mails[tc.to]
		if !ok {
			t.Fatalf("no expiry mail to %s", tc.to)
		}
		if m.Subject != tc.subj {
			t.Errorf("subject %q, want %q", m.Subject, tc.subj)
		}
		for _, want := range tc.wants {
			if !strings.Contains(m.Text, want) {
				t.Errorf("%q does not say %q:\n%s", tc.subj, want, m.Text)
			}
		}
		if strings.Contains(m.Text, tc.never) {
			t.Errorf("%q says %q:\n%s", tc.subj, tc.never, m.Text)
		}
	}
}
