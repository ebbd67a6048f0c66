package server

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// queryOf returns the query of r after checking that it names only
// parameters of allowed, each at most once.
func queryOf(r *http.Request, allowed ...string) (url.Values, error) {
	q := r.URL.Query()
	for name, vs := range q {
		known := false
		for _, a := range allowed {
			known = known || name == a
		}
		if !known {
			return nil, engine.Errorf(engine.CodeRequestContract, "unknown query parameter %q (use %s)", engine.Truncate(name, 40), strings.Join(allowed, ", "))
		}
		if len(vs) > 1 {
			return nil, engine.Errorf(engine.CodeRequestContract, "query parameter %q is given %d times", name, len(vs))
		}
	}
	return q, nil
}

// queryLimit reads the query parameter limit, 0 when it is absent.
func queryLimit(q url.Values, max int) (int, error) {
	v := q.Get("limit")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		return 0, engine.Errorf(engine.CodeRequestContract, "query parameter \"limit\" must be from 1 to %d", max)
	}
	return n, nil
}

// pageQuery reads the query of a page of one workshop's list (its
// attendees, its waiting list): status, limit and cursor, nothing else.
func pageQuery(r *http.Request) (status string, limit int, cursor string, err error) {
	q, err := queryOf(r, "status", "limit", "cursor")
	if err != nil {
		return "", 0, "", err
	}
	if limit, err = queryLimit(q, engine.MaxListLimit); err != nil {
		return "", 0, "", err
	}
	return q.Get("status"), limit, q.Get("cursor"), nil
}

// listFilter reads the query of a list of reservations or holds.
func listFilter(r *http.Request) (engine.ListFilter, error) {
	q, err := queryOf(r, "status", "workshop", "limit", "cursor", "actor")
	if err != nil {
		return engine.ListFilter{}, err
	}
	limit, err := queryLimit(q, engine.MaxListLimit)
	if err != nil {
		return engine.ListFilter{}, err
	}
	return engine.ListFilter{Actor: q.Get("actor"), Status: q.Get("status"), Workshop: q.Get("workshop"), Limit: limit, Cursor: q.Get("cursor")}, nil
}

// listReservations is GET /api/v1/reservations: one page of the caller's
// own reservations (an admin may name another actor), newest first.
func (s *Server) listReservations(w http.ResponseWriter, r *http.Request, who engine.Principal) error {
	f, err := listFilter(r)
	if err != nil {
		return err
	}
	rs, next, err := s.eng.Reservations(r.Context(), who, f)
	if err != nil {
		return err
	}
	page := api.ReservationPage{Reservations: make([]api.ReservationItem, len(rs)), NextCursor: next}
	for i, res := range rs {
		page.Reservations[i] = api.ReservationItemOf(res)
	}
	return writeJSON(w, http.StatusOK, page)
}

// listHolds is GET /api/v1/holds: one page of the caller's own holds (an
// admin may name another actor), newest first, each with its state now.
func (s *Server) listHolds(w http.ResponseWriter, r *http.Request, who engine.Principal) error {
	f, err := listFilter(r)
	if err != nil {
		return err
	}
	hs, next, err := s.eng.Holds(r.Context(), who, f)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.HoldPage{Holds: hs, NextCursor: next})
}
