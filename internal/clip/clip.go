// Package clip shortens text that a message quotes, such as client input
// in an error, so that a message stays short whatever it quotes.
//
// It must not import any package of reserve.
package clip

import "unicode/utf8"

// Text shortens s to at most n bytes, cut at a character boundary and
// marked with "…".
func Text(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
