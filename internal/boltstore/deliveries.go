package boltstore

import (
	"errors"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// errNoDeliveries is the answer of every delivery primitive until this
// store keeps deliveries.
var errNoDeliveries = errors.New("boltstore: this store does not keep webhook endpoints and deliveries yet")

func (t *tx) ForEachUnroutedEvent(fn func(engine.Event) error) error { return nil }
func (t *tx) MarkEventRouted(id string) error                        { return errNoDeliveries }
func (t *tx) WebhookEndpoint(id string) (engine.WebhookEndpoint, bool, error) {
	return engine.WebhookEndpoint{}, false, nil
}
func (t *tx) PutWebhookEndpoint(w engine.WebhookEndpoint) error                  { return errNoDeliveries }
func (t *tx) DeleteWebhookEndpoint(id string) error                              { return errNoDeliveries }
func (t *tx) ForEachWebhookEndpoint(fn func(engine.WebhookEndpoint) error) error { return nil }
func (t *tx) Delivery(id string) (engine.Delivery, bool, error)                  { return engine.Delivery{}, false, nil }
func (t *tx) PutDelivery(d engine.Delivery) error                                { return errNoDeliveries }
func (t *tx) ForEachDueDelivery(through time.Time, fn func(engine.Delivery) error) error {
	return nil
}
func (t *tx) ForEachDeliveryIn(state engine.DeliveryState, after string, fn func(engine.Delivery) error) error {
	return nil
}
