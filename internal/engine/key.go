package engine

import "github.com/reserve/reserve/internal/clip"

// OperationKey is the client's random UUIDv4 for one business intent, in its
// lowercase canonical form. The zero value is not a valid key.
type OperationKey string

// IsOperationKey reports whether k has the form of an operation key: a
// lowercase canonical UUIDv4, without the quotes a header may add.
func IsOperationKey(k OperationKey) bool { return isCanonicalUUIDv4(string(k)) }

// isCanonicalUUIDv4 reports whether s matches
// ^[a-f0-9]{8}-[a-f0-9]{4}-4[a-f0-9]{3}-[89ab][a-f0-9]{3}-[a-f0-9]{12}$.
func isCanonicalUUIDv4(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		case 14:
			if c != '4' {
				return false
			}
		case 19:
			if c != '8' && c != '9' && c != 'a' && c != 'b' {
				return false
			}
		default:
			if !isLowerHex(c) {
				return false
			}
		}
	}
	return true
}

func isLowerHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f')
}

// truncate is Truncate, for the package's own messages.
func truncate(s string, n int) string { return Truncate(s, n) }

// Truncate shortens s to at most n bytes, cut at a character boundary and
// marked with "…", for quoting client input in messages (clip.Text).
func Truncate(s string, n int) string { return clip.Text(s, n) }
