package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// listPath is path with the query of f.
func listPath(path string, f engine.ListFilter) string {
	v := url.Values{}
	for name, value := range map[string]string{"actor": f.Actor, "status": f.Status, "workshop": f.Workshop, "cursor": f.Cursor} {
		if value != "" {
			v.Set(name, value)
		}
	}
	if f.Limit != 0 {
		v.Set("limit", strconv.Itoa(f.Limit))
	}
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	return path
}

// Reservations returns one page of the caller's reservations (or, for an
// admin, of f.Actor's), newest first.
func (c *Client) Reservations(ctx context.Context, f engine.ListFilter) (api.ReservationPage, error) {
	var page api.ReservationPage
	_, err := c.call(ctx, http.MethodGet, listPath(api.PathReservations, f), nil, nil, &page, http.StatusOK)
	if page.Reservations == nil {
		page.Reservations = []api.ReservationItem{}
	}
	return page, err
}

// Holds returns one page of the caller's holds (or, for an admin, of
// f.Actor's), newest first, each with its state now.
func (c *Client) Holds(ctx context.Context, f engine.ListFilter) (api.HoldPage, error) {
	var page api.HoldPage
	_, err := c.call(ctx, http.MethodGet, listPath(api.PathHolds, f), nil, nil, &page, http.StatusOK)
	if page.Holds == nil {
		page.Holds = []engine.Hold{}
	}
	return page, err
}

// Waitlist returns one page of the caller's waiting list entries (or, for
// an admin, of f.Actor's), newest first, each with its state now and,
// while it waits, its position.
func (c *Client) Waitlist(ctx context.Context, f engine.ListFilter) (api.WaitlistPage, error) {
	return c.waitlistPage(ctx, listPath(api.PathWaitlist, f))
}

// WorkshopWaitlist returns one page of workshop's waiting list (admin
// only), in the order its entries joined; f's Status, Limit and Cursor
// select it.
func (c *Client) WorkshopWaitlist(ctx context.Context, workshop string, f engine.ListFilter) (api.WaitlistPage, error) {
	f.Actor, f.Workshop = "", ""
	return c.waitlistPage(ctx, listPath(api.WorkshopWaitlistPath(workshop), f))
}

func (c *Client) waitlistPage(ctx context.Context, path string) (api.WaitlistPage, error) {
	var page api.WaitlistPage
	_, err := c.call(ctx, http.MethodGet, path, nil, nil, &page, http.StatusOK)
	if page.Entries == nil {
		page.Entries = []engine.WaitEntry{}
	}
	return page, err
}
