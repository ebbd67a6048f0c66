package engine_test

import (
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/engine"
)

func TestNormalizeEmail(t *testing.T) {
	for in, want := range map[string]string{
		"ada@example.org":          "ada@example.org",
		"Ada.Lovelace@Example.ORG": "ada.lovelace@example.org",
		"a+tag@mail.example.org":   "a+tag@mail.example.org",
		strings.Repeat("a", 64) + "@" + strings.Repeat("b", 185) + ".org": strings.Repeat("a", 64) + "@" + strings.Repeat("b", 185) + ".org",
	} {
		if got, err := engine.NormalizeEmail(in); err != nil || got != want {
			t.Errorf("NormalizeEmail(%q) = %q, %v, want %q", in, got, err, want)
		}
	}
	for _, in := range []string{
		"", "ada", "ada@", "@example.org", "ada@localhost", "Ada <ada@example.org>", "<ada@example.org>",
		"ada@example.org, bob@example.org", " ada@example.org", "ada@example.org\r\nBcc: x@y.org",
		strings.Repeat("a", 64) + "@" + strings.Repeat("b", 186) + ".org", // 255 bytes
	} {
		if got, err := engine.NormalizeEmail(in); engine.ErrorCode(err) != engine.CodeRequestContract {
			t.Errorf("NormalizeEmail(%q) = %q, %v, want %s", in, got, err, engine.CodeRequestContract)
		}
	}
}

func TestEmailActorName(t *testing.T) {
	for in, want := range map[string]string{
		"ada@example.org":                  "ada",
		"Ada.Lovelace@example.org":         "ada-lovelace",
		"ada+reserve@example.org":          "ada",
		"j@example.org":                    "mail-j",
		"42@example.org":                   "mail-42",
		"_x_@example.org":                  "mail-_x_",
		"...@example.org":                  "mail",
		"o'brien--x@example.org":           "o-brien-x",
		strings.Repeat("z", 60) + "@x.org": strings.Repeat("z", 41),
		// A local part never passes for a Unix socket peer's actor.
		"unix-root@evil.example":   "mail-unix-root",
		"Unix.Root@evil.example":   "mail-unix-root",
		"uid-0@evil.example":       "mail-uid-0",
		"unix-root+x@evil.example": "mail-unix-root",
	} {
		got := engine.EmailActorName(in)
		if got != want {
			t.Errorf("EmailActorName(%q) = %q, want %q", in, got, want)
		}
		if err := engine.ValidateActor(got); err != nil {
			t.Errorf("EmailActorName(%q) = %q: %v", in, got, err)
		}
	}
}
