package engine

import (
	"fmt"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/clip"
)

// OperationKey is the client's UUID for one business intent, in its
// lowercase canonical form: a random UUIDv4, or a UUIDv7, whose first 48
// bits are the time it was made in Unix milliseconds and whose other bits
// are random. Both are equally valid; a time-ordered key lets a store keep
// the receipts of one moment next to each other. The zero value is not a
// valid key.
type OperationKey string

// KeyForm is how an operation key must be written, for error messages.
const KeyForm = "a lowercase canonical UUIDv4 or UUIDv7 (xxxxxxxx-xxxx-Vxxx-[89ab]xxx-xxxxxxxxxxxx, V = 4 or 7)"

// IsOperationKey reports whether k has the form of an operation key: a
// lowercase canonical UUIDv4 or UUIDv7, without the quotes a header may add.
func IsOperationKey(k OperationKey) bool { return keyVersion(string(k)) != 0 }

// IsTimeOrdered reports whether k is a UUIDv7 operation key, whose text
// sorts by the millisecond it was made.
func (k OperationKey) IsTimeOrdered() bool { return keyVersion(string(k)) == 7 }

// NewOperationKey returns a fresh operation key for a new intent: a UUIDv7,
// so that the receipts of keys made at nearly the same time are stored next
// to each other.
func NewOperationKey() (OperationKey, error) {
	u, err := uuid.NewV7()
	if err != nil {
		return "", fmt.Errorf("make an operation key: %w", err)
	}
	return OperationKey(u.String()), nil
}

// keyVersion returns 4 or 7 if s matches
// ^[a-f0-9]{8}-[a-f0-9]{4}-[47][a-f0-9]{3}-[89ab][a-f0-9]{3}-[a-f0-9]{12}$,
// and 0 otherwise.
func keyVersion(s string) int {
	if len(s) != 36 {
		return 0
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return 0
			}
		case 14:
			if c != '4' && c != '7' {
				return 0
			}
		case 19:
			if c != '8' && c != '9' && c != 'a' && c != 'b' {
				return 0
			}
		default:
			if !isLowerHex(c) {
				return 0
			}
		}
	}
	return int(s[14] - '0')
}

func isLowerHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f')
}

// truncate is Truncate, for the package's own messages.
func truncate(s string, n int) string { return Truncate(s, n) }

// Truncate shortens s to at most n bytes, cut at a character boundary and
// marked with "…", for quoting client input in messages (clip.Text).
func Truncate(s string, n int) string { return clip.Text(s, n) }
