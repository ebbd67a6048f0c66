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
	body, err := readJSONBodyUpTo(w, r, api.MaxWorkshopBytes)
	if err != nil {
		return err
	}
	spec, err := api.DecodeWorkshopSpec(body)
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

// patchWorkshop is PATCH /api/v1/workshops/{id}: a JSON merge patch
// (application/merge-patch+json, or application/json) of an existing
// workshop, with an optional If-Match precondition on the version.
func (s *Server) patchWorkshop(w http.ResponseWriter, r *http.Request, _ engine.Principal) error {
	ifMatch, err := parseIfMatch(r.Header.Values("If-Match"))
	if err != nil {
		return err
	}
	if ct := r.Header.Get("Content-Type"); !isJSON(ct, api.MediaMergePatch, api.MediaJSON) {
		return engine.Errorf(api.CodeUnsupportedMediaType, "Content-Type must be application/merge-patch+json, not %q", engine.Truncate(ct, 60))
	}
	body, err := readBodyUpTo(w, r, api.MaxWorkshopBytes)
	if err != nil {
		return err
	}
	p, err := api.DecodeWorkshopPatch(body)
	if err != nil {
		return err
	}
	ws, err := s.eng.PatchWorkshop(r.Context(), r.PathValue("id"), p, ifMatch)
	if err != nil {
		return err
	}
	w.Header().Set("ETag", etag(ws.Version))
	return writeJSON(w, http.StatusOK, ws)
}

// deleteWorkshop is DELETE /api/v1/workshops/{id}: 204 once the workshop
// is gone, with an optional If-Match precondition on the version.
func (s *Server) deleteWorkshop(w http.ResponseWriter, r *http.Request, _ engine.Principal) error {
	ifMatch, err := parseIfMatch(r.Header.Values("If-Match"))
	if err != nil {
		return err
	}
	if err := s.eng.DeleteWorkshop(r.Context(), r.PathValue("id"), ifMatch); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
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
