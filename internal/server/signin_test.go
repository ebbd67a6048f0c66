package server_test

import (
	"net/http"
	"net/mail"
	"strings"
	"sync"
	"testing"

	"github.com/reserve/reserve/internal/api"
	rmail "github.com/reserve/reserve/internal/mail"
	"github.com/reserve/reserve/internal/server"
	"github.com/reserve/reserve/internal/server/servertest"
)

// fullQueue is a server.Mailer whose queue is always full.
type fullQueue struct{}

func (fullQueue) Enqueue(rmail.Message) error { return rmail.ErrQueueFull }

// A sign-in link that cannot be queued is not answered 202: the request
// gets 429 too_many_requests with a Retry-After, so nobody waits for a mail
// that will not come.
func TestEmailSignInWithAFullMailQueue(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, servertest.Options{EmailSignIn: &server.EmailSignIn{
		Policy: mustEmailPolicy(t, "open"), Mailer: fullQueue{}, From: mail.Address{Address: "reserve@example.org"},
	}})
	resp, body := send(t, h, jsonCall(viaNoToken, http.MethodPost, api.PathSignInEmail, "", `{"email":"ada@example.org"}`))
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "60" || !strings.Contains(string(body), api.CodeTooManyRequests) {
		t.Fatalf("sign-in with a full mail queue: %d, Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
}

// Without sign-in by email the route answers 404 not_found and the
// methods are none.
func TestEmailSignInOff(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, servertest.Options{})
	resp, body := send(t, h, jsonCall(viaNoToken, http.MethodPost, api.PathSignInEmail, "", `{"email":"ada@example.org"}`))
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "--email-sign-in=off") {
		t.Errorf("sign-in by email when off: %d %s", resp.StatusCode, body)
	}
	resp, body = send(t, h, call{via: viaNoToken, method: http.MethodGet, path: api.PathSignIn})
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != `{"methods":["link"]}` {
		t.Errorf("sign-in methods when off: %d %s", resp.StatusCode, body)
	}
}

// recordingMailer is a server.Mailer that keeps what it is given.
type recordingMailer struct {
	mu   sync.Mutex
	sent []rmail.Message
}

func (m *recordingMailer) Enqueue(msg rmail.Message) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sent = append(m.sent, msg)
	return nil
}

// The limit per address counts the mailbox, not its spelling: the
// sub-addresses of a mailbox (ada+1@, ada+2@, …) share the limit of
// ada@, so nobody floods a mailbox with links by naming it anew each time.
func TestEmailSignInLimitCountsSubAddresses(t *testing.T) {
	t.Parallel()
	m := &recordingMailer{}
	h := servertest.Start(t, servertest.Options{EmailSignIn: &server.EmailSignIn{
		Policy: mustEmailPolicy(t, "open"), Mailer: m, From: mail.Address{Address: "reserve@example.org"},
	}})
	for i, addr := range []string{"ada@example.org", "ada+1@example.org", "ADA+2@example.org", "ada+3@example.org"} {
		resp, body := send(t, h, jsonCall(viaNoToken, http.MethodPost, api.PathSignInEmail, "", `{"email":"`+addr+`"}`))
		want := http.StatusAccepted
		if i == server.DefaultSignInPerAddress {
			want = http.StatusTooManyRequests
		}
		if resp.StatusCode != want {
			t.Fatalf("sign-in link %d for %s: %d %s, want %d", i+1, addr, resp.StatusCode, body, want)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.sent) != server.DefaultSignInPerAddress {
		t.Fatalf("%d mails went to one mailbox, want %d", len(m.sent), server.DefaultSignInPerAddress)
	}
}
