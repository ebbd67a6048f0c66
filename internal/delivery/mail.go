package delivery

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	netmail "net/mail"
	"net/textproto"
	"strings"
	"time"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/ical"
	"github.com/reserve/reserve/internal/mail"
)

// MailConfig configures the mail channel.
type MailConfig struct {
	// Sender hands a composed mail to the mail server (a mail.Server).
	// Required.
	Sender mail.Sender
	// From is the sender of the mails (--mail-from). Its domain is the
	// right part of every Message-ID and calendar UID. Required.
	From netmail.Address
	// PublicURL, if set, is the base URL people reach the daemon's page
	// at; the mails link to it.
	PublicURL string
	// Holds, if set, looks up a hold, so that the mail about a new hold
	// names its deadline and the mail about an expired offer from a
	// waiting list says so (an *engine.Engine does). Nil: the mail says
	// only that the hold lasts a limited time, and an expired offer is
	// told as an expired hold.
	Holds HoldLookup
	// Now is the clock; nil means time.Now. It decides nothing that goes
	// into a mail, so every attempt sends the same bytes.
	Now func() time.Time
}

// HoldLookup returns a hold as engine.Engine.HoldOf does.
type HoldLookup interface {
	HoldOf(ctx context.Context, who engine.Principal, id string) (engine.Hold, error)
}

// MailChannel sends the mail of a delivery to the person its event is
// about, in the person's language (Profile.Language; English when none
// is chosen).
//
// Every attempt of a delivery sends the same message: the Message-ID is
// made from the event's id and the channel (a reminder is another mail
// than its event's own), the Date is the event's time (a reminder's, the
// time it came due), the MIME boundaries are made from the event's id,
// so that a resend after a crash is the same bytes. (Its text is built from the workshop and the
// person's profile when it is sent: a workshop changed between two
// attempts is told as it stands then, under the same Message-ID.) A
// confirmation of a workshop with a start carries an invitation
// (METHOD:REQUEST) whose UID is made from the reservation's id; the
// cancellation of that reservation carries METHOD:CANCEL under the same
// UID with a higher SEQUENCE, so calendars that took the invitation mark
// it cancelled.
type MailChannel struct {
	cfg    MailConfig
	domain string
}

