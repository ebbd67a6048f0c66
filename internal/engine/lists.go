package engine

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// The limits of one page of a person's reservations or holds.
const (
	DefaultListLimit = 50
	MaxListLimit     = 1000
)

// The statuses a list of reservations filters by: active (not cancelled),
// cancelled, or all.
const (
	ListActive    = "active"
	ListCancelled = "cancelled"
	ListAll       = "all"
)

// ReservationStatuses are the values of ListFilter.Status for
// reservations; HoldStatuses those for holds (a hold's state now, or all).
var (
	ReservationStatuses = []string{ListActive, ListCancelled, ListAll}
	HoldStatuses        = []string{string(HoldHeld), string(HoldConfirmed), string(HoldReleased), string(HoldExpired), ListAll}
)

// ListFilter selects one page of a person's reservations or holds: whose
// (Actor, the caller's own when empty; another actor's only for an
// admin), which (Status, Workshop), how many (Limit) and after which
// earlier page (Cursor, as the previous page returned it).
type ListFilter struct {
	Actor    string
	Status   string
	Workshop string
	Limit    int
	Cursor   string
}

// check validates f for who, with statuses the values Status may take and
// def its default, fills in the defaults and returns the id the page
// starts after ("" for the first page).
func (f *ListFilter) check(who Principal, statuses []string, def string) (after string, err error) {
	switch {
	case f.Actor == "":
		f.Actor = who.Actor
	case f.Actor != who.Actor && !who.Admin:
		return "", Errorf(CodeForbidden, "only an admin may list the reservations and holds of another actor")
	default:
		if err := ValidateActor(f.Actor); err != nil {
			return "", Errorf(CodeRequestContract, "query parameter \"actor\" %s", err)
		}
	}
	if f.Status == "" {
		f.Status = def
	}
	if !slices.Contains(statuses, f.Status) {
		return "", Errorf(CodeRequestContract, "query parameter \"status\" must be one of %s", strings.Join(statuses, ", "))
	}
	if f.Workshop != "" {
		if err := ValidateWorkshopID(f.Workshop); err != nil {
			return "", Errorf(CodeRequestContract, "query parameter \"workshop\" %s", err)
		}
	}
	switch {
	case f.Limit == 0:
		f.Limit = DefaultListLimit
	case f.Limit < 1 || f.Limit > MaxListLimit:
		return "", Errorf(CodeRequestContract, "query parameter \"limit\" must be from 1 to %d", MaxListLimit)
	}
	if f.Cursor == "" {
		return "", nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(f.Cursor)
	if err != nil || !IsReservationID(string(raw)) {
		return "", Errorf(CodeRequestContract, "query parameter \"cursor\" is not a cursor this daemon returned")
	}
	return string(raw), nil
}

// listCursor is the cursor of the page that follows the record id.
func listCursor(id string) string { return base64.RawURLEncoding.EncodeToString([]byte(id)) }

// errPageFull stops a scan once a page and one more record are found.
var errPageFull = errors.New("page full")

// page collects the records a scan visits that keep accepts, up to limit
// and one more, which says that there is a next page; cursor returns the
// cursor of the page after a record.
func page[R any](limit int, keep func(R) bool, cursor func(R) string, scan func(fn func(R) error) error) ([]R, string, error) {
	out := []R{}
	err := scan(func(r R) error {
		if !keep(r) {
			return nil
		}
		if len(out) == limit {
			return errPageFull
		}
		out = append(out, r)
		return nil
	})
	if err != nil && !errors.Is(err, errPageFull) {
		return nil, "", err
	}
	next := ""
	if err != nil {
		next = cursor(out[len(out)-1])
	}
	return out, next, nil
}

// Reservations returns one page of the reservations of f.Actor (the
// caller's own unless an admin names another), newest first, that match f,
// from one consistent snapshot, and the cursor of the next page ("" when
// this is the last). Stores find an actor's reservations through an index
// by actor, so a page costs what it visits: its records, and those of the
// actor that the status or workshop filter passes over.
func (e *Engine) Reservations(ctx context.Context, who Principal, f ListFilter) ([]Reservation, string, error) {
	after, err := f.check(who, ReservationStatuses, ListActive)
	if err != nil {
		return nil, "", err
	}
	keep := func(r Reservation) bool {
		return (f.Workshop == "" || r.Workshop == f.Workshop) &&
			(f.Status == ListAll || (f.Status == ListCancelled) == r.Cancelled())
	}
	var rs []Reservation
	var next string
	err = e.store.View(ctx, func(tx Tx) error {
		var err error
		rs, next, err = page(f.Limit, keep, func(r Reservation) string { return listCursor(r.ID) }, func(fn func(Reservation) error) error {
			return tx.ForEachReservationOf(f.Actor, after, fn)
		})
		return err
	})
	if err != nil {
		return nil, "", fmt.Errorf("list reservations of %s: %w", f.Actor, err)
	}
	return rs, next, nil
}

// Holds returns one page of the holds of f.Actor as Reservations does,
// each with its state now; f.Status is a state (held: open and before its
// deadline) or all, by default held.
func (e *Engine) Holds(ctx context.Context, who Principal, f ListFilter) ([]Hold, string, error) {
	after, err := f.check(who, HoldStatuses, string(HoldHeld))
	if err != nil {
		return nil, "", err
	}
	now := e.utcNow()
	keep := func(h Hold) bool {
		return (f.Workshop == "" || h.Workshop == f.Workshop) &&
			(f.Status == ListAll || string(h.StateAt(now)) == f.Status)
	}
	var hs []Hold
	var next string
	err = e.store.View(ctx, func(tx Tx) error {
		var err error
		hs, next, err = page(f.Limit, keep, func(h Hold) string { return listCursor(h.ID) }, func(fn func(Hold) error) error {
			return tx.ForEachHoldOf(f.Actor, after, fn)
		})
		return err
	})
	if err != nil {
		return nil, "", fmt.Errorf("list holds of %s: %w", f.Actor, err)
	}
	for i := range hs {
		hs[i].State = hs[i].StateAt(now)
	}
	return hs, next, nil
}
