package engine

import "fmt"

// Request is the typed payload of one reservation intent. Exactly these two
// members make up the request contract and the fingerprint.
type Request struct {
	Workshop string `json:"workshop"`
	Quantity int    `json:"quantity"`
	// Waitlist asks to join the workshop's waiting list when too few
	// places are free, or when people wait already, instead of being
	// answered "unavailable". Stores do not keep it: a receipt's
	// fingerprint version says it.
	Waitlist bool `json:"waitlist,omitempty"`
}

// Validate checks a Request built in code (not decoded) against the same
// rules the request contract applies to a decoded one (api.DecodeRequest),
// so every front end refuses the same payloads.
func (r Request) Validate() error {
	if err := ValidateWorkshopID(r.Workshop); err != nil {
		return Errorf(CodeRequestContract, "member \"workshop\" %s", err)
	}
	if r.Quantity < 1 || r.Quantity > MaxQuantity {
		return Errorf(CodeRequestContract, "member \"quantity\" must be an integer from 1 to %d", MaxQuantity)
	}
	return nil
}

// MaxQuantity bounds quantities, capacities and max_quantity so that counter
// arithmetic can never overflow.
const MaxQuantity = 1_000_000_000

// ValidateWorkshopID checks that id matches ^[a-z][a-z0-9-]{1,40}$. The error
// text completes the sentence `member "workshop" …`.
func ValidateWorkshopID(id string) error {
	if !matchName(id, false) {
		return fmt.Errorf("must match ^[a-z][a-z0-9-]{1,40}$, got %q", truncate(id, 50))
	}
	return nil
}

// ValidateActor checks that name matches ^[a-z][a-z0-9_-]{1,40}$.
func ValidateActor(name string) error {
	if !matchName(name, true) {
		return fmt.Errorf("actor names must match ^[a-z][a-z0-9_-]{1,40}$, got %q", truncate(name, 50))
	}
	return nil
}

// matchName matches ^[a-z][a-z0-9-]{1,40}$, with '_' also allowed after the
// first character when underscore is true.
func matchName(s string, underscore bool) bool {
	if len(s) < 2 || len(s) > 41 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		ok := ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') || c == '-' || (underscore && c == '_')
		if !ok {
			return false
		}
	}
	return true
}
