package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// DeliveryState is where a delivery stands.
type DeliveryState string

// The states of a delivery. A pending delivery is sent when it is due
// (again after each failed attempt that may succeed later); it ends
// delivered, failed (a refusal that will not change, or its retries ran
// out) or skipped (an operator gave it up). An operator may send a failed,
// skipped or delivered one again (RetryDelivery), which makes it pending.
// No delivery is ever removed.
const (
	DeliveryPending   DeliveryState = "pending"
	DeliveryDelivered DeliveryState = "delivered"
	DeliveryFailed    DeliveryState = "failed"
	DeliverySkipped   DeliveryState = "skipped"
)

// DeliveryStates are the states, in the order views list them.
var DeliveryStates = []DeliveryState{DeliveryPending, DeliveryFailed, DeliveryDelivered, DeliverySkipped}

// The channels a delivery goes through.
const (
	// ChannelWebhook is a POST to a webhook endpoint, signed per Standard
	// Webhooks.
	ChannelWebhook = "webhook"
	// ChannelMail is a mail to the person the event is about.
	ChannelMail = "mail"
	// ChannelReminder is a mail to the person a new hold or an offer is
	// for, reminding them of its deadline shortly before it, while the
	// hold is still open: the event's second mail, made when the event
	// is routed and due at the deadline less a lead
	// (RouteOptions.HoldReminder). When it comes due, a hold that was
	// confirmed, released or has expired needs no reminder: it is
	// skipped then (ClaimDueDeliveries), not sent.
	ChannelReminder = "reminder"
)

// DeliveryChannels are the channels a delivery may go through.
var DeliveryChannels = []string{ChannelWebhook, ChannelMail, ChannelReminder}

// Delivery is one event on its way to one destination: a webhook endpoint
// or a person's mailbox. Its ID is the event's id and the destination's,
// so that routing an event twice makes no second delivery, and every
// attempt, first or repeated, sends the same event under the same id
// (the webhook-id, the Message-ID).
type Delivery struct {
	ID      string `json:"id"`
	EventID string `json:"event_id"`
	// EventType is the outbox type of the event.
	EventType string `json:"event_type"`
	Channel   string `json:"channel"`
	// Endpoint is the webhook endpoint's id (ChannelWebhook);
	// Recipient the address a mail goes to (ChannelMail).
	Endpoint  string        `json:"endpoint,omitempty"`
	Recipient string        `json:"recipient,omitempty"`
	State     DeliveryState `json:"state"`
	// Attempts counts the attempts made (or begun: a daemon killed while
	// sending counts one) since the delivery was made or an operator sent
	// it again; the backoff grows with it.
	Attempts  int       `json:"attempts"`
	CreatedAt time.Time `json:"created_at"`
	// Since starts the time a pending delivery is retried for: when it
	// was made (a reminder: when it is due), or when an operator sent it
	// again.
	Since time.Time `json:"since"`
	// NextAttemptAt is when a pending delivery is due; while an attempt
	// is under way, when that attempt's claim runs out.
	NextAttemptAt time.Time `json:"next_attempt_at,omitzero"`
	LastAttemptAt time.Time `json:"last_attempt_at,omitzero"`
	// LastStatus is the HTTP status (webhooks) or SMTP reply code (mail)
	// of the last attempt that got one; LastError says what went wrong.
	LastStatus int       `json:"last_status,omitempty"`
	LastError  string    `json:"last_error,omitempty"`
	DoneAt     time.Time `json:"done_at,omitzero"`
}

// MaxDeliveryErrorLen bounds Delivery.LastError, in bytes.
const MaxDeliveryErrorLen = 500

// DeliveryIDOf returns the id of the delivery of event eventID to
// destination: a webhook endpoint's id, "mail" or "reminder".
func DeliveryIDOf(eventID, destination string) string { return eventID + "-" + destination }

// DestinationOf returns the destination of d that its id names: its
// webhook endpoint's id, or its channel (mail, reminder).
func DestinationOf(d Delivery) string {
	if d.Channel == ChannelWebhook {
		return d.Endpoint
	}
	return d.Channel
}

