package engine

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Attendee is one reservation of a workshop as its organizer sees it.
// DisplayName and Email are the person's, where the daemon knows them.
type Attendee struct {
	ReservationID string    `json:"reservation_id"`
	Actor         string    `json:"actor"`
	DisplayName   string    `json:"display_name,omitempty"`
	Email         string    `json:"email,omitempty"`
	Quantity      int       `json:"quantity"`
	Status        string    `json:"status"`
	CreatedAt     time.Time `json:"created_at"`
	CancelledAt   time.Time `json:"cancelled_at,omitzero"`
}

// The statuses of an attendee: the reservation's.
const (
	AttendeeActive    = "active"
	AttendeeCancelled = "cancelled"
)

// AttendeeFilter selects one page of a workshop's attendee list: which
// reservations (Status: active, cancelled or all; active by default), how
// many (Limit) and after which earlier page (Cursor, as the previous page
// returned it).
type AttendeeFilter struct {
	Status string
	Limit  int
	Cursor string
}

// check validates f, fills in the defaults and returns the position the
// page starts after (the zero position for the first page).
func (f *AttendeeFilter) check() (PersonPosition, error) {
	if f.Status == "" {
		f.Status = ListActive
	}
	if !slices.Contains(ReservationStatuses, f.Status) {
		return PersonPosition{}, Errorf(CodeRequestContract, "query parameter \"status\" must be one of %s", strings.Join(ReservationStatuses, ", "))
	}
	switch {
	case f.Limit == 0:
		f.Limit = DefaultListLimit
	case f.Limit < 1 || f.Limit > MaxListLimit:
		return PersonPosition{}, Errorf(CodeRequestContract, "query parameter \"limit\" must be from 1 to %d", MaxListLimit)
	}
	if f.Cursor == "" {
		return PersonPosition{}, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(f.Cursor)
	actor, id, ok := strings.Cut(string(raw), "/")
	if err != nil || !ok || ValidateActor(actor) != nil || !IsReservationID(id) {
		return PersonPosition{}, Errorf(CodeRequestContract, "query parameter \"cursor\" is not a cursor this daemon returned")
	}
	return PersonPosition{Actor: actor, ID: id}, nil
}

// attendeeCursor is the cursor of the page that follows attendee a.
func attendeeCursor(a Attendee) string {
	return base64.RawURLEncoding.EncodeToString([]byte(a.Actor + "/" + a.ReservationID))
}

// Attendees returns one page of the attendee list of workshop (admins
// only) in order of actor, then reservation id (which starts with the
// time it was made), from one consistent snapshot, and the cursor of the
// next page ("" when this is the last). Stores find a workshop's
// reservations through an index by workshop and actor, so a page costs
// what it visits: its reservations, and those that the status filter
// passes over.
func (e *Engine) Attendees(ctx context.Context, who Principal, workshop string, f AttendeeFilter) ([]Attendee, string, error) {
	if !who.Admin {
		return nil, "", Errorf(CodeForbidden, "only an admin may read the attendee list of a workshop")
	}
	if err := ValidateWorkshopID(workshop); err != nil {
		return nil, "", Errorf(CodeUnknownWorkshop, "workshop %q does not exist", truncate(workshop, 50))
	}
	after, err := f.check()
	if err != nil {
		return nil, "", err
	}
	keep := func(a Attendee) bool { return f.Status == ListAll || a.Status == f.Status }
	var as []Attendee
	var next string
	var known bool
	err = e.store.View(ctx, func(tx Tx) error {
		var err error
		if _, known, err = tx.Workshop(workshop); err != nil || !known {
			return err
		}
		as, next, err = page(f.Limit, keep, attendeeCursor, func(fn func(Attendee) error) error {
			return tx.ForEachReservationIn(workshop, after, func(r Reservation) error { return fn(attendeeOf(r)) })
		})
		return err
	})
	if err != nil {
		return nil, "", fmt.Errorf("list the attendees of %s: %w", workshop, err)
	}
	if !known {
		return nil, "", Errorf(CodeUnknownWorkshop, "workshop %q does not exist", workshop)
	}
	return as, next, nil
}

// attendeeOf returns reservation r as an attendee.
func attendeeOf(r Reservation) Attendee {
	a := Attendee{ReservationID: r.ID, Actor: r.Actor, Quantity: r.Quantity, Status: AttendeeActive, CreatedAt: r.CreatedAt}
	if r.Cancelled() {
		a.Status, a.CancelledAt = AttendeeCancelled, r.CancelledAt
	}
	return a
}
