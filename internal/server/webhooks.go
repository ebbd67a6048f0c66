package server

import (
	"net/http"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// addWebhook is POST /api/v1/admin/webhooks: a new endpoint for the URL
// and event types of the body, answered 201 with its signing secret, which
// no later answer shows. A URL that has an endpoint already is 409
// webhook_exists, so a repeated request never makes a second endpoint.
func (s *Server) addWebhook(w http.ResponseWriter, r *http.Request, who engine.Principal) error {
	req, err := decodeBody(w, r, api.DecodeWebhookRequest)
	if err != nil {
		return err
	}
	endpoint, err := s.eng.AddWebhook(r.Context(), who, req.URL, req.EventTypes)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	return writeJSON(w, http.StatusCreated, endpoint)
}

// listWebhooks is GET /api/v1/admin/webhooks: every endpoint, oldest
// first, never a secret.
func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request, who engine.Principal) error {
	list, err := s.eng.Webhooks(r.Context(), who)
	if err != nil {
		return err
	}
	if list == nil {
		list = []engine.WebhookEndpoint{}
	}
	return writeJSON(w, http.StatusOK, api.WebhookList{Webhooks: list})
}

// removeWebhook is DELETE /api/v1/admin/webhooks/{id}: 204 once the
// endpoint is gone, 404 unknown_webhook for an id that names none (also
// one removed already). Its deliveries stay in the delivery view.
func (s *Server) removeWebhook(w http.ResponseWriter, r *http.Request, who engine.Principal) error {
	if err := s.eng.RemoveWebhook(r.Context(), who, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
