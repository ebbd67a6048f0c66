package enginetest

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// testOIDCSubjects: an OpenID Connect subject is its issuer and its sub,
// nothing else. The same sub at two issuers is two actors; one subject
// keeps its actor when it later wants another name; a name that has
// history but no binding (an actor an admin's token named) is not given
// to an OIDC subject, which gets the next number instead; and the subject
// kind is what the actor's binding names.
func testOIDCSubjects(t *testing.T, h *harness) {
	h.workshop("ws", 5, 1)
	earlier := h.mustReserve("carol", newKey(), "ws", 1)
	if earlier.Answer.Status != engine.StatusReserved {
		t.Fatalf("history of carol: %s", earlier.Answer.JSON())
	}
	var calls atomic.Int32
	a := engine.OIDCSubject("https://idp.example", "248289761001")
	b := engine.OIDCSubject("https://other.example", "248289761001")
	spaced := engine.OIDCSubject("https://idp.example 2", "x")
	for _, c := range []struct {
		subject      engine.Subject
		wanted, want string
	}{
		{a, "alice", "alice"},
		{b, "alice", "alice-2"},
		{a, "alice-renamed", "alice"},
		{engine.OIDCSubject("https://idp.example", "7"), "carol", "carol-2"},
		{spaced, "dave", "dave"},
	} {
		if got := h.mustActorOf(h.eng, c.subject, name(c.wanted, &calls)); got != c.want {
			t.Fatalf("%q wanting %s is bound to %s, want %s", c.subject.ID, c.wanted, got, c.want)
		}
	}
	for actor, want := range map[string]string{"alice": engine.SubjectOIDC, "alice-2": engine.SubjectOIDC, "carol": "", "nobody": ""} {
		got, err := h.eng.SubjectKindOf(h.ctx, actor)
		if err != nil || got != want {
			t.Errorf("SubjectKindOf(%s) = %q, %v; want %q", actor, got, err, want)
		}
	}
}

// testBindingSkipsTokenActors: an actor that an admin named for a token or
// a login link (a bearer subject, its actor fixed when it was made) is
// held by it even before it has any history: a person who signs in by
// email or through an identity provider and wants that very name gets a
// numbered one, and does not share the token's actor, whose later
// reservations would be theirs to see and cancel.
func testBindingSkipsTokenActors(t *testing.T, h *harness) {
	if _, err := h.eng.CreateToken(h.ctx, "billing", false); err != nil {
		t.Fatal(err)
	}
	link, _, err := h.eng.CreateLoginCode(h.ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, who, _, err := h.eng.RedeemLoginCode(h.ctx, link, time.Hour); err != nil || who.Actor != "alice" {
		t.Fatalf("redeem alice's login link: %+v, %v", who, err)
	}
	if _, _, err := h.eng.CreateLoginCode(h.ctx, "root"); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	if got := h.mustActorOf(h.eng, engine.OIDCSubject("https://idp.example", "1"), name("billing", &calls)); got != "billing-2" {
		t.Errorf("an OIDC subject wanting billing, an API token's actor, is bound to %s, want billing-2", got)
	}
	if got := h.mustActorOf(h.eng, engine.OIDCSubject("https://idp.example", "2"), name("root", &calls)); got != "root-2" {
		t.Errorf("an OIDC subject wanting root, a login link's actor, is bound to %s, want root-2", got)
	}
	code, _, err := h.eng.CreateEmailCode(h.ctx, "alice@example.org")
	if err != nil {
		t.Fatal(err)
	}
	if _, who, _, err := h.eng.RedeemLoginCode(h.ctx, code, time.Hour); err != nil || who.Actor != "alice-2" {
		t.Errorf("alice@example.org signed in as %+v, %v; want alice-2 (alice is a browser session's actor)", who, err)
	}
}
