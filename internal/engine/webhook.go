package engine

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The event types webhook endpoints subscribe to and receive, as the
// Standard Webhooks body's "type" names them. They are the outbox's event
// types, except that a reservation's confirmation is
// "reservation.created" (WebhookType).
const (
	WebhookReservationCreated   = "reservation.created"
	WebhookReservationCancelled = EventCancelled
	WebhookHoldCreated          = EventHoldCreated
	WebhookHoldConfirmed        = EventHoldConfirmed
	WebhookHoldReleased         = EventHoldReleased
	WebhookHoldExpired          = EventHoldExpired
	WebhookWaitlistOffered      = EventWaitlistOffered
)

// WebhookEventTypes are every type an endpoint may subscribe to.
var WebhookEventTypes = []string{
	WebhookReservationCreated, WebhookReservationCancelled, WebhookHoldCreated, WebhookHoldConfirmed,
	WebhookHoldReleased, WebhookHoldExpired, WebhookWaitlistOffered,
}

// WebhookType returns the webhook type of an outbox event of type
// eventType.
func WebhookType(eventType string) string {
	if eventType == EventReserved {
		return WebhookReservationCreated
	}
	return eventType
}

// WebhookEndpoint is a receiver of webhooks: a URL, the event types it
// gets (every type when EventTypes is empty), and the secret its
// deliveries are signed with. The secret is shown once, when the endpoint
// is added; the store keeps it, because every delivery is signed with it.
type WebhookEndpoint struct {
	ID         string    `json:"id"`
	URL        string    `json:"url"`
	EventTypes []string  `json:"event_types"`
	Secret     string    `json:"secret,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	CreatedBy  string    `json:"created_by"`
}

// Wants reports whether w gets events of outbox type eventType.
func (w WebhookEndpoint) Wants(eventType string) bool {
	return len(w.EventTypes) == 0 || slices.Contains(w.EventTypes, WebhookType(eventType))
}

// MaxWebhookURLLen is the longest endpoint URL.
const MaxWebhookURLLen = 2000

// MaxWebhookEndpoints is how many endpoints a store keeps at most: each
// event is routed to each endpoint in one transaction.
const MaxWebhookEndpoints = 100

// webhookSecretBytes is how many random bytes a signing secret has.
const webhookSecretBytes = 32

// WebhookSecretPrefix starts every signing secret, as Standard Webhooks
// spells it.
const WebhookSecretPrefix = "whsec_"

// ValidateWebhookURL refuses what cannot be an endpoint: not an absolute
// http or https URL, user information in it (secrets belong in the
// signature), a fragment, or plain http to a host other than loopback.
// Errors are CodeRequestContract and name the member "url".
func ValidateWebhookURL(raw string) error {
	bad := func(why string) error {
		return Errorf(CodeRequestContract, "member \"url\" must be an absolute https URL (http only to a loopback address), at most %d characters: %s", MaxWebhookURLLen, why)
	}
	if raw == "" {
		return bad("it is empty")
	}
	if len(raw) > MaxWebhookURLLen {
		return bad(fmt.Sprintf("it has %d", len(raw)))
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return bad("it does not parse")
	case u.Scheme != "https" && u.Scheme != "http":
		return bad(fmt.Sprintf("scheme %q", Truncate(u.Scheme, 20)))
	case u.Host == "" || u.Hostname() == "":
		return bad("it has no host")
	case u.User != nil:
		return bad("it has user information; the signature authenticates each delivery")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return bad("it has a fragment")
	case u.Scheme == "http" && !loopbackHost(u.Hostname()):
		return bad("plain http to a host that is not loopback")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return bad(fmt.Sprintf("port %q is not from 1 to 65535", Truncate(p, 10)))
		}
	}
	return nil
}

// loopbackHost reports whether host is localhost or a loopback address.
func loopbackHost(host string) bool {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sameReceiver returns the form of a valid endpoint URL that two URLs of
// one receiver share: the scheme and host in lower case, without a
// trailing dot or the scheme's default port.
func sameReceiver(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if p := u.Port(); p != "" && !(u.Scheme == "https" && p == "443") && !(u.Scheme == "http" && p == "80") {
		host = net.JoinHostPort(host, p)
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	u.Scheme, u.Host = strings.ToLower(u.Scheme), host
	return u.String()
}

// ValidateWebhookEventTypes refuses an unknown or repeated event type.
func ValidateWebhookEventTypes(types []string) error {
	for i, t := range types {
		if !slices.Contains(WebhookEventTypes, t) {
			return Errorf(CodeRequestContract, "member \"event_types\" may hold only %s: %q is not one", strings.Join(WebhookEventTypes, ", "), Truncate(t, 40))
		}
		if slices.Contains(types[:i], t) {
			return Errorf(CodeRequestContract, "member \"event_types\" names %q twice", t)
		}
	}
	return nil
}

// newWebhookSecret returns a fresh signing secret: WebhookSecretPrefix and
// the standard base64 of webhookSecretBytes random bytes.
func newWebhookSecret() string {
	b := make([]byte, webhookSecretBytes)
	rand.Read(b) // Never fails (crypto/rand).
	return WebhookSecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// AddWebhook adds an endpoint for url getting types (every type when
// empty), if who is an admin. The answer holds the signing secret, which
// no later read shows. A url that has an endpoint already is refused with
// CodeWebhookExists naming it, so that a repeated request (a retry after a
// lost answer) never makes a second endpoint that would get every event
// twice; whoever lost the secret removes the endpoint and adds it again.
func (e *Engine) AddWebhook(ctx context.Context, who Principal, rawURL string, types []string) (WebhookEndpoint, error) {
	if !who.Admin {
		return WebhookEndpoint{}, Errorf(CodeForbidden, "only an admin may add webhook endpoints")
	}
	if err := ValidateWebhookURL(rawURL); err != nil {
		return WebhookEndpoint{}, err
	}
	if err := ValidateWebhookEventTypes(types); err != nil {
		return WebhookEndpoint{}, err
	}
	now := e.utcNow()
	w := WebhookEndpoint{ID: e.newID(now), URL: rawURL, EventTypes: slices.Clone(types), Secret: newWebhookSecret(),
		CreatedAt: now.Truncate(time.Microsecond), CreatedBy: who.Actor}
	if w.EventTypes == nil {
		w.EventTypes = []string{}
	}
	var refusal error
	err := e.store.Update(ctx, func(tx Tx) error {
		refusal = nil
		n := 0
		err := tx.ForEachWebhookEndpoint(func(old WebhookEndpoint) error {
			n++
			if sameReceiver(old.URL) == sameReceiver(rawURL) && refusal == nil {
				refusal = Errorf(CodeWebhookExists, "endpoint %s already delivers to %s; remove it first to add it anew (with a new secret)", old.ID, Truncate(rawURL, 200))
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("read webhook endpoints: %w", err)
		}
		if refusal == nil && n >= MaxWebhookEndpoints {
			refusal = Errorf(CodeRequestContract, "there are %d webhook endpoints already, the most a daemon keeps", n)
		}
		if refusal != nil {
			return nil
		}
		return tx.PutWebhookEndpoint(w)
	})
	if err != nil {
		return WebhookEndpoint{}, fmt.Errorf("add webhook endpoint: %w", err)
	}
	if refusal != nil {
		return WebhookEndpoint{}, refusal
	}
	return w, nil
}

// Webhooks returns every endpoint, oldest first, without its secret, if
// who is an admin.
func (e *Engine) Webhooks(ctx context.Context, who Principal) ([]WebhookEndpoint, error) {
	if !who.Admin {
		return nil, Errorf(CodeForbidden, "only an admin may list webhook endpoints")
	}
	var list []WebhookEndpoint
	err := e.store.View(ctx, func(tx Tx) error {
		list = list[:0]
		return tx.ForEachWebhookEndpoint(func(w WebhookEndpoint) error {
			w.Secret = ""
			list = append(list, w)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list webhook endpoints: %w", err)
	}
	slices.SortFunc(list, func(a, b WebhookEndpoint) int { return strings.Compare(a.ID, b.ID) })
	return list, nil
}

// RemoveWebhook removes endpoint id, if who is an admin; an unknown id is
// CodeUnknownWebhook. Its deliveries stay: those still pending fail at
// their next attempt, and stay in the delivery view.
func (e *Engine) RemoveWebhook(ctx context.Context, who Principal, id string) error {
	if !who.Admin {
		return Errorf(CodeForbidden, "only an admin may remove webhook endpoints")
	}
	if !IsReservationID(id) {
		return Errorf(CodeUnknownWebhook, "no webhook endpoint has id %q", Truncate(id, 80))
	}
	var refusal error
	err := e.store.Update(ctx, func(tx Tx) error {
		_, ok, err := tx.WebhookEndpoint(id)
		if err != nil {
			return fmt.Errorf("look up webhook endpoint %s: %w", id, err)
		}
		refusal = nil
		if !ok {
			refusal = Errorf(CodeUnknownWebhook, "no webhook endpoint has id %q", Truncate(id, 80))
			return nil
		}
		return tx.DeleteWebhookEndpoint(id)
	})
	if err != nil {
		return fmt.Errorf("remove webhook endpoint %s: %w", id, err)
	}
	return refusal
}