// IsDeliveryID reports whether s has the form of a delivery id: an event
// id, "-", and a webhook endpoint's id, "mail" or "reminder".
func IsDeliveryID(s string) bool {
	event, dest, ok := strings.Cut(s, "-")
	return ok && IsReservationID(event) && (dest == ChannelMail || dest == ChannelReminder || IsReservationID(dest))
}

// mailEventTypes are the event types a person gets a mail for: a hold's
// confirmation gets none beside its reservation's, and a release none
// beside the person's own answer.
var mailEventTypes = map[string]bool{
	EventReserved: true, EventCancelled: true, EventHoldCreated: true, EventHoldExpired: true,
	WebhookWaitlistOffered: true,
}

// MailAddressOf returns the verified address actor's mails go to, and
// false when there is none: the address of an actor bound to an email
// subject, or else the verified address its profile keeps (from the
// identity provider).
func MailAddressOf(tx Tx, actor string) (string, bool, error) {
	b, ok, err := tx.BindingOfActor(actor)
	if err != nil {
		return "", false, fmt.Errorf("look up the binding of %s: %w", actor, err)
	}
	if ok && b.Kind == SubjectEmail {
		return b.Subject, true, nil
	}
	p, ok, err := tx.Profile(actor)
	if err != nil {
		return "", false, fmt.Errorf("look up the profile of %s: %w", actor, err)
	}
	if ok && p.Email != "" {
		return p.Email, true, nil
	}
	return "", false, nil
}

// routeStep bounds the events one transaction of RouteEvents routes.
const routeStep = 64

// RouteOptions says which channels RouteEvents routes to besides the
// webhook endpoints, which every daemon can reach.
type RouteOptions struct {
	// Mail routes mails, for a daemon that can send them.
	Mail bool
	// HoldReminder, when positive (and with Mail), routes the event of a
	// new hold or of an offer, besides its mail, to a reminder
	// (ChannelReminder) due this long before the hold's deadline; see
	// reminderDue for the holds that get none.
	HoldReminder time.Duration
}

// reminderEventTypes are the event types whose hold gets a reminder: a
// new hold and an offer from a waiting list, whose mails name the
// deadline by which the person has to act.
var reminderEventTypes = map[string]bool{EventHoldCreated: true, EventWaitlistOffered: true}

// reminderDue returns when the reminder of ev, the event of a new hold or
// an offer, is due: lead before its hold's deadline. There is none (false)
// without a lead, without a deadline in the event (one an earlier version
// wrote), or for a hold shorter than twice the lead: a reminder comes no
// earlier than halfway through its hold, since one sooner would follow
// the mail that named the deadline so closely that it would tell nothing
// new, and one due before the hold was made would be no reminder at all.
// A hold lasts its time to live from the second it was made in (its
// deadline is a whole second), so that is the length compared: a hold of
// two hours gets the reminder of a one-hour lead. The due time depends
// only on the event and the lead, so routing the event again after a
// crash schedules the same reminder.
func reminderDue(ev Event, lead time.Duration) (time.Time, bool) {
	// Half the hold's length is compared with the lead, since twice a
	// lead of more than half the largest Duration would wrap around.
	if lead <= 0 || !reminderEventTypes[ev.Type] || ev.HoldExpiresAt.IsZero() || ev.HoldExpiresAt.Sub(ev.CreatedAt.Truncate(time.Second))/2 < lead {
		return time.Time{}, false
	}
	return ev.HoldExpiresAt.Add(-lead).Truncate(time.Microsecond), true
}

