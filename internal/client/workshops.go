package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// ifMatchHeader is the If-Match precondition of a version, or no header
// for nil.
func ifMatchHeader(ifMatch *uint64) http.Header {
	if ifMatch == nil {
		return nil
	}
	return http.Header{"If-Match": {`"` + strconv.FormatUint(*ifMatch, 10) + `"`}}
}

// PatchWorkshop changes the members of the existing workshop id that p
// names, and clears the optional members p points at their zero values
// (admin only), as a JSON merge patch; a workshop that does not exist is
// an *engine.Error with CodeUnknownWorkshop. A non-nil ifMatch requires
// that version.
func (c *Client) PatchWorkshop(ctx context.Context, id string, p engine.WorkshopPatch, ifMatch *uint64) (engine.Workshop, error) {
	body, err := api.EncodeWorkshopPatch(p)
	if err != nil {
		return engine.Workshop{}, fmt.Errorf("patch workshop %s: %w", id, err)
	}
	h := ifMatchHeader(ifMatch)
	if h == nil {
		h = http.Header{}
	}
	h.Set("Content-Type", api.MediaMergePatch)
	var w engine.Workshop
	_, err = c.call(ctx, http.MethodPatch, api.WorkshopPath(id), h, json.RawMessage(body), &w, http.StatusOK)
	return w, err
}

// DeleteWorkshop deletes workshop id (admin only); one with active
// reservations or open holds is an *engine.Error with CodeWorkshopInUse.
// A non-nil ifMatch requires that version.
func (c *Client) DeleteWorkshop(ctx context.Context, id string, ifMatch *uint64) error {
	_, err := c.call(ctx, http.MethodDelete, api.WorkshopPath(id), ifMatchHeader(ifMatch), nil, nil, http.StatusNoContent)
	return err
}

// attendeesPath is the path of workshop's attendee list with the query of
// f.
func attendeesPath(workshop string, f engine.AttendeeFilter) string {
	v := url.Values{}
	if f.Status != "" {
		v.Set("status", f.Status)
	}
	if f.Limit != 0 {
		v.Set("limit", strconv.Itoa(f.Limit))
	}
	if f.Cursor != "" {
		v.Set("cursor", f.Cursor)
	}
	path := api.AttendeesPath(workshop)
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	return path
}

// Attendees returns one page of workshop's attendee list (admin only), by
// actor then reservation, with the cursor of the next page.
func (c *Client) Attendees(ctx context.Context, workshop string, f engine.AttendeeFilter) (api.AttendeePage, error) {
	var page api.AttendeePage
	_, err := c.call(ctx, http.MethodGet, attendeesPath(workshop, f), nil, nil, &page, http.StatusOK)
	if page.Attendees == nil {
		page.Attendees = []engine.Attendee{}
	}
	return page, err
}

// AttendeesCSV streams workshop's whole attendee list with status ("" for
// the active reservations) as the daemon's CSV into w (admin only) and
// returns how many bytes it wrote. A refusal is an *engine.Error before
// any byte is written; an answer cut short (the daemon breaks the
// connection off when it cannot read a later page) is an error after the
// bytes that came, so an incomplete list never passes as complete.
func (c *Client) AttendeesCSV(ctx context.Context, workshop, status string, w io.Writer) (int64, error) {
	path := attendeesPath(workshop, engine.AttendeeFilter{Status: status})
	resp, err := c.request(ctx, http.MethodGet, path, http.Header{"Accept": {api.MediaCSV}}, nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
		return 0, answerError(resp, data)
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != api.MediaCSV {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
		return 0, &UnexpectedResponseError{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Body: data}
	}
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("attendee list of %s from %s: cut short after %d bytes: %w", workshop, c.where, n, err)
	}
	return n, nil
}
