package client_test

import (
	"testing"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
)

// TestRefusalOfAValidKeyIsUndecided: a daemon of a version from before
// UUIDv7 keys (one still running during a rolling upgrade on PostgreSQL,
// next to upgraded daemons on the same database) refuses a retry under a
// UUIDv7 key with 400 invalid_idempotency_key, although an upgraded daemon
// may have decided the first send. Every Go client checks its keys before
// it sends them, so that refusal says only that this daemon does not know
// the key's form, never that the operation had no effect: it must leave
// the operation undecided, to be sent again with the same key. Settled as
// a refusal, reservectl reports "had no effect" and starts the next intent
// under a new key: a second reservation.
func TestRefusalOfAValidKeyIsUndecided(t *testing.T) {
	const key = "01a237d9-dbc5-766b-8414-4427cb6588b7"
	if !engine.IsOperationKey(key) {
		t.Fatalf("%s is not an operation key", key)
	}
	// The body of reserved of schema version 11 (commit f419f9b), as it
	// answered this key.
	body := `{"type":"about:blank","title":"Bad Request","status":400,"code":"invalid_idempotency_key","detail":"Idempotency-Key \"` + key +
		`\" is not a lowercase canonical UUIDv4 (xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx)"}`
	r := client.Classify(client.Reserving(engine.Request{Workshop: "go-basics", Quantity: 1}),
		client.Reply{Status: 400, ContentType: api.MediaProblem, Body: []byte(body)})
	if r.Problem == nil || r.Problem.Code != engine.CodeInvalidIdempotencyKey {
		t.Fatalf("Classify = %+v, want the problem", r)
	}
	if r.Decided {
		t.Error("a 400 invalid_idempotency_key to a valid key settles the operation as refused")
	}
	if !client.Undecided(400, r.Problem) {
		t.Error("Undecided(400, invalid_idempotency_key) = false")
	}
}