// RouteEvents makes the deliveries of up to limit events that were not
// routed yet: one per webhook endpoint that wants the event's type and
// was added before the event was written, and (with opts.Mail) a mail
// when the person it is about has a verified address and the type has a
// mail, and a reminder when opts.HoldReminder gives the event's hold
// one. Each event's
// deliveries are written, and the event marked routed, in one
// transaction, so an event is routed once: a crash before the commit
// routes it again from the start, and a second daemon skips (or waits
// for) the events another is routing. It returns how many it routed and
// whether more may be waiting.
func (e *Engine) RouteEvents(ctx context.Context, limit int, opts RouteOptions) (routed int, more bool, err error) {
	for routed < limit {
		n, full := 0, false
		step := min(routeStep, limit-routed)
		err := e.store.Update(ctx, func(tx Tx) error {
			n, full = 0, false
			var endpoints []WebhookEndpoint
			if err := tx.ForEachWebhookEndpoint(func(w WebhookEndpoint) error {
				endpoints = append(endpoints, w)
				return nil
			}); err != nil {
				return fmt.Errorf("read webhook endpoints: %w", err)
			}
			var evs []Event
			err := tx.ForEachUnroutedEvent(func(ev Event) error {
				if len(evs) >= step {
					full = true
					return errEnough
				}
				evs = append(evs, ev)
				return nil
			})
			if err != nil && !errors.Is(err, errEnough) {
				return fmt.Errorf("read unrouted events: %w", err)
			}
			for _, ev := range evs {
				if err := routeEvent(tx, ev, endpoints, opts); err != nil {
					return err
				}
			}
			n = len(evs)
			return nil
		})
		if err != nil {
			return routed, false, fmt.Errorf("route events: %w", err)
		}
		routed += n
		if !full {
			return routed, false, nil
		}
	}
	return routed, true, nil
}

// routeEvent writes the deliveries of ev and marks it routed.
func routeEvent(tx Tx, ev Event, endpoints []WebhookEndpoint, opts RouteOptions) error {
	// add writes d, due at due: a reminder's retries are counted from
	// its own time (Since), every other delivery's from its event's.
	add := func(d Delivery, due time.Time) error {
		if _, exists, err := tx.Delivery(d.ID); err != nil || exists {
			return err
		}
		d.EventID, d.EventType, d.State = ev.ID, ev.Type, DeliveryPending
		d.CreatedAt, d.Since, d.NextAttemptAt = ev.CreatedAt, due, due
		if err := tx.PutDelivery(d); err != nil {
			return fmt.Errorf("add delivery %s: %w", d.ID, err)
		}
		return nil
	}
	for _, w := range endpoints {
		if !w.Wants(ev.Type) || ev.CreatedAt.Before(w.CreatedAt) {
			continue
		}
		if err := add(Delivery{ID: DeliveryIDOf(ev.ID, w.ID), Channel: ChannelWebhook, Endpoint: w.ID}, ev.CreatedAt); err != nil {
			return err
		}
	}
	if opts.Mail && mailEventTypes[ev.Type] && ev.Owner != "" {
		addr, ok, err := MailAddressOf(tx, ev.Owner)
		if err != nil {
			return err
		}
		if ok {
			if err := add(Delivery{ID: DeliveryIDOf(ev.ID, ChannelMail), Channel: ChannelMail, Recipient: addr}, ev.CreatedAt); err != nil {
				return err
			}
			if due, ok := reminderDue(ev, opts.HoldReminder); ok {
				if err := add(Delivery{ID: DeliveryIDOf(ev.ID, ChannelReminder), Channel: ChannelReminder, Recipient: addr}, due); err != nil {
					return err
				}
			}
		}
	}
	if err := tx.MarkEventRouted(ev.ID); err != nil {
		return fmt.Errorf("mark event %s routed: %w", ev.ID, err)
	}
	return nil
}

// DeliveryJob is a claimed delivery with what sending it needs, read in
// the transaction that claimed it.
type DeliveryJob struct {
	Delivery Delivery
	Event    Event
	// Endpoint is the webhook endpoint (ChannelWebhook); EndpointFound
	// is false when it was removed.
	Endpoint      WebhookEndpoint
	EndpointFound bool
	// Workshop is the event's workshop, when it still exists
	// (WorkshopFound), for a mail's calendar entry.
	Workshop      Workshop
	WorkshopFound bool
	// Profile is the profile of the person a mail goes to (its language).
	Profile Profile
	// Hold is the hold a reminder (ChannelReminder) reminds of, as it
	// stood when the reminder was claimed: open then.
	Hold Hold
}

