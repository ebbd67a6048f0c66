package server

import (
	"context"
	"net/http"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// leaveWaitlist is POST /api/v1/waitlist/{id}/leave, the idempotent
// leaving of one of the caller's waiting list entries, which declines the
// places offered to it, if any. It is checked like a confirmation of a
// hold (key, media type, size, body), and its body is exactly the empty
// object; another actor's entry does not exist.
func (s *Server) leaveWaitlist(w http.ResponseWriter, r *http.Request, who engine.Principal) error {
	return serveOperation(s, w, r, decodeEmptyObject, func(ctx context.Context, key engine.OperationKey, _ struct{}) (engine.Outcome, error) {
		return s.eng.LeaveWaitlist(ctx, who, key, r.PathValue("id"))
	})
}

// listWaitlist is GET /api/v1/waitlist: one page of the caller's own
// waiting list entries (an admin may name another actor), newest first,
// each with its state now and, while it waits, its position.
func (s *Server) listWaitlist(w http.ResponseWriter, r *http.Request, who engine.Principal) error {
	f, err := listFilter(r)
	if err != nil {
		return err
	}
	es, next, err := s.eng.Waitlist(r.Context(), who, f)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.WaitlistPage{Entries: orEmpty(es), NextCursor: next})
}

// workshopWaitlist is GET /api/v1/workshops/{id}/waitlist, the
// organizers' view of a workshop's waiting list: one page of its entries
// in every state (or those of status), in the order they joined.
func (s *Server) workshopWaitlist(w http.ResponseWriter, r *http.Request, who engine.Principal) error {
	status, limit, cursor, err := pageQuery(r)
	if err != nil {
		return err
	}
	f := engine.ListFilter{Status: status, Limit: limit, Cursor: cursor}
	es, next, err := s.eng.WorkshopWaitlist(r.Context(), who, r.PathValue("id"), f)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.WaitlistPage{Entries: orEmpty(es), NextCursor: next})
}

// orEmpty is es, or an empty list for nil, so that a page without
// entries is [] rather than null.
func orEmpty(es []engine.WaitEntry) []engine.WaitEntry {
	if es == nil {
		return []engine.WaitEntry{}
	}
	return es
}