// NewMailChannel returns the mail channel of cfg.
func NewMailChannel(cfg MailConfig) (*MailChannel, error) {
	if cfg.Sender == nil {
		return nil, errors.New("the mail channel needs a mail server to send through")
	}
	_, domain, ok := strings.Cut(cfg.From.Address, "@")
	if !ok || domain == "" || strings.ContainsAny(domain, "@<> \t\r\n") {
		return nil, fmt.Errorf("the sender %q has no domain for the Message-IDs", cfg.From.Address)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.PublicURL = strings.TrimSuffix(cfg.PublicURL, "/")
	return &MailChannel{cfg: cfg, domain: strings.ToLower(domain)}, nil
}

// The sequence numbers of a reservation's calendar entry: the
// confirmation's, and the cancellation's, which replaces it.
const (
	sequenceConfirmed = 0
	sequenceCancelled = 1
)

// prodID names this product in the calendar objects.
const prodID = "-//reserve//reserved//EN"

// Send composes the delivery's mail and hands it to the mail server once.
// A mail the server accepted is delivered; a 5xx reply (or a server off
// loopback without STARTTLS) fails for good; a 4xx reply, a connection,
// TLS or timeout error is tried again. Status is the reply code, when
// there was one.
func (c *MailChannel) Send(ctx context.Context, job engine.DeliveryJob) Result {
	d := job.Delivery
	if d.Channel != engine.ChannelMail && d.Channel != engine.ChannelReminder || d.Recipient == "" {
		return Result{Permanent: true, Err: fmt.Sprintf("delivery %s is not a mail to an address", d.ID)}
	}
	m, refusal, err := c.message(ctx, job)
	if err != nil {
		return Result{Err: err.Error()}
	}
	if refusal != "" {
		return Result{Permanent: true, Err: refusal}
	}
	raw, err := mail.Compose(m, c.cfg.Now())
	if err != nil {
		return Result{Permanent: true, Err: fmt.Sprintf("compose the mail: %v", err)}
	}
	return sendResult(c.cfg.Sender.Send(ctx, c.cfg.From.Address, d.Recipient, raw))
}

// sendResult judges what the mail server answered.
func sendResult(err error) Result {
	if err == nil {
		return Result{Delivered: true}
	}
	r := Result{Permanent: mail.Permanent(err), Err: "send the mail: " + err.Error()}
	var reply *textproto.Error
	if errors.As(err, &reply) {
		r.Status = reply.Code
	}
	return r
}

// message returns the mail of job, or why it cannot be sent at all (a
// refusal), or an error of ours that may pass (a hold that could not be
// read).
func (c *MailChannel) message(ctx context.Context, job engine.DeliveryJob) (mail.Message, string, error) {
	ev := job.Event
	w := wordings["en"]
	lang := "en"
	if l, ok := wordings[job.Profile.Language]; ok {
		w, lang = l, job.Profile.Language
	}
	ws := job.Workshop
	title := ev.Workshop
	if job.WorkshopFound {
		title = ws.Title
	}
	scheduled := job.WorkshopFound && !ws.StartsAt.IsZero()
	loc := zone(ws.TimeZone)
	places := w.places(ev.Quantity)
	named := w.quote(title)

	var subject string
	var intro []string
	var facts []line
	var cal *ical.Calendar
	// kind is the mail's: its event's type, or, for a reminder, the
	// reminder of it, a mail of its own.
	kind := ev.Type
	if job.Delivery.Channel == engine.ChannelReminder {
		kind = reminderOf(ev.Type)
	}
	switch kind {
	case engine.EventReserved:
		subject = fmt.Sprintf(w.reservedSubject, title)
		intro = []string{fmt.Sprintf(w.reserved, places, named)}
		if scheduled {
			cal = c.calendar(job, ical.MethodRequest, ical.StatusConfirmed, sequenceConfirmed)
		}
		facts = append(facts, line{Text: w.reservationLabel + ev.ReservationID})
	case engine.EventCancelled:
		subject = fmt.Sprintf(w.cancelledSubject, title)
		intro = []string{fmt.Sprintf(w.cancelled, places, named)}
		// A workshop that is gone may have had times, so a calendar may
		// hold its entry: the cancellation goes out for it too.
		if scheduled || !job.WorkshopFound {
			cal = c.calendar(job, ical.MethodCancel, ical.StatusCancelled, sequenceCancelled)
		}
		facts = append(facts, line{Text: w.reservationLabel + ev.ReservationID})
	case engine.EventHoldCreated:
		subject = fmt.Sprintf(w.heldSubject, title)
		deadline, late, err := c.openDeadline(ctx, ev, "hold "+ev.HoldID+" expired")
		if err != nil || late != "" {
			return mail.Message{}, late, err
		}
		if deadline.IsZero() {
			intro = []string{fmt.Sprintf(w.heldForAWhile, places, named)}
		} else {
			intro = []string{fmt.Sprintf(w.held, places, named, w.instant(deadline.In(loc), ws.TimeZone))}
		}
		facts = append(facts, line{Text: w.holdLabel + ev.HoldID})
	case engine.EventHoldExpired:
		// The event does not say whether the hold was an offer from the
		// waiting list; the hold does. Such an offer went on to the next
		// person waiting, who comes before anyone reserving, so its mail
		// leads back to the list rather than to reserving again.
		h, err := c.hold(ctx, ev)
		if err != nil {
			return mail.Message{}, "", err
		}
		if h.WaitEntry != "" {
			subject = fmt.Sprintf(w.offerExpiredSubject, title)
			intro = []string{fmt.Sprintf(w.offerExpired, places, named)}
		} else {
			subject = fmt.Sprintf(w.expiredSubject, title)
			intro = []string{fmt.Sprintf(w.expired, places, named)}
		}
		facts = append(facts, line{Text: w.holdLabel + ev.HoldID})
	case engine.EventWaitlistOffered:
		subject = fmt.Sprintf(w.offerSubject, title)
		deadline, late, err := c.openDeadline(ctx, ev, "the offer "+ev.HoldID+" ran out")
		if err != nil || late != "" {
			return mail.Message{}, late, err
		}
		if deadline.IsZero() {
			intro = []string{fmt.Sprintf(w.offer, named, places)}
		} else {
			intro = []string{fmt.Sprintf(w.offerUntil, named, places, w.instant(deadline.In(loc), ws.TimeZone))}
		}
		facts = append(facts, line{Text: w.holdLabel + ev.HoldID})
	case reminderOf(engine.EventHoldCreated), reminderOf(engine.EventWaitlistOffered):
		// The engine claimed the reminder with its hold, open then.
		deadline := cmp.Or(job.Hold.ExpiresAt, ev.HoldExpiresAt)
		if deadline.IsZero() {
			return mail.Message{}, fmt.Sprintf("the reminder of hold %s has no deadline to remind of", ev.HoldID), nil
		}
		until := w.instant(deadline.In(loc), ws.TimeZone)
		if ev.Type == engine.EventWaitlistOffered {
			subject = fmt.Sprintf(w.offerReminderSubject, title)
			intro = []string{fmt.Sprintf(w.offerReminder, named, places, until)}
		} else {
			subject = fmt.Sprintf(w.reminderSubject, title)
			intro = []string{fmt.Sprintf(w.reminder, places, named, until)}
		}
		facts = append(facts, line{Text: w.holdLabel + ev.HoldID})
	default:
		return mail.Message{}, fmt.Sprintf("events of type %q have no %s", ev.Type, job.Delivery.Channel), nil
	}

	greeting := w.hello
	if n := job.Profile.DisplayName; n != "" {
		greeting = fmt.Sprintf(w.helloName, n)
	}
	paragraphs := []paragraph{{{Text: greeting}}}
	for _, p := range intro {
		paragraphs = append(paragraphs, paragraph{{Text: p}})
	}
	var about paragraph
	if scheduled {
		about = append(about, line{Text: w.whenLabel + w.span(ws.StartsAt.In(loc), ws.EndsAt, loc, ws.TimeZone)})
	}
	if job.WorkshopFound && ws.Location != "" {
		about = append(about, line{Text: w.whereLabel + ws.Location})
	}
	if about = append(about, facts...); len(about) > 0 {
		paragraphs = append(paragraphs, about)
	}
	// The description helps who is to come: it goes with a confirmation
	// and a new hold, not with their ends.
	if job.WorkshopFound && ws.Description != "" && (kind == engine.EventReserved || kind == engine.EventHoldCreated) {
		var p paragraph
		for l := range strings.Lines(ws.Description) {
			p = append(p, line{Text: strings.TrimRight(l, "\r\n")})
		}
		paragraphs = append(paragraphs, p)
	}
	switch {
	case !job.WorkshopFound:
		paragraphs = append(paragraphs, paragraph{{Text: fmt.Sprintf(w.gone, w.quote(ev.Workshop))}})
	case ev.Type == engine.EventReserved && cal != nil:
		paragraphs = append(paragraphs, paragraph{{Text: w.calendarAttached}})
	case ev.Type == engine.EventReserved:
		paragraphs = append(paragraphs, paragraph{{Text: w.noDate}})
	}
	if ev.Type == engine.EventCancelled && cal != nil {
		paragraphs = append(paragraphs, paragraph{{Text: w.calendarCancelled}})
	}
	if c.cfg.PublicURL != "" {
		paragraphs = append(paragraphs, paragraph{{Text: w.pageLabel, Link: c.cfg.PublicURL + "/"}})
	}

	subject = oneLine(subject)
	html, err := mail.HTMLBody(mailHTML, struct {
		Lang, Subject string
		Paragraphs    []paragraph
	}{lang, subject, paragraphs})
	if err != nil {
		return mail.Message{}, "", err
	}
	m := mail.Message{
		From:      c.cfg.From,
		To:        netmail.Address{Name: oneLine(job.Profile.DisplayName), Address: job.Delivery.Recipient},
		Subject:   subject,
		Text:      plainText(paragraphs),
		HTML:      html,
		Lang:      lang,
		MessageID: c.messageID(ev.ID, job.Delivery.Channel),
		Date:      ev.CreatedAt,
		Boundary:  boundarySeed(ev.ID),
	}
	if job.Delivery.Channel == engine.ChannelReminder {
		m.Date, m.Boundary = job.Delivery.Since, boundarySeed(ev.ID+" "+engine.ChannelReminder)
	}
	if cal != nil {
		data, err := cal.Encode()
		if err != nil {
			return mail.Message{}, fmt.Sprintf("write the calendar entry: %v", err), nil
		}
		m.Calendar = &mail.Calendar{Method: cal.Method, Data: data}
	}
	return m, "", nil
}

// calendar returns the calendar object of job's reservation.
func (c *MailChannel) calendar(job engine.DeliveryJob, method, status string, sequence int) *ical.Calendar {
	ws := job.Workshop
	ev := ical.Event{
		UID:       job.Event.ReservationID + "@" + c.domain,
		Sequence:  sequence,
		Stamp:     job.Event.CreatedAt,
		Status:    status,
		Organizer: ical.Person{Name: c.cfg.From.Name, Address: c.cfg.From.Address},
		Attendee:  ical.Person{Name: job.Profile.DisplayName, Address: job.Delivery.Recipient},
	}
	if job.WorkshopFound {
		ev.Start, ev.End, ev.TimeZone = ws.StartsAt, ws.EndsAt, zone(ws.TimeZone)
		ev.Summary, ev.Location, ev.Description = ws.Title, ws.Location, ws.Description
	}
	if c.cfg.PublicURL != "" {
		ev.URL = c.cfg.PublicURL + "/"
	}
	return &ical.Calendar{ProdID: prodID, Method: method, Event: ev}
}

// hold returns the hold of ev, or the zero Hold (no deadline, no waiting
// list entry) when there is no lookup, ev names no hold or the hold is
// not found. An error of the lookup may pass: the delivery is tried
// again.
func (c *MailChannel) hold(ctx context.Context, ev engine.Event) (engine.Hold, error) {
	if c.cfg.Holds == nil || ev.HoldID == "" {
		return engine.Hold{}, nil
	}
	h, err := c.cfg.Holds.HoldOf(ctx, engine.Principal{Actor: ev.Owner}, ev.HoldID)
	if engine.ErrorCode(err) == engine.CodeUnknownHold {
		return engine.Hold{}, nil
	}
	if err != nil {
		return engine.Hold{}, fmt.Errorf("look up hold %s: %w", ev.HoldID, err)
	}
	return h, nil
}

// openDeadline returns the deadline of the hold of ev, a new hold or an
// offer, whose mail tells until when it lasts: the zero time when the
// hold is not known, and, once the deadline has passed, the reason its
// mail is not sent (ended says how it ended), since the mail about its
// expiry says the rest.
func (c *MailChannel) openDeadline(ctx context.Context, ev engine.Event, ended string) (deadline time.Time, late string, err error) {
	h, err := c.hold(ctx, ev)
	if err != nil {
		return time.Time{}, "", err
	}
	if !h.ExpiresAt.IsZero() && !c.cfg.Now().Before(h.ExpiresAt) {
		return time.Time{}, fmt.Sprintf("%s at %s, before its mail went out; the mail about its expiry says the rest",
			ended, h.ExpiresAt.UTC().Format(time.RFC3339)), nil
	}
	return h.ExpiresAt, "", nil
}

// reminderOf names the reminder of an event of type eventType, as the
// kind of a mail.
func reminderOf(eventType string) string { return engine.ChannelReminder + " " + eventType }

// messageID returns the Message-ID (without its brackets) of the mail of
// event id through channel (mail, reminder): the id, when it is safe in a
// Message-ID, else its digest, then the channel.
func (c *MailChannel) messageID(eventID, channel string) string {
	left := eventID
	if left == "" || strings.ContainsFunc(left, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) || len(left) > 64 {
		sum := sha256.Sum256([]byte(eventID))
		left = hex.EncodeToString(sum[:16])
	}
	return left + "." + channel + "@" + c.domain
}

// boundarySeed returns the seed of the MIME boundaries of the mail of
// event id.
func boundarySeed(eventID string) string {
	sum := sha256.Sum256([]byte("mime boundary " + eventID))
	return hex.EncodeToString(sum[:16])
}

// zone returns the time zone name, UTC for none or one not known.
func zone(name string) *time.Location {
	if name == "" {
		return time.UTC
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return time.UTC
	}
	return loc
}

// oneLine returns s with every control character a space, for a header
// field.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// line is a line of a mail's text: text, then a link, if any.
type line struct{ Text, Link string }

// paragraph is a paragraph of a mail's text: its lines.
type paragraph []line

// plainText returns the paragraphs as the text part.
func plainText(ps []paragraph) string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteString("\n")
		}
		for _, l := range p {
			b.WriteString(l.Text + l.Link + "\n")
		}
	}
	return b.String()
}

// mailHTML is the HTML part: the paragraphs, their lines broken, each
// link a link; html/template escapes every text and refuses a link that
// is not http or https.
var mailHTML = template.Must(template.New("mail").Parse(`<!doctype html>
<html lang="{{.Lang}}"><head><meta charset="utf-8"><title>{{.Subject}}</title></head>
<body>
{{range .Paragraphs}}<p>{{range $i, $l := .}}{{if $i}}<br>
{{end}}{{$l.Text}}{{with $l.Link}}<a href="{{.}}">{{.}}</a>{{end}}{{end}}</p>
{{end}}</body></html>
`))
