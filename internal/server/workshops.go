package server

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// listWorkshops is GET /api/v1/workshops: the listed workshops, and the
// hidden ones too with include_hidden=true.
func (s *Server) listWorkshops(w http.ResponseWriter, r *http.Request, _ engine.Principal) error {
	q, err := queryOf(r, "include_hidden")
	if err != nil {
		return err
	}
	var withHidden bool
	switch v := q.Get("include_hidden"); v {
	case "", "false":
	case "true":
		withHidden = true
	default:
		return engine.Errorf(engine.CodeRequestContract, "query parameter \"include_hidden\" must be true or false, not %q", engine.Truncate(v, 40))
	}
	ws, err := s.eng.Workshops(r.Context(), withHidden)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.WorkshopList{Workshops: ws})
}

// getWorkshop is GET /api/v1/workshops/{id}.
func (s *Server) getWorkshop(w http.ResponseWriter, r *http.Request, _ engine.Principal) error {
	ws, err := s.eng.Workshop(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	w.Header().Set("ETag", etag(ws.Version))
	return writeJSON(w, http.StatusOK, ws)
}

// putWorkshop is PUT /api/v1/workshops/{id}: 201 created, 200 updated, with
// an optional If-Match precondition on the version.
func (s *Server) putWorkshop(w http.ResponseWriter, r *http.Request, _ engine.Principal) error {
	ifMatch, err := parseIfMatch(r.Header.Values("If-Match"))
	if err != nil {
		return err
	}
	spec, err := decodeBody(w, r, api.DecodeWorkshopSpec)
	if err != nil {
		return err
	}
	ws, created, err := s.eng.PutWorkshop(r.Context(), r.PathValue("id"), spec, ifMatch)
	if err != nil {
		return err
	}
	w.Header().Set("ETag", etag(ws.Version))
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		w.Header().Set("Location", api.WorkshopPath(ws.ID))
	}
	return writeJSON(w, status, ws)
}

func etag(version uint64) string { return `"` + strconv.FormatUint(version, 10) + `"` }

// parseIfMatch reads an optional If-Match: "<version>" precondition.
func parseIfMatch(values []string) (*uint64, error) {
	if len(values) == 0 {
		return nil, nil
	}
	raw := strings.TrimSpace(values[0])
	v, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(raw, `"`), `"`), 10, 64)
	if len(values) > 1 || len(raw) < 3 || raw[0] != '"' || raw[len(raw)-1] != '"' || err != nil {
		return nil, engine.Errorf(engine.CodeVersionMismatch, "If-Match must be one quoted workshop version such as \"3\", not %q", engine.Truncate(raw, 40))
	}
	return &v, nil
}
