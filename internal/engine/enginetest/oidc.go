package enginetest

import (
	"sync/atomic"
	"testing"

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
