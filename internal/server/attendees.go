package server

import (
	"encoding/csv"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// listAttendees is GET /api/v1/workshops/{id}/attendees: one page of the
// workshop's attendee list as JSON or, for a client that accepts text/csv
// and not JSON, the whole list as CSV (RFC 4180, UTF-8, a header row),
// streamed page by page, each page read in its own snapshot, so that a
// slow reader holds no transaction open.
func (s *Server) listAttendees(w http.ResponseWriter, r *http.Request, who engine.Principal) error {
	status, limit, cursor, err := pageQuery(r)
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	f := engine.AttendeeFilter{Status: status, Limit: limit, Cursor: cursor}
	if !wantsCSV(r) {
		as, next, err := s.eng.Attendees(r.Context(), who, id, f)
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, api.AttendeePage{Attendees: as, NextCursor: next})
	}
	if f.Limit != 0 || f.Cursor != "" {
		return engine.Errorf(engine.CodeRequestContract, "the CSV is the whole list: leave out \"limit\" and \"cursor\"")
	}
	f.Limit = engine.MaxListLimit
	// The first page is read before the answer starts, so that a refusal
	// (an unknown workshop, a bad status) is still a problem detail.
	as, next, err := s.eng.Attendees(r.Context(), who, id, f)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", api.MediaCSV+"; charset=utf-8; header=present")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": id + "-attendees.csv"}))
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	out := csv.NewWriter(w)
	out.UseCRLF = true
	out.Write(api.AttendeeCSVHeader)
	for {
		for _, a := range as {
			out.Write(attendeeRow(a))
		}
		out.Flush()
		if next == "" || out.Error() != nil {
			return nil
		}
		f.Cursor = next
		if as, next, err = s.eng.Attendees(r.Context(), who, id, f); err != nil {
			// The status line is sent: a truncated CSV without its last
			// row is all a client can be told, so the connection is
			// broken off for it to see an incomplete answer.
			s.log.Error("attendee CSV cut short", "workshop", id, "err", err)
			panic(http.ErrAbortHandler)
		}
	}
}

// wantsCSV reports whether the request's Accept header names text/csv and
// not application/json.
func wantsCSV(r *http.Request) bool {
	csvOK, jsonOK := false, false
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			mt, _, err := mime.ParseMediaType(part)
			if err != nil {
				continue
			}
			switch mt {
			case api.MediaCSV:
				csvOK = true
			case api.MediaJSON:
				jsonOK = true
			}
		}
	}
	return csvOK && !jsonOK
}

// attendeeRow is a as one CSV row in the columns of api.AttendeeCSVHeader.
func attendeeRow(a engine.Attendee) []string {
	cancelled := ""
	if !a.CancelledAt.IsZero() {
		cancelled = a.CancelledAt.UTC().Format(time.RFC3339Nano)
	}
	return []string{a.ReservationID, a.Actor, csvText(a.DisplayName), csvText(a.Email), strconv.Itoa(a.Quantity), a.Status,
		a.CreatedAt.UTC().Format(time.RFC3339Nano), cancelled}
}

// csvText keeps a text a spreadsheet would read as a formula (one that
// starts with =, +, - or @) as text, with a leading apostrophe.
func csvText(s string) string {
	if s != "" && (s[0] == '=' || s[0] == '+' || s[0] == '-' || s[0] == '@') {
		return "'" + s
	}
	return s
}
