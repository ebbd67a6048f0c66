package delivery

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/version"
)

// The headers of a Standard Webhooks delivery.
const (
	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
)

// answerPrefix is how much of an answer's body a failed attempt quotes;
// drainLimit is how much more is read (and dropped) so that the
// connection can be used again. The rest is never read.
const (
	answerPrefix = 200
	drainLimit   = 4 << 10
)

// maxRetryAfter bounds the Retry-After seconds that are parsed; the
// dispatcher caps the wait at its MaxBackoff anyway.
const maxRetryAfter = 1 << 31

// Webhook is the channel of webhook deliveries: a POST of the event's
// Standard Webhooks body to the endpoint's URL, signed with its secret.
// A 2xx answer delivers it; 408, 429, a 5xx, a timeout or a connection
// that fails is tried again (after Retry-After, when the answer has one);
// any other answer (a redirect, which is not followed, a 410 or another
// 4xx) and a removed endpoint fail the delivery at once.
type Webhook struct {
	client    *http.Client
	now       func() time.Time
	userAgent string
}

// NewWebhook returns the webhook channel. Its webhook-timestamp header
// and the Retry-After dates it reads are by now (nil means time.Now). Its
// connections are kept to DefaultPerDestination idle ones per host; the
// dispatcher bounds each attempt's time.
func NewWebhook(now func() time.Time) *Webhook {
	if now == nil {
		now = time.Now
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = DefaultPerDestination
	t.MaxResponseHeaderBytes = 64 << 10
	return &Webhook{
		client: &http.Client{Transport: t, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // A redirect is an answer that does not deliver.
		}},
		now:       now,
		userAgent: "reserved/" + version.String() + " (webhooks)",
	}
}

// webhookBody is the JSON body of a webhook delivery.
type webhookBody struct {
	Type      string      `json:"type"`
	Timestamp string      `json:"timestamp"`
	Data      WebhookData `json:"data"`
}

// WebhookData is the "data" member of a webhook's body: the ids of the
// reservation and the hold the event is about (whichever it has), its
// workshop and quantity, the actor whose reservation or hold it is, and
// the operation key of the request that caused it (none for a hold's
// expiry, which nobody asked for).
type WebhookData struct {
	ReservationID string `json:"reservation_id,omitempty"`
	HoldID        string `json:"hold_id,omitempty"`
	Workshop      string `json:"workshop"`
	Quantity      int    `json:"quantity"`
	Actor         string `json:"actor"`
	Operation     string `json:"operation,omitempty"`
}

// WebhookBody returns the body every attempt of a webhook delivery of ev
// sends: {"type","timestamp","data"}, built from the event's payload (as
// its store kept it, or from its members), so that it is the same bytes
// every time.
func WebhookBody(ev engine.Event) ([]byte, error) {
	raw, err := ev.Payload()
	if err != nil {
		return nil, fmt.Errorf("event %s: %w", ev.ID, err)
	}
	var p engine.EventPayload
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("event %s: its payload does not decode: %w", ev.ID, err)
	}
	owner := p.Owner
	if owner == "" {
		owner = p.Actor
	}
	b, err := json.Marshal(webhookBody{
		Type:      engine.WebhookType(ev.Type),
		Timestamp: ev.CreatedAt.UTC().Format(time.RFC3339Nano),
		Data: WebhookData{ReservationID: p.ReservationID, HoldID: p.HoldID, Workshop: p.Workshop, Quantity: p.Quantity,
			Actor: owner, Operation: string(p.Operation)},
	})
	if err != nil {
		return nil, fmt.Errorf("event %s: %w", ev.ID, err)
	}
	return b, nil
}

// Sign returns the webhook-signature header of a delivery: "v1," and the
// standard base64 of the HMAC-SHA256, keyed with the secret's bytes (the
// base64 after "whsec_"), of "<id>.<timestamp>.<body>".
func Sign(secret, id string, timestamp int64, body []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, engine.WebhookSecretPrefix))
	if err != nil {
		return "", fmt.Errorf("the signing secret is not %s and base64: %w", engine.WebhookSecretPrefix, err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + strconv.FormatInt(timestamp, 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

// Send makes one attempt of a webhook delivery.
func (w *Webhook) Send(ctx context.Context, job engine.DeliveryJob) Result {
	if !job.EndpointFound {
		return Result{Permanent: true, Err: fmt.Sprintf("webhook endpoint %s was removed", job.Delivery.Endpoint)}
	}
	body, err := WebhookBody(job.Event)
	if err != nil {
		return Result{Permanent: true, Err: err.Error()}
	}
	now := w.now()
	sig, err := Sign(job.Endpoint.Secret, job.Event.ID, now.Unix(), body)
	if err != nil {
		return Result{Permanent: true, Err: fmt.Sprintf("webhook endpoint %s: %v", job.Endpoint.ID, err)}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, job.Endpoint.URL, bytes.NewReader(body))
	if err != nil {
		return Result{Permanent: true, Err: fmt.Sprintf("webhook endpoint %s: %v", job.Endpoint.ID, err)}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", w.userAgent)
	req.Header.Set(HeaderWebhookID, job.Event.ID)
	req.Header.Set(HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(HeaderWebhookSignature, sig)
	resp, err := w.client.Do(req)
	if err != nil {
		// The URL is left out: the delivery names its endpoint, and a
		// URL may carry a credential in its query.
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err
		}
		return Result{Err: err.Error()}
	}
	defer resp.Body.Close()
	return judge(resp, w.now())
}

// judge reads what an answer means for the delivery, quoting the start
// of its body when it did not deliver.
func judge(resp *http.Response, now time.Time) Result {
	prefix, _ := io.ReadAll(io.LimitReader(resp.Body, answerPrefix))
	io.Copy(io.Discard, io.LimitReader(resp.Body, drainLimit))
	r := Result{Status: resp.StatusCode}
	code := resp.StatusCode
	switch {
	case code >= 200 && code <= 299:
		r.Delivered = true
		return r
	case code == http.StatusRequestTimeout, code == http.StatusTooManyRequests, code >= 500:
		r.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), now)
	case code >= 300 && code <= 399:
		r.Permanent = true
		r.Err = fmt.Sprintf("answered %s to %s (redirects are not followed: give the endpoint the URL that answers)", resp.Status, resp.Header.Get("Location"))
		return r
	default:
		r.Permanent = true
	}
	r.Err = "answered " + resp.Status
	if text := quote(prefix); text != "" {
		r.Err += ": " + text
	}
	return r
}

// quote returns the printable start of an answer's body, on one line.
func quote(b []byte) string {
	return strings.Join(strings.Fields(strings.ToValidUTF8(string(b), "")), " ")
}

// retryAfter returns the wait a Retry-After header asks for, in seconds
// or as an HTTP date, and 0 when there is none or it does not parse.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseUint(v, 10, 64); err == nil {
		return time.Duration(min(s, maxRetryAfter)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}
