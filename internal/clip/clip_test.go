package clip_test

import (
	"testing"

	"github.com/reserve/reserve/internal/clip"
)

func TestTruncateKeepsCharactersWhole(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"abc", 5, "abc"},
		{"abcdef", 3, "abc…"},
		{"aéb", 2, "a…"}, // é is two bytes: cutting inside it would break UTF-8.
		{"ééé", 3, "é…"},
	} {
		if got := clip.Text(c.in, c.n); got != c.want {
			t.Errorf("Text(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}
