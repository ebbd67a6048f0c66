// Package delivery sends the deliveries the engine routes from its events:
// Standard Webhooks POSTs to webhook endpoints, and mails to the people the
// events are about. It claims due deliveries, sends each through its
// channel, and reports each attempt back to the engine, which keeps every
// delivery (pending, delivered, failed or skipped) for the delivery view.
//
// It may import the engine and the mail transport; it must not import the
// server, the stores or any command tree.
package delivery

import (
	"context"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// Channel sends one claimed delivery once. Every attempt of a delivery
// sends the same thing under the same id (the webhook-id, the
// Message-ID), so that a receiver that deduplicates by it sees each event
// once however often it is sent.
type Channel interface {
	Send(ctx context.Context, job engine.DeliveryJob) Result
}

// Result is how one attempt went, as a channel judges it.
type Result struct {
	// Delivered is set when the receiver took it (a 2xx answer, a mail
	// the SMTP server accepted).
	Delivered bool
	// Permanent is set when sending it again cannot succeed (another 4xx,
	// a 5xx SMTP reply, a removed endpoint): the delivery fails at once.
	Permanent bool
	// Status is the HTTP status or SMTP reply code, 0 when there was
	// none (a connection that failed).
	Status int
	// Err says what went wrong, for the delivery view and the log.
	Err string
	// RetryAfter is the least wait the receiver asked for (Retry-After),
	// 0 when it asked for none.
	RetryAfter time.Duration
}
