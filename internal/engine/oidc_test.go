package engine_test

import (
	"testing"

	"github.com/reserve/reserve/internal/engine"
)

func TestFitActorName(t *testing.T) {
	for in, want := range map[string]string{
		"alice":                   "alice",
		"Alice.Smith@Example.org": "alice-smith-example-org",
		"  Bob  ":                 "bob",
		"2fast":                   "fast",
		"__x":                     "x-fallback",
		"Jürgen Groß":             "j-rgen-gro",
		"unix-root":               "oidc-unix-root",
		"uid-0":                   "oidc-uid-0",
		"":                        "x-fallback",
		"ünï":                     "x-fallback",
		"a":                       "x-fallback",
		"snake_case-ok":           "snake_case-ok",
		"a-very-long-preferred-username-that-goes-on-and-on": "a-very-long-preferred-username-that-goes",
		"abcdefghijklmnopqrstuvwxyzabcdefghijklmn.xyz":       "abcdefghijklmnopqrstuvwxyzabcdefghijklmn",
	} {
		got := engine.FitActorName(in, "x-fallback")
		if got != want {
			t.Errorf("FitActorName(%q) = %q, want %q", in, got, want)
		}
		if err := engine.ValidateActor(got); err != nil {
			t.Errorf("FitActorName(%q) = %q: %v", in, got, err)
		}
	}
}

func TestOIDCSubjectSeparatesIssuerAndSub(t *testing.T) {
	a := engine.OIDCSubject("https://a.example/x", "1")
	b := engine.OIDCSubject("https://a.example", "/x 1")
	if a == b || a.Kind != engine.SubjectOIDC {
		t.Fatalf("subjects %q and %q", a, b)
	}
}
