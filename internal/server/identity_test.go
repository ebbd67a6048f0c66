package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/user"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server/servertest"
)

// userDatabase is a user database whose answer for every uid a test sets:
// a name, no such user, or a failure. It counts its lookups.
type userDatabase struct {
	mu      sync.Mutex
	name    string
	err     error
	lookups int
}

func (d *userDatabase) set(name string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.name, d.err = name, err
}

func (d *userDatabase) lookup(uid uint32) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lookups++
	return d.name, d.err
}

func (d *userDatabase) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lookups
}

// onNewConnection sends one request on the socket over a connection of its
// own, so that nothing the server keeps per connection carries over.
func onNewConnection(t *testing.T, h *servertest.Harness, method, path, key, body string) (*http.Response, []byte) {
	t.Helper()
	c := &client.Client{Socket: h.Socket}
	header := http.Header{}
	if key != "" {
		header.Set(api.HeaderIdempotencyKey, key)
	}
	var raw []byte
	if body != "" {
		raw = []byte(body)
	}
	resp, data, err := c.Do(context.Background(), method, path, header, raw)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp, data
}

func whoAmI(t *testing.T, h *servertest.Harness) engine.Principal {
	t.Helper()
	resp, body := onNewConnection(t, h, http.MethodGet, api.PathWhoAmI, "", "")
	var who engine.Principal
	if err := json.Unmarshal(body, &who); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("whoami = %d %s", resp.StatusCode, body)
	}
	return who
}

// TestSocketActorSurvivesRenameAndRemoval: the socket peer's uid is bound
// to its actor on its first request; after its account is renamed, removed,
// or while the user database fails, a new connection is the same actor, and
// the retry of its reservation with the same key replays the first answer
// (one reservation). The user database is asked once.
func TestSocketActorSurvivesRenameAndRemoval(t *testing.T) {
	users := &userDatabase{name: "ghost"}
	h := servertest.Start(t, servertest.Options{LookupUsername: users.lookup, CheckOpenAPI: true})
	key := uuid.NewString()
	reserve := `{"workshop":"` + servertest.Workshop + `","quantity":1}`
	resp, first := onNewConnection(t, h, http.MethodPost, api.PathReservations, key, reserve)
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("Idempotent-Replayed") != "false" {
		t.Fatalf("first reservation = %d %s", resp.StatusCode, first)
	}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"ghost2", nil}, // Renamed.
		{"", user.UnknownUserIdError(os.Getuid())},             // Removed.
		{"", errors.New("sssd: the responder is not running")}, // Failing.
	} {
		users.set(tc.name, tc.err)
		if who := whoAmI(t, h); who.Actor != "unix-ghost" {
			t.Errorf("whoami after the user database says %q, %v = %+v, want unix-ghost", tc.name, tc.err, who)
		}
		resp, again := onNewConnection(t, h, http.MethodPost, api.PathReservations, key, reserve)
		if resp.StatusCode != http.StatusCreated || resp.Header.Get("Idempotent-Replayed") != "true" || string(again) != string(first) {
			t.Errorf("retry after the user database says %q, %v = %d replayed %s: %s; want the first answer replayed", tc.name, tc.err, resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), again)
		}
	}
	if reservations, receipts := h.Counts(t); reservations != 1 || receipts != 1 {
		t.Errorf("store holds %d reservations and %d receipts, want 1 and 1", reservations, receipts)
	}
	if n := users.count(); n != 1 {
		t.Errorf("the user database was asked %d times, want once", n)
	}
}

// TestSocketIdentityUnavailable: while the user database fails for a uid
// that has no actor yet, every request that needs the actor is answered
// 503 identity_unavailable with Retry-After, without the cause, and stores
// nothing, not even a binding; once it answers, the retry with the same
// key is decided, and its next retry replayed.
func TestSocketIdentityUnavailable(t *testing.T) {
	users := &userDatabase{err: errors.New("ldap: server unreachable")}
	h := servertest.Start(t, servertest.Options{LookupUsername: users.lookup, CheckOpenAPI: true})
	key := uuid.NewString()
	reserve := `{"workshop":"` + servertest.Workshop + `","quantity":1}`
	for _, rq := range []struct{ method, path, key, body string }{
		{http.MethodPost, api.PathReservations, key, reserve},
		{http.MethodGet, api.PathWhoAmI, "", ""},
	} {
		resp, body := onNewConnection(t, h, rq.method, rq.path, rq.key, rq.body)
		wantProblem(t, resp, body, http.StatusServiceUnavailable, engine.CodeIdentityUnavailable)
		if got := resp.Header.Get("Retry-After"); got != "1" {
			t.Errorf("%s %s: Retry-After %q, want 1", rq.method, rq.path, got)
		}
		if strings.Contains(string(body), "ldap") {
			t.Errorf("%s %s: the answer shows the cause: %s", rq.method, rq.path, body)
		}
	}
	if reservations, receipts := h.Counts(t); reservations != 0 || receipts != 0 {
		t.Fatalf("store holds %d reservations and %d receipts after identity_unavailable, want none", reservations, receipts)
	}
	err := h.Store.View(context.Background(), func(tx engine.Tx) error {
		return tx.ForEachBinding(func(b engine.Binding) error { return errors.New("binding " + b.Actor) })
	})
	if err != nil {
		t.Fatalf("a failing user database bound the uid: %v", err)
	}
	if !strings.Contains(h.Logs.String(), "ldap: server unreachable") {
		t.Errorf("the request log lacks the cause:\n%s", h.Logs)
	}

	users.set("ghost", nil)
	resp, first := onNewConnection(t, h, http.MethodPost, api.PathReservations, key, reserve)
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("Idempotent-Replayed") != "false" {
		t.Fatalf("retry once the user database answers = %d %s", resp.StatusCode, first)
	}
	resp, again := onNewConnection(t, h, http.MethodPost, api.PathReservations, key, reserve)
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("Idempotent-Replayed") != "true" || string(again) != string(first) {
		t.Errorf("second retry = %d %s, want the first answer replayed", resp.StatusCode, again)
	}
	if who := whoAmI(t, h); who.Actor != "unix-ghost" {
		t.Errorf("whoami = %+v, want unix-ghost", who)
	}
}
