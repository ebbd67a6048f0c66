package enginetest

import (
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// testEmailCodeBindsOnRedeem: a sign-in code mailed to an address binds
// nothing until it is redeemed; redeeming it binds the address (subject
// kind email, id the lowercased address) to an actor named after its local
// part, numbered when another subject holds the name, opens a session of
// that actor, and works once. The next code of the same address opens a
// session of the same actor. An expired code binds nothing.
func testEmailCodeBindsOnRedeem(t *testing.T, h *harness) {
	// A uid subject already holds "ada".
	if _, err := h.eng.ActorOf(h.ctx, engine.UIDSubject(4242), func() (string, error) { return "ada", nil }); err != nil {
		t.Fatal(err)
	}
	code, expires, err := h.eng.CreateEmailCode(h.ctx, "ada@example.org")
	if err != nil {
		t.Fatal(err)
	}
	if want := h.now().UTC().Add(engine.EmailCodeTTL); !expires.Equal(want) {
		t.Errorf("email code expires at %v, want %v", expires, want)
	}
	if n := len(h.bindings()); n != 1 {
		t.Fatalf("%d bindings after mailing a code, want only the uid's: an address that never opens its link gets no actor", n)
	}
	session, who, _, err := h.eng.RedeemLoginCode(h.ctx, code, time.Hour)
	if err != nil {
		t.Fatalf("redeem an email code: %v", err)
	}
	if who.Actor != "ada-2" || who.Admin {
		t.Fatalf("email code opened a session of %+v, want ada-2 (ada is another subject's), not an admin", who)
	}
	if p, err := h.eng.SessionPrincipal(h.ctx, session); err != nil || p.Actor != "ada-2" {
		t.Fatalf("session of the email code = %+v, %v", p, err)
	}
	var found engine.Binding
	for _, b := range h.bindings() {
		if b.Kind == engine.SubjectEmail {
			found = b
		}
	}
	if found.Subject != "ada@example.org" || found.Actor != "ada-2" {
		t.Fatalf("email binding = %+v, want ada@example.org bound to ada-2", found)
	}
	if email, err := h.eng.EmailOf(h.ctx, "ada-2"); err != nil || email != "ada@example.org" {
		t.Fatalf("EmailOf(ada-2) = %q, %v", email, err)
	}
	if email, err := h.eng.EmailOf(h.ctx, "ada"); err != nil || email != "" {
		t.Fatalf("EmailOf(ada), a uid's actor = %q, %v, want none", email, err)
	}
	// Once only.
	_, _, _, err = h.eng.RedeemLoginCode(h.ctx, code, time.Hour)
	wantCode(t, err, engine.CodeUnauthenticated)
	// The same address again: the same actor.
	code2, _, err := h.eng.CreateEmailCode(h.ctx, "ada@example.org")
	if err != nil {
		t.Fatal(err)
	}
	if _, who, _, err := h.eng.RedeemLoginCode(h.ctx, code2, time.Hour); err != nil || who.Actor != "ada-2" {
		t.Fatalf("second email code of the address opened %+v, %v, want ada-2", who, err)
	}
	// An expired code opens nothing and binds nothing.
	code3, _, err := h.eng.CreateEmailCode(h.ctx, "late@example.org")
	if err != nil {
		t.Fatal(err)
	}
	h.advance(engine.EmailCodeTTL)
	_, _, _, err = h.eng.RedeemLoginCode(h.ctx, code3, time.Hour)
	wantCode(t, err, engine.CodeUnauthenticated)
	if n := len(h.bindings()); n != 2 {
		t.Fatalf("%d bindings after an expired email code, want 2", n)
	}
	// A bad address stores nothing.
	_, _, err = h.eng.CreateEmailCode(h.ctx, "Ada <ada@example.org>")
	wantCode(t, err, engine.CodeRequestContract)
}
