package server

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// maxDeliveryCursor bounds the query parameter "after", a delivery's id.
const maxDeliveryCursor = 200

// listDeliveries is GET /api/v1/admin/deliveries: one page of the
// deliveries in one state (pending unless "state" names another), oldest
// first, filtered by channel and webhook endpoint, after the cursor
// "after" (the next_cursor of the page before). A parameter that is not
// one of these, or has no such value, is 422 request_contract naming it.
func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request, who engine.Principal) error {
	f, err := deliveryFilter(r)
	if err != nil {
		return err
	}
	page, err := s.eng.Deliveries(r.Context(), who, f)
	if err != nil {
		return err
	}
	if page.Deliveries == nil {
		page.Deliveries = []engine.Delivery{}
	}
	return writeJSON(w, http.StatusOK, api.DeliveryPage{Deliveries: page.Deliveries, NextCursor: page.Next})
}

// deliveryFilter reads the query of the delivery view.
func deliveryFilter(r *http.Request) (engine.DeliveryFilter, error) {
	q, err := queryOf(r, api.QueryState, api.QueryChannel, api.QueryEndpoint, api.QueryAfter, api.QueryLimit)
	if err != nil {
		return engine.DeliveryFilter{}, err
	}
	f := engine.DeliveryFilter{State: engine.DeliveryState(q.Get(api.QueryState)), Channel: q.Get(api.QueryChannel),
		Endpoint: q.Get(api.QueryEndpoint), After: q.Get(api.QueryAfter)}
	bad := func(format string, args ...any) (engine.DeliveryFilter, error) {
		return engine.DeliveryFilter{}, engine.Errorf(engine.CodeRequestContract, format, args...)
	}
	switch {
	case f.State != "" && !slices.Contains(engine.DeliveryStates, f.State):
		states := make([]string, len(engine.DeliveryStates))
		for i, st := range engine.DeliveryStates {
			states[i] = string(st)
		}
		return bad("query parameter %q must be one of %s, not %q", api.QueryState, strings.Join(states, ", "), engine.Truncate(string(f.State), 40))
	case f.Channel != "" && !slices.Contains(engine.DeliveryChannels, f.Channel):
		return bad("query parameter %q must be one of %s, not %q", api.QueryChannel, strings.Join(engine.DeliveryChannels, ", "), engine.Truncate(f.Channel, 40))
	case f.Endpoint != "" && f.Channel != "" && f.Channel != engine.ChannelWebhook:
		return bad("query parameter %q selects webhook deliveries, which channel %s has none of: leave one of them out", api.QueryEndpoint, f.Channel)
	case len(f.Endpoint) > maxDeliveryCursor:
		return bad("query parameter %q must be a webhook endpoint's id, at most %d characters", api.QueryEndpoint, maxDeliveryCursor)
	case len(f.After) > maxDeliveryCursor:
		return bad("query parameter %q must be the next_cursor of the page before, at most %d characters", api.QueryAfter, maxDeliveryCursor)
	}
	if f.Limit, err = queryLimit(q, engine.MaxDeliveryPage); err != nil {
		return engine.DeliveryFilter{}, err
	}
	return f, nil
}

// retryDelivery is POST /api/v1/admin/deliveries/{id}/retry, the
// idempotent request to send a delivery again (the same event under the
// same id). It is checked like a hold's confirmation (key, media type,
// size, and a body that is exactly the empty object); an unknown delivery
// is 404 unknown_delivery and stores nothing.
func (s *Server) retryDelivery(w http.ResponseWriter, r *http.Request, who engine.Principal) error {
	return s.correctDelivery(w, r, who, s.eng.RetryDelivery)
}

// skipDelivery is POST /api/v1/admin/deliveries/{id}/skip, the idempotent
// request to give a delivery up on purpose, checked as retryDelivery is.
func (s *Server) skipDelivery(w http.ResponseWriter, r *http.Request, who engine.Principal) error {
	return s.correctDelivery(w, r, who, s.eng.SkipDelivery)
}

// correctDelivery serves an operator's correction of the delivery the
// path names, decided by correct.
func (s *Server) correctDelivery(w http.ResponseWriter, r *http.Request, who engine.Principal,
	correct func(context.Context, engine.Principal, engine.OperationKey, string) (engine.Outcome, error)) error {
	return serveOperation(s, w, r, decodeEmptyObject, func(ctx context.Context, key engine.OperationKey, _ struct{}) (engine.Outcome, error) {
		return correct(ctx, who, key, r.PathValue("id"))
	})
}