// ClaimDueDeliveries claims up to limit pending deliveries that are due,
// oldest due first: each counts an attempt and is due again only after
// lease, so that no other dispatcher (another daemon on the same
// database) sends it meanwhile, and one whose sender was killed is sent
// again once the lease runs out. The sender reports the attempt with
// FinishDelivery. A claimed reminder whose hold is no longer open (it
// was confirmed or released, or its deadline has come) is not returned:
// it is stored as skipped, saying why, since nobody needs reminding.
func (e *Engine) ClaimDueDeliveries(ctx context.Context, limit int, lease time.Duration) ([]DeliveryJob, error) {
	var claimed []Delivery
	var now time.Time
	err := e.store.Update(ctx, func(tx Tx) error {
		claimed = claimed[:0]
		// Microseconds, the precision every store keeps, so that
		// FinishDelivery recognizes its claim by its time.
		now = e.utcNow().Truncate(time.Microsecond)
		var due []Delivery
		err := tx.ForEachDueDelivery(now, func(d Delivery) error {
			if len(due) >= limit {
				return errEnough
			}
			due = append(due, d)
			return nil
		})
		if err != nil && !errors.Is(err, errEnough) {
			return fmt.Errorf("read due deliveries: %w", err)
		}
		for _, d := range due {
			d.Attempts++
			d.LastAttemptAt, d.NextAttemptAt = now, now.Add(lease)
			if err := tx.PutDelivery(d); err != nil {
				return fmt.Errorf("claim delivery %s: %w", d.ID, err)
			}
			claimed = append(claimed, d)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	if len(claimed) == 0 {
		return nil, nil
	}
	// What the jobs need is read after the claim, in a read transaction:
	// inside the claim's, a store with row locks would lock the events'
	// workshops in the order of the deliveries, and two daemons claiming
	// at once could lock them in opposite orders. A claim whose read
	// fails is sent again once its lease runs out.
	//
	// A reminder's hold is read there too, and whether it is still open
	// is judged at the claim's time: a hold settled between then and the
	// sending (a confirmation in the same seconds) may still be
	// reminded of, which the reminder's text allows for.
	jobs := make([]DeliveryJob, 0, len(claimed))
	var unsent []unsentDelivery
	err = e.store.View(ctx, func(tx Tx) error {
		jobs, unsent = jobs[:0], unsent[:0]
		for _, d := range claimed {
			job, err := readJob(tx, d)
			var gone *goneError
			switch {
			case errors.As(err, &gone):
				unsent = append(unsent, unsentDelivery{d, Attempt{State: DeliveryFailed, Error: gone.why}})
			case err != nil:
				return err
			case d.Channel == ChannelReminder && job.Hold.StateAt(now) != HoldHeld:
				unsent = append(unsent, unsentDelivery{d, Attempt{State: DeliverySkipped, Error: reminderNotNeeded(job.Hold, now)}})
			default:
				jobs = append(jobs, job)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the claimed deliveries: %w", err)
	}
	// A delivery whose event (or a reminder whose hold) is gone can never
	// be sent: it fails, and stays in the view (reserved check names it),
	// instead of failing every claim it is part of.
	for _, u := range unsent {
		if err := e.FinishDelivery(ctx, u.d, u.attempt); err != nil {
			return nil, err
		}
	}
	return jobs, nil
}

// unsentDelivery is a claimed delivery that is not sent, and how its
// attempt ends.
type unsentDelivery struct {
	d       Delivery
	attempt Attempt
}

// goneError is readJob's error for a delivery that can never be sent,
// because a record it is about does not exist; why says which.
type goneError struct{ why string }

func (e *goneError) Error() string { return e.why }

// reminderNotNeeded says why the reminder of h, which is not open at now,
// is not sent.
func reminderNotNeeded(h Hold, now time.Time) string {
	if state := h.StateAt(now); state != HoldExpired {
		return fmt.Sprintf("not needed: hold %s was %s at %s, before its reminder was due", h.ID, state, h.SettledAt.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("not needed: hold %s expired at %s, before its reminder went out", h.ID, h.ExpiresAt.UTC().Format(time.RFC3339))
}

// DeliveryWork reports, from a read transaction, what a dispatcher has
// to do: whether events wait to be routed, whether any delivery is
// pending, and when the first pending one is due. A pending delivery
// with no time for its next attempt (which Check reports) comes first,
// with firstDue zero: a claim takes it as due at once, so it must not
// read as "none pending" and hide the due deliveries behind it. An idle
// dispatcher asks it instead of routing and claiming, which are writes.
func (e *Engine) DeliveryWork(ctx context.Context) (unrouted, pending bool, firstDue time.Time, err error) {
	// Every delivery is due before then: a century on, which every
	// store's times can hold.
	horizon := e.utcNow().AddDate(100, 0, 0)
	err = e.store.View(ctx, func(tx Tx) error {
		unrouted, pending, firstDue = false, false, time.Time{}
		err := tx.ForEachUnroutedEvent(func(Event) error {
			unrouted = true
			return errEnough
		})
		if err != nil && !errors.Is(err, errEnough) {
			return fmt.Errorf("read unrouted events: %w", err)
		}
		err = tx.ForEachDueDelivery(horizon, func(d Delivery) error {
			pending, firstDue = true, d.NextAttemptAt
			return errEnough
		})
		if err != nil && !errors.Is(err, errEnough) {
			return fmt.Errorf("read due deliveries: %w", err)
		}
		return nil
	})
	if err != nil {
		return false, false, time.Time{}, fmt.Errorf("look for delivery work: %w", err)
	}
	return unrouted, pending, firstDue, nil
}

// readJob reads what sending d needs.
func readJob(tx Tx, d Delivery) (DeliveryJob, error) {
	job := DeliveryJob{Delivery: d}
	ev, ok, err := tx.Event(d.EventID)
	if err != nil {
		return DeliveryJob{}, fmt.Errorf("look up event %s: %w", d.EventID, err)
	}
	if !ok {
		return DeliveryJob{}, &goneError{"its event " + d.EventID + " does not exist"}
	}
	job.Event = ev
	if d.Channel == ChannelReminder {
		if job.Hold, ok, err = tx.Hold(ev.HoldID); err != nil {
			return DeliveryJob{}, fmt.Errorf("look up hold %s: %w", ev.HoldID, err)
		} else if !ok {
			return DeliveryJob{}, &goneError{"its hold " + ev.HoldID + " does not exist"}
		}
	}
	if d.Channel == ChannelWebhook {
		if job.Endpoint, job.EndpointFound, err = tx.WebhookEndpoint(d.Endpoint); err != nil {
			return DeliveryJob{}, fmt.Errorf("look up webhook endpoint %s: %w", d.Endpoint, err)
		}
	}
	if ev.Workshop != "" {
		if job.Workshop, job.WorkshopFound, err = tx.Workshop(ev.Workshop); err != nil {
			return DeliveryJob{}, fmt.Errorf("look up workshop %s: %w", ev.Workshop, err)
		}
	}
	if d.Channel != ChannelWebhook && ev.Owner != "" {
		if job.Profile, _, err = tx.Profile(ev.Owner); err != nil {
			return DeliveryJob{}, fmt.Errorf("look up the profile of %s: %w", ev.Owner, err)
		}
	}
	return job, nil
}

// Attempt is how one attempt of a claimed delivery went, as its sender
// judged it: delivered, failed for good, or to be tried again at
// NextAttemptAt (which the sender computes from its backoff and the
// receiver's Retry-After, and which it sets to zero when the delivery
// gave up because its time ran out: then State is DeliveryFailed).
type Attempt struct {
	State         DeliveryState
	NextAttemptAt time.Time
	Status        int
	Error         string
}

// FinishDelivery records attempt of the delivery claimed as claimed. It
// changes nothing when the delivery moved on since the claim (an
// operator skipped or requeued it, or another dispatcher claimed it
// after the lease ran out): the later decision stands.
func (e *Engine) FinishDelivery(ctx context.Context, claimed Delivery, attempt Attempt) error {
	err := e.store.Update(ctx, func(tx Tx) error {
		d, ok, err := tx.Delivery(claimed.ID)
		if err != nil {
			return fmt.Errorf("look up delivery %s: %w", claimed.ID, err)
		}
		if !ok || d.State != DeliveryPending || d.Attempts != claimed.Attempts || !d.NextAttemptAt.Equal(claimed.NextAttemptAt) {
			return nil
		}
		now := e.utcNow().Truncate(time.Microsecond)
		d.State, d.LastStatus, d.LastError = attempt.State, attempt.Status, TruncateBytes(attempt.Error, MaxDeliveryErrorLen)
		if attempt.State == DeliveryPending {
			d.NextAttemptAt = attempt.NextAttemptAt
		} else {
			d.NextAttemptAt, d.DoneAt = time.Time{}, now
		}
		return tx.PutDelivery(d)
	})
	if err != nil {
		return fmt.Errorf("finish delivery %s: %w", claimed.ID, err)
	}
	return nil
}

// TruncateBytes returns s cut to at most n bytes, on a character
// boundary.
func TruncateBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// DeliveryFilter selects the deliveries of a view: those in State,
// through Channel and to Endpoint when set, after the id After.
type DeliveryFilter struct {
	State    DeliveryState
	Channel  string
	Endpoint string
	After    string
	Limit    int
}

// DeliveryPage is one page of the delivery view; Next is the After of
// the next page, "" on the last.
type DeliveryPage struct {
	Deliveries []Delivery
	Next       string
}

// MaxDeliveryPage is the largest page of the delivery view.
const MaxDeliveryPage = 500

// Deliveries returns one page of the deliveries in f.State (pending when
// not set), oldest first, if who is an admin. Its cost is the page and
// the deliveries of that state its channel and endpoint filters skip.
func (e *Engine) Deliveries(ctx context.Context, who Principal, f DeliveryFilter) (DeliveryPage, error) {
	if !who.Admin {
		return DeliveryPage{}, Errorf(CodeForbidden, "only an admin may see deliveries")
	}
	if f.State == "" {
		f.State = DeliveryPending
	}
	if !slices.Contains(DeliveryStates, f.State) {
		return DeliveryPage{}, Errorf(CodeRequestContract, "the state of deliveries is one of pending, failed, delivered, skipped, not %q", Truncate(string(f.State), 20))
	}
	if f.After != "" && !IsDeliveryID(f.After) {
		return DeliveryPage{}, Errorf(CodeRequestContract, "the cursor %q is not a delivery id", Truncate(f.After, 80))
	}
	if f.Endpoint != "" && !IsReservationID(f.Endpoint) {
		return DeliveryPage{}, Errorf(CodeRequestContract, "the endpoint %q is not a webhook endpoint id", Truncate(f.Endpoint, 80))
	}
	if f.Limit <= 0 || f.Limit > MaxDeliveryPage {
		f.Limit = 100
	}
	var page DeliveryPage
	err := e.store.View(ctx, func(tx Tx) error {
		page = DeliveryPage{}
		err := tx.ForEachDeliveryIn(f.State, f.After, func(d Delivery) error {
			if (f.Channel != "" && d.Channel != f.Channel) || (f.Endpoint != "" && d.Endpoint != f.Endpoint) {
				return nil
			}
			if len(page.Deliveries) == f.Limit {
				page.Next = page.Deliveries[len(page.Deliveries)-1].ID
				return errEnough
			}
			page.Deliveries = append(page.Deliveries, d)
			return nil
		})
		if errors.Is(err, errEnough) {
			return nil
		}
		return err
	})
	if err != nil {
		return DeliveryPage{}, fmt.Errorf("list deliveries: %w", err)
	}
	return page, nil
}

// DeliveryStats is what the metrics say of the deliveries.
type DeliveryStats struct {
	// Pending counts the pending deliveries but the scheduled ones.
	Pending, Failed int
	// Scheduled counts the pending deliveries that wait for a time of
	// their own and were never attempted: reminders before their time.
	Scheduled int
	// OldestPending is the earliest Since of a pending delivery that is
	// not scheduled: when the one that has waited longest was made, sent
	// again by an operator or, a reminder, came due (zero when none is
	// pending).
	OldestPending time.Time
}

// CountDeliveries returns the delivery statistics; it reads the pending
// and failed deliveries.
func (e *Engine) CountDeliveries(ctx context.Context) (DeliveryStats, error) {
	var s DeliveryStats
	now := e.utcNow()
	err := e.store.View(ctx, func(tx Tx) error {
		s = DeliveryStats{}
		if err := tx.ForEachDeliveryIn(DeliveryPending, "", func(d Delivery) error {
			if d.Attempts == 0 && d.NextAttemptAt.After(now) {
				s.Scheduled++
				return nil
			}
			if s.Pending == 0 || d.Since.Before(s.OldestPending) {
				s.OldestPending = d.Since
			}
			s.Pending++
			return nil
		}); err != nil {
			return err
		}
		return tx.ForEachDeliveryIn(DeliveryFailed, "", func(Delivery) error { s.Failed++; return nil })
	})
	if err != nil {
		return DeliveryStats{}, fmt.Errorf("count deliveries: %w", err)
	}
	return s, nil
}

// RetryDelivery is an operator's idempotent request, under key, to send
// delivery id again: the same event under the same id (webhook-id,
// Message-ID), now, with its retries counted afresh from now. Any
// delivery may be sent again, a delivered one too (a receiver that lost
// it). It answers "requeued"; a repeat of the key replays that answer and
// sends nothing more. Only an admin may; an unknown id is
// CodeUnknownDelivery and stores nothing.
func (e *Engine) RetryDelivery(ctx context.Context, who Principal, key OperationKey, id string) (Outcome, error) {
	return e.correctDelivery(ctx, who, key, id, OperationRetryDelivery)
}

// SkipDelivery is an operator's idempotent request, under key, to give
// delivery id up on purpose: a pending or failed delivery is stored as
// skipped ("skipped") and never sent again unless RetryDelivery asks; a
// delivered one stays delivered ("already_delivered"), a skipped one
// skipped ("already_skipped"). Only an admin may; an unknown id is
// CodeUnknownDelivery and stores nothing.
func (e *Engine) SkipDelivery(ctx context.Context, who Principal, key OperationKey, id string) (Outcome, error) {
	return e.correctDelivery(ctx, who, key, id, OperationSkipDelivery)
}

func (e *Engine) correctDelivery(ctx context.Context, who Principal, key OperationKey, id string, kind OperationKind) (Outcome, error) {
	if err := checkActorKey(who.Actor, key); err != nil {
		return Outcome{}, err
	}
	if !who.Admin {
		return Outcome{}, Errorf(CodeForbidden, "only an admin may send a delivery again or skip it")
	}
	if !IsDeliveryID(id) {
		return Outcome{}, Errorf(CodeUnknownDelivery, "no delivery has id %q", Truncate(id, 80))
	}
	return operate(e, ctx, who, key, payload{kind: kind, deliveryID: id}, correction{}, string(kind))
}

// correction is the decision's part of an operator's correction of a
// delivery. Its target is the delivery and its event.
type correction struct{}

type correctedDelivery struct {
	d  Delivery
	ev Event
}

func (correction) target(tx Tx, who Principal, p payload) (correctedDelivery, *Error, error) {
	d, ok, err := tx.Delivery(p.deliveryID)
	if err != nil {
		return correctedDelivery{}, nil, fmt.Errorf("look up delivery %s: %w", p.deliveryID, err)
	}
	if !ok {
		return correctedDelivery{}, Errorf(CodeUnknownDelivery, "no delivery has id %q", Truncate(p.deliveryID, 80)), nil
	}
	ev, ok, err := tx.Event(d.EventID)
	if err != nil {
		return correctedDelivery{}, nil, fmt.Errorf("look up event %s: %w", d.EventID, err)
	}
	if !ok {
		return correctedDelivery{}, nil, fmt.Errorf("delivery %s is of event %s, which does not exist", d.ID, d.EventID)
	}
	return correctedDelivery{d, ev}, nil, nil
}

func (correction) effect(tx Tx, p payload, t correctedDelivery, dr *draft) (string, error) {
	d, now := t.d, dr.now.Truncate(time.Microsecond)
	dr.Request, dr.DeliveryID = Request{Workshop: t.ev.Workshop, Quantity: t.ev.Quantity}, d.ID
	var status string
	switch {
	case p.kind == OperationRetryDelivery:
		d.State, d.Since, d.NextAttemptAt, d.DoneAt, d.Attempts = DeliveryPending, now, now, time.Time{}, 0
		status = StatusRequeued
	case d.State == DeliveryDelivered:
		return StatusAlreadyDelivered, nil
	case d.State == DeliverySkipped:
		return StatusAlreadySkipped, nil
	default:
		d.State, d.NextAttemptAt, d.DoneAt = DeliverySkipped, time.Time{}, now
		status = StatusSkipped
	}
	if err := tx.PutDelivery(d); err != nil {
		return "", fmt.Errorf("update delivery %s: %w", d.ID, err)
	}
	return status, nil
}
